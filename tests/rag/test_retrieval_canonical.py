"""Canonical-aware results under the license gate: one result per record, the newest version shown."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from rag.models import ChunkVariant, Contradiction
from rag.records import record_members
from rag.retrieval import SearchFilters, search, vectors
from rag.selectors import chunks_other_versions
from tests.factories import WorkspaceFactory
from tests.rag.retrieval_helpers import add_document, chunk_of, license_workspace, make_record, options
from tests.rag.retrieval_helpers import retrieval_isolation  # noqa: F401 (an autouse fixture)

pytestmark = pytest.mark.django_db

OLD = datetime(2024, 3, 1, tzinfo=UTC)
MID = datetime(2024, 11, 1, tzinfo=UTC)
NEW = datetime(2025, 5, 1, tzinfo=UTC)


@pytest.fixture
def versions(workspace):
    """Three versions of one passage (merged into a record) and one unrelated passage."""
    v1 = add_document(workspace, "/v1/limits.md", ["The API rate limit is 600 requests per minute per key."],
                      doc_date=OLD, doc_type="api")
    v2 = add_document(workspace, "/v2/limits.md", ["The API rate limit is 800 requests per minute per key."],
                      doc_date=MID, doc_type="api")
    v3 = add_document(workspace, "/v3/limits.md", ["The API rate limit is 1000 requests per minute per key."],
                      doc_date=NEW, doc_type="api", tags=["current"])
    add_document(workspace, "/faq.md", ["Rate limit errors return status 429 with a Retry-After header."])
    record = make_record(chunk_of(v3), chunk_of(v1), chunk_of(v2))
    return record, v1, v2, v3


def paths(results) -> list[str]:
    return [r.path for r in results]


def test_licensed_search_shows_one_result_per_record_with_the_canonical(workspace, versions):
    record, v1, v2, v3 = versions
    license_workspace(workspace)

    results = search("API rate limit requests per minute", options(workspace, top_k=5, dedup=False))

    assert results.canonical_filtering == "applied"
    assert [p for p in paths(results) if "limits" in p] == ["/v3/limits.md"]
    top = results[0]
    assert (top.path, top.canonical_record_id, top.variant_count, top.is_variant) == (
        "/v3/limits.md", record.pk, 2, False)
    assert top.has_contradictions is False
    assert set(top.collapsed_chunk_ids) == {chunk_of(v1).pk, chunk_of(v2).pk}
    assert results.stats["variants_filtered"] == 2
    assert results.stats["canonical_hits"] == 1


def test_a_variant_that_ranks_first_brings_its_canonical_to_its_place(workspace, versions):
    record, v1, v2, v3 = versions
    license_workspace(workspace)
    # Only the oldest version says "600": it ranks first lexically, the record shows the newest text there.
    results = search("600", options(workspace, mode="lexical", top_k=3))
    assert paths(results) == ["/v3/limits.md"]
    assert results[0].score == pytest.approx(1.0)
    assert chunk_of(v1).pk in results[0].collapsed_chunk_ids


def test_without_the_license_variants_show_and_the_result_set_says_why(workspace, versions):
    results = search("API rate limit requests per minute", options(workspace, top_k=5, dedup=False))
    assert results.canonical_filtering == "unlicensed"
    assert {"/v1/limits.md", "/v2/limits.md", "/v3/limits.md"} <= set(paths(results))
    assert all(r.canonical_record_id is None and r.variant_count == 0 for r in results)
    assert results.to_dict()["canonical_filtering"] == "unlicensed"


def test_respect_canonicals_off_lets_variants_show_with_their_record(workspace, versions):
    record, *_ = versions
    license_workspace(workspace)
    results = search("API rate limit requests per minute",
                     options(workspace, top_k=5, dedup=False, respect_canonicals=False))
    assert results.canonical_filtering == "off"
    limits = [r for r in results if "limits" in r.path]
    assert len(limits) == 3 and {r.canonical_record_id for r in limits} == {record.pk}
    assert sorted(r.is_variant for r in limits) == [False, True, True]


def test_a_canonical_outside_the_filters_gives_way_to_the_best_member_inside(workspace, versions):
    license_workspace(workspace)
    results = search("API rate limit requests per minute",
                     options(workspace, top_k=5, dedup=False, filters=SearchFilters(date_to=NEW)))
    limits = [r for r in results if "limits" in r.path]
    assert len(limits) == 1 and limits[0].path in {"/v1/limits.md", "/v2/limits.md"}
    assert limits[0].is_variant


def test_contradictions_variant_metadata_and_provenance(workspace, versions):
    record, v1, v2, v3 = versions
    license_workspace(workspace)
    a, b = sorted([chunk_of(v1).pk, chunk_of(v3).pk])
    Contradiction.objects.create(workspace=workspace, chunk_a_id=a, chunk_b_id=b, similarity=0.96,
                                 differences=[{"kind": "number", "a": "600", "b": "1000"}])

    results = search("API rate limit requests per minute",
                     options(workspace, top_k=3, include_variant_metadata=True, include_provenance=True))
    top = results[0]
    assert top.has_contradictions is True
    assert [v["path"] for v in top.variants] == ["/v2/limits.md", "/v1/limits.md"]  # newest first
    assert top.provenance["record_id"] == record.pk
    assert [m["role"] for m in top.provenance["members"]] == ["canonical", "variant", "variant"]
    assert top.provenance["contradictions"][0]["differences"][0]["b"] == "1000"
    as_json = top.to_dict()
    assert as_json["variants"][0]["doc_date"] == MID.isoformat()
    assert results.stats["variant_metadata"] == "applied" and results.stats["provenance"] == "applied"


def test_a_search_reads_its_license_and_its_details_once(workspace, versions):
    """Outside a request no cache holds the gates: the search keeps its own. Members and contradictions are read
    for the results returned, in one statement each, and with provenance the variant counts and flags follow."""
    _record, _v1, _v2, v3 = versions
    license_workspace(workspace)
    faq = workspace.documents.get(path="/faq.md")
    a, b = sorted([chunk_of(faq).pk, chunk_of(v3).pk])
    conflict = Contradiction.objects.create(workspace=workspace, chunk_a_id=a, chunk_b_id=b, similarity=0.9,
                                            differences=[])

    with CaptureQueriesContext(connection) as queries:
        results = search("API rate limit requests per minute", options(
            workspace, top_k=5, dedup=False, respect_canonicals=False, include_variant_metadata=True,
            include_provenance=True))

    statements = [query["sql"] for query in queries]
    assert sum('FROM "licensing_license"' in sql for sql in statements) == 1
    assert not any("AS m(chunk_id, record_id)" in sql for sql in statements)  # record_stats: provenance says it
    assert sum('"rag_contradiction"."differences"' in sql for sql in statements) == 1
    # Read for a record's member and for a lone result alike, the contradiction is listed once on each side.
    assert {"/faq.md", "/v3/limits.md"} <= {result.path for result in results}
    for result in results:
        if result.path in ("/faq.md", "/v3/limits.md"):
            assert [c["id"] for c in result.provenance["contradictions"]] == [conflict.pk]
    # The figures as record_stats gives them without provenance.
    plain = search("API rate limit requests per minute", options(workspace, top_k=5, dedup=False,
                                                                 respect_canonicals=False))
    assert [(r.chunk_id, r.variant_count, r.has_contradictions) for r in plain] == [
        (r.chunk_id, r.variant_count, r.has_contradictions) for r in results]
    assert {r.path: r.variant_count for r in results}["/v3/limits.md"] == 2


def test_variant_metadata_and_provenance_need_the_license_too(workspace, versions):
    results = search("API rate limit", options(workspace, include_variant_metadata=True, include_provenance=True))
    assert all(r.variants is None and r.provenance is None for r in results)
    assert results.stats["variant_metadata"] == "unlicensed" and results.stats["provenance"] == "unlicensed"


def test_the_older_side_of_a_pending_contradiction_gives_way_to_the_newer(workspace):
    old = add_document(workspace, "/ops/runbook-2.1.md", ["Backups are kept for 7 days in the bucket."], doc_date=OLD)
    new = add_document(workspace, "/ops/guide-3.0.md", ["Configuration backups are kept for 30 days."], doc_date=NEW)
    add_document(workspace, "/ops/other.md", ["Restore a backup with lumen restore."], doc_date=MID)
    a, b = sorted([chunk_of(old).pk, chunk_of(new).pk])
    Contradiction.objects.create(workspace=workspace, chunk_a_id=a, chunk_b_id=b, similarity=0.9,
                                 differences=[{"kind": "number", "a": "7", "b": "30"}])
    question = "How long are backups kept in the bucket?"

    unlicensed = search(question, options(workspace, top_k=5))
    assert {"/ops/runbook-2.1.md", "/ops/guide-3.0.md"} <= set(paths(unlicensed))

    license_workspace(workspace)
    results = search(question, options(workspace, top_k=5))
    assert "/ops/runbook-2.1.md" not in paths(results)
    assert results[0].path == "/ops/guide-3.0.md"  # takes the place the older one had
    assert results[0].has_contradictions and chunk_of(old).pk in results[0].collapsed_chunk_ids
    assert results.stats["superseded_by_newer"] == 1

    both = search(question, options(workspace, top_k=5, respect_canonicals=False))
    assert {"/ops/runbook-2.1.md", "/ops/guide-3.0.md"} <= set(paths(both))


def test_a_records_members_are_the_same_for_search_its_counts_and_the_answers(workspace, versions):
    """rag.records is the one reader: the members search shows, the count record_stats gives, the versions an
    answer names beside the one it quotes (a record's variants whose text differs, most similar first)."""
    record, v1, v2, v3 = versions
    ChunkVariant.objects.filter(chunk=chunk_of(v1)).update(similarity=0.99)
    members = record_members(record_ids=[record.pk], workspace_id=workspace.pk)[record.pk]
    assert [(m.role, m.path) for m in members] == [
        ("canonical", "/v3/limits.md"), ("variant", "/v2/limits.md"), ("variant", "/v1/limits.md")]
    shown = chunk_of(v3)
    assert vectors.record_stats([(shown.pk, record.pk), (chunk_of(v1).pk, None)]) == {
        shown.pk: (2, False), chunk_of(v1).pk: (0, False)}
    others = chunks_other_versions(chunks=[(shown.pk, record.pk, shown.text)])[shown.pk]
    assert [c.document.path for c in others] == ["/v1/limits.md", "/v2/limits.md"]
    assert record_members(record_ids=[record.pk], workspace_id=WorkspaceFactory().pk) == {}
