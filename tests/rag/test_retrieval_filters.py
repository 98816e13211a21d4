"""SQL filters before ranking, relative date phrases, and the HNSW / exact-scan choice under selective filters."""

from __future__ import annotations

from datetime import UTC, datetime

import numpy as np
import pytest
import time_machine
from django.db import connection, transaction

from rag.retrieval import SearchFilters, search
from rag.dates import DatePhraseError, parse_date_phrase
from rag.retrieval.filters import Scope, build_scope
from rag.retrieval.vectors import knn_query, semantic_candidates, semantic_plan, vector_literal
from tests.factories import WorkspaceFactory
from tests.rag.retrieval_helpers import add_document, hnsw_built_after, options, random_chunks
from tests.rag.retrieval_helpers import retrieval_isolation  # noqa: F401 (an autouse fixture)

pytestmark = pytest.mark.django_db

NOW = datetime(2025, 6, 18, 15, 30, tzinfo=UTC)


# --- relative date phrases -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("phrase", "start", "end"),
    [
        ("last 7 days", datetime(2025, 6, 12, tzinfo=UTC), None),
        ("past two weeks", datetime(2025, 6, 5, tzinfo=UTC), None),
        ("this month", datetime(2025, 6, 1, tzinfo=UTC), None),
        ("this year", datetime(2025, 1, 1, tzinfo=UTC), None),
        ("this week", datetime(2025, 6, 16, tzinfo=UTC), None),
        ("last month", datetime(2025, 5, 1, tzinfo=UTC), datetime(2025, 6, 1, tzinfo=UTC)),
        ("last year", datetime(2024, 1, 1, tzinfo=UTC), datetime(2025, 1, 1, tzinfo=UTC)),
        ("since 2024", datetime(2024, 1, 1, tzinfo=UTC), None),
        ("Since March 2024", datetime(2024, 3, 1, tzinfo=UTC), None),
        ("since 2024-03-15", datetime(2024, 3, 15, tzinfo=UTC), None),
        ("in 2024", datetime(2024, 1, 1, tzinfo=UTC), datetime(2025, 1, 1, tzinfo=UTC)),
        ("before 2024", None, datetime(2024, 1, 1, tzinfo=UTC)),
        ("today", datetime(2025, 6, 18, tzinfo=UTC), None),
        ("yesterday", datetime(2025, 6, 17, tzinfo=UTC), datetime(2025, 6, 18, tzinfo=UTC)),
        ("any time", None, None),
    ],
)
def test_relative_phrases_become_ranges(phrase, start, end, settings):
    settings.TIME_ZONE = "UTC"
    parsed = parse_date_phrase(phrase, now=NOW)
    assert (parsed.start, parsed.end) == (start, end)


@pytest.mark.parametrize("phrase", ["next tuesday", "since whenever", "last zillion days"])
def test_unknown_phrases_say_what_works(phrase):
    with pytest.raises(DatePhraseError, match="last 7 days"):
        parse_date_phrase(phrase, now=NOW)


# --- composable filters ----------------------------------------------------------------------------

TEXT = "The ingest worker retries a failed upload three times."


@pytest.fixture
def library(workspace):
    add_document(workspace, "/lib/june.md", [TEXT + " june"], doc_date=datetime(2025, 6, 14, tzinfo=UTC),
                 doc_type="operations", source_type="wiki", tags=["ingest", "upload"], entities=["Worker"])
    add_document(workspace, "/lib/may.md", [TEXT + " may"], doc_date=datetime(2025, 5, 20, tzinfo=UTC),
                 doc_type="api", source_type="git", tags=["ingest"], entities=["Worker", "Gateway"])
    add_document(workspace, "/lib/2023.md", [TEXT + " old"], doc_date=datetime(2023, 2, 1, tzinfo=UTC),
                 doc_type="operations", source_type="wiki", tags=["upload"], entities=[])
    add_document(workspace, "/lib/undated.md", [TEXT + " undated"], doc_date=None, doc_type="user",
                 source_type="", tags=[], entities=["Gateway"])
    return workspace


def found(workspace, **filters) -> set[str]:
    with time_machine.travel(NOW, tick=False):
        results = search("ingest worker retries upload", options(workspace, top_k=20, dedup=False,
                                                                 filters=SearchFilters(**filters)))
    return {r.path.rsplit("/", 1)[-1] for r in results}


@pytest.mark.parametrize(
    ("filters", "expected"),
    [
        ({}, {"june.md", "may.md", "2023.md", "undated.md"}),
        ({"date_from": datetime(2025, 1, 1, tzinfo=UTC)}, {"june.md", "may.md"}),
        ({"date_to": datetime(2025, 6, 1, tzinfo=UTC)}, {"may.md", "2023.md"}),
        ({"created_after": datetime(2025, 5, 21, tzinfo=UTC)}, {"june.md"}),
        ({"date_phrase": "last 7 days"}, {"june.md"}),
        ({"date_phrase": "this month"}, {"june.md"}),
        ({"date_phrase": "this year"}, {"june.md", "may.md"}),
        ({"date_phrase": "since 2023"}, {"june.md", "may.md", "2023.md"}),
        ({"date_phrase": "this year", "date_to": datetime(2025, 6, 1, tzinfo=UTC)}, {"may.md"}),
        ({"source_types": ("wiki",)}, {"june.md", "2023.md"}),
        ({"doc_types": ("api", "user")}, {"may.md", "undated.md"}),
        ({"tags": ("ingest", "upload")}, {"june.md", "may.md", "2023.md"}),
        ({"tags": ("ingest", "upload"), "tags_match": "all"}, {"june.md"}),
        ({"entities": ("Gateway",)}, {"may.md", "undated.md"}),
        ({"entities": ("Worker", "Gateway"), "entities_match": "all"}, {"may.md"}),
        ({"doc_types": ("operations",), "tags": ("ingest",), "date_phrase": "since 2024"}, {"june.md"}),
    ],
)
def test_filters_compose_in_sql(library, filters, expected):
    assert found(library, **filters) == expected


def test_filters_apply_to_every_mode(library):
    with time_machine.travel(NOW, tick=False):
        for mode in ("semantic", "lexical", "hybrid"):
            results = search("ingest worker retries upload",
                             options(library, mode=mode, top_k=20, filters=SearchFilters(doc_types=("api",))))
            assert [r.path for r in results] == ["/lib/may.md"], mode


def test_a_scope_no_document_meets_finds_nothing_and_does_not_fail(library):
    """"What was the price of a loaf of bread in 1950?": scoped to the documents of 1950, none, and the scale
    eval's answers stopped on Django's EmptyResultSet."""
    with time_machine.travel(NOW, tick=False):
        for mode in ("semantic", "lexical", "hybrid"):
            assert not search("ingest worker", options(library, mode=mode, filters=SearchFilters(document_ids=()))), mode


def test_the_resolved_range_is_reported(library):
    with time_machine.travel(NOW, tick=False):
        results = search("ingest", options(library, filters=SearchFilters(date_phrase="this month")))
    assert results.filters["resolved_date_range"] == {"from": "2025-06-01T00:00:00+00:00", "to": None}
    assert results.filters["date_phrase"] == "this month"


# --- HNSW or exact ------------------------------------------------------------------------------------


def _scope(chunks_in_scope: int, chunks_in_table: int) -> Scope:
    return Scope(workspace_id=1, condition_sql="TRUE", condition_params=(), chunks_in_scope=chunks_in_scope,
                 chunks_in_table=chunks_in_table)


def test_plan_widens_hnsw_for_wide_scopes_and_scans_narrow_ones_exactly():
    assert semantic_plan(_scope(100_000, 100_000), 50).path == "hnsw"
    assert semantic_plan(_scope(100_000, 100_000), 50).ef_search == 100
    wide = semantic_plan(_scope(30_000, 100_000), 50)
    assert wide.path == "hnsw" and wide.ef_search == 334
    assert semantic_plan(_scope(9_000, 100_000), 50).path == "exact"  # 9%: HNSW would starve
    assert semantic_plan(_scope(1_000, 100_000), 10).path == "exact"
    assert semantic_plan(_scope(0, 100_000), 10).path == "exact"


@pytest.fixture
def haystack(workspace):
    """2,000 chunks, of which the 20 in /needles/ (1%) carry the doc type "needle"; returns the needles' vectors."""
    crowd = add_document(workspace, "/crowd/all.md", [], doc_type="user")
    needles = add_document(workspace, "/needles/few.md", [], doc_type="needle")
    with hnsw_built_after():
        random_chunks(crowd, 1980, seed=0.11)
        needle_vectors = random_chunks(needles, 20, start=1980, seed=0.22)
    return workspace, needle_vectors


def test_a_one_percent_filter_still_returns_top_k_exact_results(haystack):
    workspace, needles = haystack
    query = needles[3] * 0.5 + needles[11] * 0.3 + np.full(384, 0.01, dtype=np.float32)
    query = query / np.linalg.norm(query)
    results = search("anything", options(workspace, mode="semantic", top_k=10, dedup=False,
                                         query_embedding=tuple(query.tolist()),
                                         filters=SearchFilters(doc_types=("needle",))))
    assert results.stats["semantic_path"] == "exact"
    assert results.stats["selectivity"] == pytest.approx(0.01, abs=0.002)
    expected = [f"filler passage {1980 + i}" for i in np.argsort(-(needles @ query))[:10]]
    assert [r.text for r in results] == expected

    # The scope counts the matching documents' chunks in this workspace only ...
    add_document(WorkspaceFactory(), "/elsewhere.md", ["not ours"], doc_type="needle")
    scope = build_scope(workspace_id=workspace.pk, filters=SearchFilters(doc_types=("needle",)))
    assert scope.chunks_in_scope == 20 and scope.chunks_in_table >= 2000
    # ... and its share is taken over the whole table: a small workspace is itself a selective filter.
    small = WorkspaceFactory()
    add_document(small, "/small.md", ["the only passage of a small workspace"])
    alone = search("small workspace passage", options(small, mode="semantic"))
    assert alone.stats["semantic_path"] == "exact" and [r.path for r in alone] == ["/small.md"]


def _plan(sql: str, params: list) -> str:
    with transaction.atomic():
        with connection.cursor() as cursor:
            cursor.execute("SET LOCAL enable_seqscan = off; SET LOCAL enable_sort = off")
            cursor.execute("EXPLAIN " + sql, params)
            return "\n".join(row[0] for row in cursor.fetchall())


def test_the_index_scan_starves_under_a_filter_and_the_fallback_rescues_it(haystack):
    workspace, needles = haystack
    scope = build_scope(workspace_id=workspace.pk, filters=SearchFilters(doc_types=("needle",)))
    literal = vector_literal(needles[0])
    # EXPLAIN: even with sequential scans and sorts discouraged, the exact shape never uses the
    # HNSW index, while the index shape does.
    assert "chunk_embedding_hnsw" not in _plan(*knn_query(scope, literal, 10, exact=True))
    assert "Index Scan using chunk_embedding_hnsw" in _plan(*knn_query(scope, literal, 10, exact=False))

    lying = Scope(**{**scope.__dict__, "chunks_in_table": scope.chunks_in_scope})  # claims the scope is everything
    with transaction.atomic():
        with connection.cursor() as cursor:
            # Make the planner take the ordered index scan on this small table, as it would on a big one.
            cursor.execute("SET LOCAL enable_seqscan = off; SET LOCAL enable_sort = off")
        forced = semantic_candidates(lying, needles[0].tolist(), 10, force="hnsw")
        rescued = semantic_candidates(lying, needles[0].tolist(), 10)
    assert len(forced.rows) < 10  # the post-filtered index scan loses rows ...
    assert rescued.path == "hnsw+exact" and len(rescued.rows) == 10  # ... and the fallback finds them


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_ef_search_is_raised_for_the_index_query_alone():
    """Outside any transaction (as in a web request): each read of one round trip has its own width, and the
    setting lives for that round trip only."""
    from rag.retrieval.vectors import CandidateRead, read_together

    width = "SELECT current_setting('hnsw.ef_search')::int, 1.0"
    assert read_together([CandidateRead(width, [], ef_search=123), CandidateRead(width, [], ef_search=321),
                          CandidateRead("SELECT 7, 2.5", [])]) == [[(123, 1.0)], [(321, 1.0)], [(7, 2.5)]]
    with connection.cursor() as cursor:
        cursor.execute("SELECT current_setting('hnsw.ef_search', true)")
        assert cursor.fetchone()[0] in (None, "", "40")


def test_the_pairs_of_a_head_are_read_once_and_answer_as_a_read_of_their_own(workspace):
    """Within `near_duplicate_pairs_within`, any subset of the chunks at the block's threshold or above gets the
    pairs (and similarities) a statement of its own would give, all from one statement."""
    from django.test.utils import CaptureQueriesContext

    from rag.retrieval.vectors import near_duplicate_pairs, near_duplicate_pairs_within
    from tests.rag.retrieval_helpers import chunk_of

    documents = [add_document(workspace, f"/notes-{index}.txt", [f"Backups are kept for {days} days in the bucket."])
                 for index, days in enumerate((7, 7, 30, 90))]
    ids = [chunk_of(document).pk for document in documents]
    asked = [(ids[:3], 0.0), (ids[1:], 0.5), (ids, 0.9)]
    alone = [sorted(near_duplicate_pairs(chunk_ids, threshold=threshold)) for chunk_ids, threshold in asked]
    assert alone[0]  # the texts are close: there are pairs to find
    with CaptureQueriesContext(connection) as queries, near_duplicate_pairs_within(ids, threshold=0.0):
        within = [sorted(near_duplicate_pairs(chunk_ids, threshold=threshold)) for chunk_ids, threshold in asked]
        assert len(queries) == 1
        near_duplicate_pairs(ids, threshold=-0.5)  # below the block's threshold: read on its own
        assert len(queries) == 2
    assert within == alone
