"""What search reads of merged records: provenance, vectors kept for exact scans, exact vs HNSW, the demo corpus."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.db import connection, transaction

from rag.dedup.merge import document_merge, workspace_merge
from rag.dedup.neighbours import search_plan
from rag.jobs.run import job_item_run
from rag.models import CanonicalRecord, Chunk, Contradiction, Document
from rag.records import record_members
from rag.retrieval.vectors import neighbours_sql
from rag.selectors import record_provenance
from rag.uploads import indexing_job_create
from tests.factories import WorkspaceFactory
from tests.rag.dedup_support import (
    RATE_LIMITED,
    assert_invariants,
    section_chunk,
    troubleshooting_document,
)
from tests.rag.dedup_support import merge_each as _merge
from tests.rag.dedup_support import members_free_workspace  # noqa: F401 (the workspace fixture)
from tests.rag.dedup_support import user_unhashed as _user


# --- provenance and the search path ----------------------------------------------------------------


@pytest.mark.django_db
def test_record_provenance_lists_the_canonical_then_variants_newest_first(workspace):
    user = _user()
    workspace.members.add(user)
    v20, v21, v30 = (troubleshooting_document(workspace, v) for v in ("2.0", "2.1", "3.0"))
    _merge(v20, v30, v21)
    record = CanonicalRecord.objects.get(canonical_chunk=section_chunk(v30, RATE_LIMITED))
    entries = record_provenance(record_id=record.pk, user=user)
    assert [(e.role, e.path, e.doc_date) for e in entries] == [
        ("canonical", v30.path, v30.doc_date), ("variant", v21.path, v21.doc_date), ("variant", v20.path, v20.doc_date)]
    assert entries[0].similarity is None and all(0.95 <= e.similarity for e in entries[1:])
    with pytest.raises(CanonicalRecord.DoesNotExist):
        record_provenance(record_id=record.pk, user=_user())  # not a member of the workspace
    # One reader: search's variants and provenance read the same members, scoped to the workspace.
    assert record_members(record_ids=[record.pk], workspace_id=workspace.pk) == {record.pk: entries}
    assert record_members(record_ids=[record.pk], workspace_id=WorkspaceFactory().pk) == {}


@pytest.mark.django_db
def test_chunk_vectors_stay_in_the_row_for_exact_scans():
    # pgvector's default (EXTERNAL) puts a 1.5 kB vector beside a chunk's text in TOAST, and an
    # exact scan then reads the TOAST table for every row it compares (10x slower, bench_merge.py).
    with connection.cursor() as cursor:
        cursor.execute("SELECT attstorage FROM pg_attribute WHERE attrelid = 'rag_chunk'::regclass "
                       "AND attname = 'embedding'")
        assert cursor.fetchone() == ("m",)


# Serialized rollback, as the suite's other transactional tests: a plain flush re-creates content types
# that the next serialized test then inserts again.
@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_small_workspaces_are_searched_exactly_and_large_ones_through_hnsw(workspace, settings):
    # Earlier tests' rolled-back chunks are dead entries in the index (the same texts, so right beside
    # these vectors): vacuumed away, the table holds only this workspace and HNSW must find its records.
    with connection.cursor() as cursor:
        cursor.execute(f"VACUUM {Chunk._meta.db_table}")
    troubleshooting_document(workspace, "2.0")
    assert search_plan(workspace.pk).strategy == "exact"
    settings.MERGE_EXACT_SCAN_MAX_CHUNKS = 0
    plan = search_plan(workspace.pk)
    assert plan.strategy == "hnsw" and plan.ef_search >= settings.MERGE_EF_SEARCH

    def plan_text(strategy: str) -> str:
        with transaction.atomic(), connection.cursor() as cursor:
            # Even with every alternative priced out, the exact shape cannot use the index.
            cursor.execute("SET LOCAL enable_seqscan = off")
            cursor.execute("SET LOCAL enable_sort = off")
            cursor.execute("EXPLAIN " + neighbours_sql(strategy), {
                "workspace_id": workspace.pk, "archived": [], "neighbours": 10, "chunk_ids": [1, 2],
                "max_distance": 0.15})
            return "\n".join(row[0] for row in cursor.fetchall())

    assert "chunk_embedding_hnsw" in plan_text("hnsw")
    assert "chunk_embedding_hnsw" not in plan_text("exact")
    # The HNSW path finds the same records as the exact one on this small set.
    for version in ("2.1", "3.0"):
        troubleshooting_document(workspace, version)
    stats = workspace_merge(workspace_id=workspace.pk)
    assert stats.search == "hnsw" and CanonicalRecord.objects.filter(workspace=workspace).count() == 3


@pytest.mark.django_db
def test_a_workspace_lost_in_a_big_table_falls_back_to_an_exact_scan(workspace, settings):
    troubleshooting_document(workspace, "2.0")
    settings.MERGE_EXACT_SCAN_MAX_CHUNKS = 0
    with connection.cursor() as cursor:
        # Pretend the table holds a million chunks: 4 of them are too few for HNSW's post-filter.
        cursor.execute("SELECT reltuples FROM pg_class WHERE oid = 'rag_chunk'::regclass")
        (saved,) = cursor.fetchone()
        cursor.execute("UPDATE pg_class SET reltuples = 1000000 WHERE oid = 'rag_chunk'::regclass")
    try:
        assert search_plan(workspace.pk).strategy == "exact"
    finally:
        with connection.cursor() as cursor:
            cursor.execute("UPDATE pg_class SET reltuples = %s WHERE oid = 'rag_chunk'::regclass", [saved])


# --- the real encoder on the demo corpus --------------------------------------------------------------

DEMO = Path(__file__).resolve().parents[2] / "demo" / "corpus"


@pytest.mark.real_encoder
@pytest.mark.django_db
def test_demo_corpus_versions_merge_newest_first_and_conflicts_are_named(workspace, settings):
    from rag import embeddings

    settings.EMBEDDING_ENCODER = "minilm"
    embeddings.reset_encoder()
    try:
        files = ["v2.0/api_reference.pdf", "api-reference-v2.1.md", "api/api-reference-v3.adoc",
                 "upgrading-to-2.1.md", "archive/upgrading-to-2.1 (export).md"]
        job = indexing_job_create(workspace=workspace, paths=[DEMO / name for name in files], enqueue=False)
        for item_id in job.items.values_list("pk", flat=True):
            assert job_item_run(item_id=item_id) == "indexed"
    finally:
        embeddings.reset_encoder()
    documents = {str(Path(d.path).relative_to(DEMO)): d for d in Document.objects.filter(workspace=workspace)}
    for document in sorted(documents.values(), key=lambda d: d.pk, reverse=True):
        document_merge(document_id=document.pk)
    assert_invariants(workspace)

    def members(record: CanonicalRecord) -> list[str]:
        return [str(Path(entry.path).relative_to(DEMO)) for entry in record_provenance(record_id=record.pk)]

    records = [members(r) for r in CanonicalRecord.objects.filter(workspace=workspace)]
    # The re-exported copy of the upgrade guide merges section by section with the original.
    copies = [m for m in records if set(m) == {"upgrading-to-2.1.md", "archive/upgrading-to-2.1 (export).md"}]
    assert len(copies) >= 4
    # Versions of the API reference: the newest one is the canonical.
    api = [m for m in records if "api-reference-v2.1.md" in m and len(m) >= 2 and "upgrading-to-2.1.md" not in m]
    assert api and any(m[0] == "api/api-reference-v3.adoc" for m in api)
    assert all(m[0] != "v2.0/api_reference.pdf" for m in api)

    # The rate limit went from 600 (2.0) to 1000 (2.1) to 1200 (3.0) requests per minute: changes within one
    # family, for its timeline, never for review.
    api_family = set(Document.objects.filter(pk__in=[documents[name].pk for name in files[:3]])
                     .values_list("family_id", flat=True))
    assert len(api_family) == 1 and None not in api_family
    assert not Contradiction.objects.filter(workspace=workspace, chunk_a__document__family_id__in=api_family,
                                            chunk_b__document__family_id__in=api_family).exists()
    # The copy and its original agree on every fact.
    original, export = documents["upgrading-to-2.1.md"], documents["archive/upgrading-to-2.1 (export).md"]
    assert not Contradiction.objects.filter(chunk_a__document__in=[original, export],
                                            chunk_b__document__in=[original, export]).exists()
