"""bench_search.py's corpus in the database: the synthetic workspace of SIZE chunks built from real text and
vectors, with families, labels and supersession set in bulk SQL (bench_search.py's docstring says how)."""

from __future__ import annotations

import sys
import time
from datetime import timedelta

import numpy as np

from _search_corpus import build_corpus

DOC_TYPES = ["api", "architecture", "operations", "troubleshooting", "user"]
CHUNKS_PER_DOCUMENT = 10
NEEDLE_EVERY = 100  # one document in a hundred carries the "needle" tag: a 1% filter
FAMILY_SIZE = 3  # versions per family
FAMILY_GROUP_SKIPPED = 4  # one group of FAMILY_SIZE "docs" documents in this many stays out of families
LABEL_MINORS = 5  # labels 1.0-1.4, 2.0-2.4, 3.0-3.4: fifteen version labels in the workspace
RETIRED_EVERY = 7  # one older-member chunk id in seven is retired rather than superseded
LINEAGE_VERSION = "lineage-1"  # in the corpus signature: bump when apply_lineage changes


def _signature(size: int, real: int, corpus_texts: list[str]) -> str:
    import hashlib

    return f"bench {size} {real} " + hashlib.sha256("".join(corpus_texts[:50]).encode()).hexdigest()[:12]


def apply_lineage(workspace) -> None:
    """Families, labels and chunk supersession in bulk (see the module docstring); idempotent."""
    from django.db import connection, transaction

    from rag.releases import version_key
    from rag.models import Chunk, Document, DocumentFamily

    started = time.monotonic()
    chunk_table = Chunk._meta.db_table
    with transaction.atomic():
        DocumentFamily.objects.filter(workspace=workspace).delete()
        Document.objects.filter(workspace=workspace).update(
            family=None, family_position=None, is_latest_version=True, copy_of=None, version_label="",
            version_key="", version_source="")
        Chunk.objects.filter(workspace=workspace).exclude(lineage="", superseded_by=None).update(
            lineage="", superseded_by=None)
        docs = list(Document.objects.filter(workspace=workspace, path__startswith="/bench/docs/")
                    .order_by("path").values_list("pk", "doc_date"))
        groups = []
        for number, start in enumerate(range(0, len(docs) - FAMILY_SIZE + 1, FAMILY_SIZE)):
            if number % FAMILY_GROUP_SKIPPED != FAMILY_GROUP_SKIPPED - 1:
                groups.append(sorted(docs[start:start + FAMILY_SIZE], key=lambda row: row[1]))  # oldest first
        families = DocumentFamily.objects.bulk_create(
            [DocumentFamily(workspace=workspace, name=f"Family {number}") for number in range(len(groups))],
            batch_size=2000)
        updates, older, newest = [], [], []
        for number, (family, members) in enumerate(zip(families, groups)):
            for position, (pk, _doc_date) in enumerate(members):
                label = f"{position + 1}.{number % LABEL_MINORS}"
                updates.append(Document(pk=pk, family_id=family.pk, family_position=position,
                                        is_latest_version=position == len(members) - 1, version_label=label,
                                        version_key=version_key(label), version_source="frontmatter"))
                if position < len(members) - 1:
                    older.append(pk)
                    newest.append(members[-1][0])
        Document.objects.bulk_update(updates, ["family", "family_position", "is_latest_version", "version_label",
                                               "version_key", "version_source"], batch_size=2000)
        with connection.cursor() as cursor:
            cursor.execute(
                f"""UPDATE {chunk_table} c
                    SET lineage = CASE WHEN c.id %% %(every)s = 0 THEN 'retired' ELSE 'superseded' END,
                        superseded_by_id = CASE WHEN c.id %% %(every)s = 0 THEN NULL ELSE
                            (SELECT n.id FROM {chunk_table} n
                             WHERE n.document_id = m.newest AND n.chunk_index = c.chunk_index) END
                    FROM unnest(%(older)s::bigint[], %(newest)s::bigint[]) AS m(older, newest)
                    WHERE c.document_id = m.older""",
                {"every": RETIRED_EVERY, "older": older, "newest": newest})
            # A newest member shorter than an older one: nothing to supersede the extra chunks.
            cursor.execute(f"UPDATE {chunk_table} SET lineage = 'retired' WHERE workspace_id = %s "
                           "AND lineage = 'superseded' AND superseded_by_id IS NULL", [workspace.pk])
            cursor.execute(f"ANALYZE {chunk_table}")
            cursor.execute(f"ANALYZE {Document._meta.db_table}")
    print(f"  version lineage set in {time.monotonic() - started:.0f}s: {len(families)} families, "
          f"{len(older)} older members", file=sys.stderr, flush=True)


def lineage_shares(workspace) -> dict:
    from django.db.models import Count

    from rag.models import Chunk, DocumentFamily

    counts = dict(Chunk.objects.filter(workspace=workspace).values_list("lineage").annotate(n=Count("pk"))
                  .values_list("lineage", "n"))
    total = sum(counts.values())
    return {"superseded_share": counts.get(Chunk.Lineage.SUPERSEDED, 0) / total,
            "retired_share": counts.get(Chunk.Lineage.RETIRED, 0) / total,
            "families": DocumentFamily.objects.filter(workspace=workspace).count()}


def build(size: int, real_chunks: list[str], real_vectors: np.ndarray):
    from django.db import connection
    from django.utils import timezone
    from pgvector.psycopg import register_vector

    from licensing.services import process_grant_set
    from rag.models import CanonicalRecord, Chunk, ChunkVariant, Contradiction, Document, Workspace

    corpus = build_corpus(size, real_chunks, real_vectors)
    base_signature = _signature(size, corpus.real, corpus.texts)
    signature = f"{base_signature} {LINEAGE_VERSION}"
    workspace = Workspace.objects.filter(slug="bench").first()
    if workspace and workspace.name in (signature, base_signature) \
            and Chunk.objects.filter(workspace=workspace).count() == size:
        if workspace.name != signature:  # built before version lineage: add it in place
            print(f"  upgrading the {size}-chunk corpus with version lineage", file=sys.stderr, flush=True)
            apply_lineage(workspace)
            Workspace.objects.filter(pk=workspace.pk).update(name=signature)
        print(f"  reusing the {size}-chunk corpus", file=sys.stderr, flush=True)
        process_grant_set(workspace_id=workspace.pk, tier_slug="enterprise")
        return workspace, corpus
    started = time.monotonic()
    with connection.cursor() as cursor:
        cursor.execute("TRUNCATE rag_contradiction, rag_chunkvariant, rag_canonicalrecord, rag_chunk, rag_document, "
                       "rag_documentfamily RESTART IDENTITY CASCADE")
    # The lineage's signature is written once it is applied, so an interrupted build is redone.
    workspace, _ = Workspace.objects.update_or_create(slug="bench", defaults={"name": "building"})
    # Measured as Enterprise; a grant in this process, since only vendor-signed keys make License rows count.
    process_grant_set(workspace_id=workspace.pk, tier_slug="enterprise")

    rng = np.random.default_rng(7)
    now = timezone.now()
    distinct = corpus.original.count(-1)  # the near-duplicates come last
    rows = len(corpus.texts)
    documents = []
    for number, start in enumerate(range(0, rows, CHUNKS_PER_DOCUMENT)):
        if start < distinct:
            age = timedelta(days=float(rng.uniform(30, 730)))
        else:  # a near-duplicate's document: a newer or an older version
            age = timedelta(days=float(rng.uniform(0, 30) if rng.random() < 0.5 else rng.uniform(731, 900)))
        documents.append(Document(
            workspace=workspace, path=f"/bench/{'copies' if start >= distinct else 'docs'}/doc-{number:06d}.md",
            title=f"Document {number}", format="markdown", doc_date=now - age, date_source="frontmatter",
            doc_type=DOC_TYPES[int(rng.integers(0, len(DOC_TYPES)))],
            tags=["needle"] if number % NEEDLE_EVERY == 0 else [], status=Document.Status.INDEXED,
            chunk_count=min(CHUNKS_PER_DOCUMENT, rows - start), indexed_at=now,
        ))
    documents = Document.objects.bulk_create(documents, batch_size=2000)

    index = next(i for i in Chunk._meta.indexes if i.name == "chunk_embedding_hnsw")
    with connection.schema_editor() as editor:
        editor.remove_index(Chunk, index)
    raw = connection.connection
    register_vector(raw)
    with raw.cursor() as cursor, cursor.copy(
        "COPY rag_chunk (workspace_id, document_id, text, text_hash, heading_path, chunk_index, total_chunks, "
        "chunk_position, embedding, created_at) FROM STDIN WITH (FORMAT BINARY)"
    ) as copy:
        copy.set_types(
            ["int8", "int8", "text", "varchar", "varchar", "int4", "int4", "varchar", "vector", "timestamptz"]
        )
        for row, text in enumerate(corpus.texts):
            document = documents[row // CHUNKS_PER_DOCUMENT]
            copy.write_row((workspace.pk, document.pk, text, f"{row:064d}", document.title,
                            row % CHUNKS_PER_DOCUMENT, document.chunk_count, "middle", corpus.vectors[row], now))
    print(f"  copied {rows} chunks in {time.monotonic() - started:.0f}s; building the HNSW index", file=sys.stderr,
          flush=True)
    with connection.cursor() as cursor:
        cursor.execute("SET maintenance_work_mem = '1GB'")
        with connection.schema_editor() as editor:
            editor.add_index(Chunk, index)
        cursor.execute("RESET maintenance_work_mem")
        cursor.execute("SELECT id FROM rag_chunk ORDER BY id")
        chunk_ids = [row[0] for row in cursor.fetchall()]

    # Half of the near-duplicates are merged (canonical = newest member), as rag.dedup would;
    # the rest are left to the retrieval-time collapse. One merged record in ten has a contradiction.
    dates = {d.pk: d.doc_date for d in documents}
    groups: dict[int, list[int]] = {}
    for row, original in enumerate(corpus.original):
        if original >= 0 and row % 2 == 0:
            groups.setdefault(original, [original]).append(row)
    def newness(row: int):
        return dates[documents[row // CHUNKS_PER_DOCUMENT].pk]
    records, variants, contradictions = [], [], []
    for members in groups.values():
        canonical = max(members, key=newness)
        records.append(CanonicalRecord(workspace=workspace, canonical_chunk_id=chunk_ids[canonical],
                                       merge_count=len(members) - 1))
    records = CanonicalRecord.objects.bulk_create(records, batch_size=2000)
    for record, members in zip(records, groups.values()):
        for row in members:
            if chunk_ids[row] != record.canonical_chunk_id:
                variants.append(ChunkVariant(record=record, chunk_id=chunk_ids[row], similarity=0.97))
        if record.pk % 10 == 0:
            a, b = sorted([chunk_ids[members[0]], chunk_ids[members[1]]])
            contradictions.append(Contradiction(workspace=workspace, chunk_a_id=a, chunk_b_id=b, similarity=0.97,
                                                differences=[{"kind": "number"}]))
    ChunkVariant.objects.bulk_create(variants, batch_size=5000)
    Contradiction.objects.bulk_create(contradictions, batch_size=5000)
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE")
    apply_lineage(workspace)
    Workspace.objects.filter(pk=workspace.pk).update(name=signature)
    print(f"  built in {time.monotonic() - started:.0f}s: {len(documents)} documents, {len(records)} records, "
          f"{len(variants)} variants, {len(contradictions)} contradictions", file=sys.stderr, flush=True)
    return workspace, corpus
