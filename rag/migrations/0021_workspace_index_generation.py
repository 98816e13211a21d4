"""Workspace.index_generation, set anew whenever what a search reads of the workspace changes.

Triggers, not calls in each write path: documents, chunks, records, lineage, the calendar and licenses are
written by ingest, merges, dedup, lineage, release inference, admin edits, licensing and bulk SQL alike, and a
path that forgets a bump would serve a stale cache. One statement-level trigger per table and event (a
transition table holds the changed rows) notes the workspace in `rag_index_generation_pending`, once per
transaction; a deferred trigger on that note sets the generation at commit, in the same transaction as the
change. At commit, not at the first write: the workspace row is locked only for the commit's last moment, so
two workers writing one workspace neither queue behind each other for a whole transaction nor deadlock with the
merge's advisory lock. Until then the transaction's own note (invisible to every other) tells rag.index_cache
that its reads must not be kept. The value comes from a sequence, never from a count: a workspace row made
again after a flush never names other data.
"""

from django.db import migrations, models

# (table, how its rows name their workspace): the column itself, or through the row they belong to.
TABLES = [
    ("rag_document", "workspace_id"), ("rag_chunk", "workspace_id"), ("rag_release", "workspace_id"),
    ("rag_documentfamily", "workspace_id"), ("rag_documentrelation", "workspace_id"),
    ("rag_documentsibling", "workspace_id"), ("rag_canonicalrecord", "workspace_id"),
    ("rag_contradiction", "workspace_id"), ("rag_queryexpansion", "workspace_id"), ("rag_source", "workspace_id"),
    ("licensing_license", "workspace_id"), ("rag_chunkvariant", "record"), ("rag_sourcefile", "source"),
]
EVENTS = [("INSERT", "NEW"), ("UPDATE", "NEW"), ("DELETE", "OLD")]

FUNCTIONS = """
CREATE SEQUENCE rag_index_generation;
UPDATE rag_workspace SET index_generation = nextval('rag_index_generation');

-- A new workspace starts at a fresh value; a save that writes back an older one keeps the newer.
CREATE FUNCTION rag_index_generation_keep() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        NEW.index_generation := nextval('rag_index_generation');
    ELSE
        NEW.index_generation := GREATEST(NEW.index_generation, OLD.index_generation);
    END IF;
    RETURN NEW;
END $$;
CREATE TRIGGER rag_index_generation_keep BEFORE INSERT OR UPDATE ON rag_workspace
    FOR EACH ROW EXECUTE FUNCTION rag_index_generation_keep();

-- Rows live only inside the transaction that wrote them: unlogged, keyed by transaction so that two never wait.
CREATE UNLOGGED TABLE rag_index_generation_pending (
    workspace_id bigint NOT NULL,
    xact xid8 NOT NULL DEFAULT pg_current_xact_id(),
    PRIMARY KEY (workspace_id, xact)
);

CREATE FUNCTION rag_index_generation_note() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_ARGV[0] = 'record' THEN
        INSERT INTO rag_index_generation_pending (workspace_id)
        SELECT DISTINCT r.workspace_id FROM changed JOIN rag_canonicalrecord r ON r.id = changed.record_id
        ON CONFLICT DO NOTHING;
    ELSIF TG_ARGV[0] = 'source' THEN
        INSERT INTO rag_index_generation_pending (workspace_id)
        SELECT DISTINCT s.workspace_id FROM changed JOIN rag_source s ON s.id = changed.source_id
        ON CONFLICT DO NOTHING;
    ELSE
        INSERT INTO rag_index_generation_pending (workspace_id)
        SELECT DISTINCT workspace_id FROM changed ON CONFLICT DO NOTHING;
    END IF;
    RETURN NULL;
END $$;

CREATE FUNCTION rag_index_generation_set() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE rag_workspace SET index_generation = nextval('rag_index_generation') WHERE id = NEW.workspace_id;
    DELETE FROM rag_index_generation_pending WHERE workspace_id = NEW.workspace_id AND xact = NEW.xact;
    RETURN NULL;
END $$;
CREATE CONSTRAINT TRIGGER rag_index_generation_set AFTER INSERT ON rag_index_generation_pending
    DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION rag_index_generation_set();
"""

DROP_FUNCTIONS = """
DROP TABLE rag_index_generation_pending;
DROP FUNCTION rag_index_generation_set();
DROP FUNCTION rag_index_generation_note();
DROP TRIGGER rag_index_generation_keep ON rag_workspace;
DROP FUNCTION rag_index_generation_keep();
DROP SEQUENCE rag_index_generation;
"""


def _triggers() -> tuple[str, str]:
    create, drop = [], []
    for table, how in TABLES:
        for event, rows in EVENTS:
            name = f"{table}_generation_{event.lower()}"
            create.append(f"CREATE TRIGGER {name} AFTER {event} ON {table} REFERENCING {rows} TABLE AS changed "
                          f"FOR EACH STATEMENT EXECUTE FUNCTION rag_index_generation_note('{how}');")
            drop.append(f"DROP TRIGGER {name} ON {table};")
    return "\n".join(create), "\n".join(drop)


CREATE_TRIGGERS, DROP_TRIGGERS = _triggers()


class Migration(migrations.Migration):

    dependencies = [
        ("rag", "0020_document_inferred_release"),
        ("licensing", "0005_tier_features_fixed_in_code"),
    ]

    operations = [
        migrations.AddField(
            model_name="workspace",
            name="index_generation",
            field=models.BigIntegerField(default=0, editable=False),
        ),
        migrations.RunSQL(FUNCTIONS, reverse_sql=DROP_FUNCTIONS),
        migrations.RunSQL(CREATE_TRIGGERS, reverse_sql=DROP_TRIGGERS),
    ]
