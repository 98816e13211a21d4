"""Workspace.index_generation, set by triggers whenever what a search reads of the workspace changes.

Triggers, not calls in each write path: documents, chunks, records, lineage, the calendar and licenses are
written by ingest, merges, dedup, lineage, release inference, admin edits, licensing and bulk SQL alike, and a
path that forgets a bump would serve a stale cache. Each is one statement-level trigger per table and event
(a transition table holds the changed rows), so a bulk insert of chunks costs one workspace update, not one per
row. The value comes from a sequence, never from a count: a sequence is not rolled back, so a generation seen
inside a transaction that rolls back, or a workspace row created again after a flush, never names other data.
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

CREATE FUNCTION rag_index_generation_bump() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_ARGV[0] = 'record' THEN
        UPDATE rag_workspace SET index_generation = nextval('rag_index_generation')
        WHERE id IN (SELECT r.workspace_id FROM changed JOIN rag_canonicalrecord r ON r.id = changed.record_id);
    ELSIF TG_ARGV[0] = 'source' THEN
        UPDATE rag_workspace SET index_generation = nextval('rag_index_generation')
        WHERE id IN (SELECT s.workspace_id FROM changed JOIN rag_source s ON s.id = changed.source_id);
    ELSE
        UPDATE rag_workspace SET index_generation = nextval('rag_index_generation')
        WHERE id IN (SELECT workspace_id FROM changed);
    END IF;
    RETURN NULL;
END $$;
"""

DROP_FUNCTIONS = """
DROP TRIGGER rag_index_generation_keep ON rag_workspace;
DROP FUNCTION rag_index_generation_keep();
DROP FUNCTION rag_index_generation_bump();
DROP SEQUENCE rag_index_generation;
"""


def _triggers() -> tuple[str, str]:
    create, drop = [], []
    for table, how in TABLES:
        for event, rows in EVENTS:
            name = f"{table}_generation_{event.lower()}"
            create.append(f"CREATE TRIGGER {name} AFTER {event} ON {table} REFERENCING {rows} TABLE AS changed "
                          f"FOR EACH STATEMENT EXECUTE FUNCTION rag_index_generation_bump('{how}');")
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
