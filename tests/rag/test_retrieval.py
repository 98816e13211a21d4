"""rag.retrieval.search on the real database: scope, hybrid fusion, boosts, recency, collapsing, metrics.

The hashing encoder stands in for the model here: it maps shared words to
shared dimensions, which is all these tests need. Tests where meaning matters
are in test_retrieval_real.py.
"""

from __future__ import annotations

import logging
from datetime import timedelta

import pytest
from django.utils import timezone
from prometheus_client import REGISTRY

from rag.retrieval import SearchFilters, SearchOptionError, search
from rag.retrieval.fusion import reciprocal_rank_fusion
from rag.retrieval.neardup import collapse_near_duplicates
from tests.factories import WorkspaceFactory
from tests.rag.retrieval_helpers import add_document, options
from tests.rag.retrieval_helpers import retrieval_isolation  # noqa: F401 (an autouse fixture)

pytestmark = pytest.mark.django_db


def paths(results) -> list[str]:
    return [r.path for r in results]


# --- scope -------------------------------------------------------------------------------------


def test_results_never_leave_the_workspace(workspace):
    other = WorkspaceFactory()
    add_document(other, "/other/secret.md", ["rotate the signing key every ninety days"])
    add_document(workspace, "/ours/keys.md", ["rotate the signing key every thirty days"])

    for mode in ("hybrid", "semantic", "lexical"):
        results = search("rotate the signing key", options(workspace, mode=mode, top_k=10))
        assert paths(results) == ["/ours/keys.md"], mode


def test_archived_documents_are_left_out_unless_asked_for(workspace):
    add_document(workspace, "/a/live.md", ["backup retention is thirty days"])
    add_document(workspace, "/a/gone.md", ["backup retention was seven days"], archived=True)

    assert paths(search("backup retention", options(workspace, top_k=10))) == ["/a/live.md"]
    both = search("backup retention", options(workspace, top_k=10, filters=SearchFilters(include_archived=True)))
    assert sorted(paths(both)) == ["/a/gone.md", "/a/live.md"]
    also = search("backup retention", options(workspace, top_k=10, include_archived=True))
    assert sorted(paths(also)) == ["/a/gone.md", "/a/live.md"]


# --- hybrid --------------------------------------------------------------------------------------


def test_reciprocal_rank_fusion_uses_k_and_normalizes():
    fused = reciprocal_rank_fusion({"semantic": [1, 2, 3], "lexical": [3, 1]}, k=60)
    scores = {f.chunk_id: f.score for f in fused}
    best_possible = 2 / 61
    assert scores[1] == pytest.approx((1 / 61 + 1 / 62) / best_possible)
    assert scores[3] == pytest.approx((1 / 63 + 1 / 61) / best_possible)
    assert scores[2] == pytest.approx((1 / 62) / best_possible)
    assert [f.chunk_id for f in fused] == [1, 3, 2]
    assert fused[0].ranks == {"semantic": 1, "lexical": 2}
    # One list alone: first place scores 1.
    assert reciprocal_rank_fusion({"semantic": [9], "lexical": []}, k=60)[0].score == pytest.approx(1.0)


def test_lexical_mode_finds_a_rare_exact_term(workspace):
    add_document(workspace, "/kb/errors.md", ["Error E4417 means the upstream certificate expired."])
    for n in range(6):
        add_document(workspace, f"/kb/other-{n}.md", [f"The upstream certificate is renewed by the operator {n}."])

    results = search("what does E4417 mean", options(workspace, mode="lexical", top_k=3))
    assert results[0].path == "/kb/errors.md"
    assert results.stats["lexical"]["terms"] == ["e4417"] or "e4417" in results.stats["lexical"]["terms"]
    assert results[0].ranks == {"lexical": 1}


def test_hybrid_lists_both_paths_ranks(workspace):
    add_document(workspace, "/kb/a.md", ["Error E4417 means the upstream certificate expired."])
    results = search("E4417 upstream certificate", options(workspace, top_k=1))
    assert results[0].ranks == {"semantic": 1, "lexical": 1}
    assert results[0].score == pytest.approx(1.0)
    assert results.stats["semantic_path"] in {"exact", "hnsw", "hnsw+exact"}


# --- doc types -------------------------------------------------------------------------------------


def _two_types(workspace):
    text = "The token refresh takes thirty seconds after the session ends."
    add_document(workspace, "/docs/ops.md", [text + " ops"], doc_type="operations")
    add_document(workspace, "/docs/api.md", [text + " api"], doc_type="api")


def test_doc_type_boost_follows_the_question_and_never_filters(workspace, settings):
    _two_types(workspace)
    results = search("Which API endpoint handles the token refresh?", options(workspace, top_k=5, dedup=False))
    assert "api" in results.stats["doc_types_boosted"]
    assert results[0].path == "/docs/api.md"
    assert "/docs/ops.md" in paths(results)  # boosted, not filtered

    unboosted = search("Which API endpoint handles the token refresh?",
                       options(workspace, top_k=5, doc_type_boost=1.0, dedup=False))
    assert unboosted.stats["doc_types_boosted"] == []
    boosted_score = {r.path: r.score for r in results}
    plain_score = {r.path: r.score for r in unboosted}
    assert boosted_score["/docs/api.md"] == pytest.approx(plain_score["/docs/api.md"] * settings.DOC_TYPE_BOOST)
    assert boosted_score["/docs/ops.md"] == pytest.approx(plain_score["/docs/ops.md"])


def test_the_users_doc_type_overrides_the_classifier(workspace):
    _two_types(workspace)
    results = search("Which API endpoint handles the token refresh?",
                     options(workspace, top_k=5, doc_type_override=("operations",), doc_type_boost=2.0, dedup=False))
    assert results.stats["doc_types_boosted"] == ["operations"]
    assert results.stats["doc_type_source"] == "user"
    assert results[0].path == "/docs/ops.md"


def test_classifier_reads_keywords_from_the_admin_data(workspace):
    from rag.models import DocType
    from rag.retrieval.ranking import classify_query, doc_type_keywords

    DocType.objects.filter(slug="operations").update(keywords=["zeppelin"])
    rules = doc_type_keywords(max_age=0)
    assert classify_query("how do I moor the zeppelin", rules) == ["operations"]
    # Plural forms count; only a clear leader is boosted, a tie boosts nothing.
    assert classify_query("api requests error", rules) == ["api"]
    assert classify_query("api error", rules) == []
    assert classify_query("lunch menu for friday", [r for r in rules if r.slug != "user"]) == []


# --- recency -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("query", "trend"),
    [
        ("what is the latest rate limit", True),
        ("recent changes to backups", True),
        ("what's new in the gateway", True),
        ("current retention policy", True),
        ("rate limits this year", True),
        ("rate limits in 2025", True),
        ("how do I create a new API key", False),
        ("how do I configure the rate limit", False),
    ],
)
def test_trend_queries_are_detected(query, trend):
    from rag.retrieval.ranking import is_trend_query

    assert is_trend_query(query) is trend


def test_recency_decay_applies_to_trend_queries_only(workspace):
    now = timezone.now()
    add_document(workspace, "/notes/old.md", ["gateway rate limit is 600 requests per minute"],
                 doc_date=now - timedelta(days=70))
    add_document(workspace, "/notes/new.md", ["gateway rate limit is 900 requests per minute, raised"],
                 doc_date=now - timedelta(days=1))

    plain = search("gateway rate limit requests per minute", options(workspace, top_k=5, dedup=False, recency="auto"))
    trend = search("latest gateway rate limit requests per minute",
                   options(workspace, top_k=5, dedup=False, recency="auto"))
    assert plain.stats["recency"] is False and trend.stats["recency"] is True
    assert trend[0].path == "/notes/new.md"
    by_path = {r.path: r for r in trend}
    # Ages count from the newest document in scope (new.md), not from today: 0.7 relevance + 0.3 * freshness.
    relevance = {r.path: r.score for r in search("latest gateway rate limit requests per minute",
                                                  options(workspace, top_k=5, dedup=False, recency="off"))}
    assert by_path["/notes/new.md"].score == pytest.approx(0.7 * relevance["/notes/new.md"] + 0.3, rel=1e-3)
    assert by_path["/notes/old.md"].score == pytest.approx(
        0.7 * relevance["/notes/old.md"] + 0.3 * 0.5 ** (69 / 14), rel=1e-3)
    off = search("gateway rate limit requests per minute", options(workspace, top_k=5, dedup=False, recency="off"))
    assert [(r.chunk_id, r.score) for r in plain] == [(r.chunk_id, r.score) for r in off]


def test_recency_is_off_unless_the_setting_or_the_search_asks_for_it(workspace, settings):
    now = timezone.now()
    add_document(workspace, "/notes/new.md", ["gateway rate limit is 900 requests per minute"], doc_date=now)
    assert search("latest gateway rate limit", options(workspace)).stats["recency"] is False
    settings.SEARCH_RECENCY = "auto"
    assert search("latest gateway rate limit", options(workspace)).stats["recency"] is True


def test_recency_counts_from_the_newest_document_not_from_today(workspace):
    """A corpus last edited a year ago still has a newest release for "latest" questions."""
    long_ago = timezone.now() - timedelta(days=400)
    add_document(workspace, "/notes/release-notes-old.md", ["release notes: the gateway adds request tracing"],
                 doc_date=long_ago - timedelta(days=150))
    add_document(workspace, "/notes/release-notes-new.md", ["release notes: the gateway adds request mirroring"],
                 doc_date=long_ago)

    trend = search("what is in the latest release notes", options(workspace, top_k=5, dedup=False, recency="auto"))
    assert trend.stats["recency"] is True
    assert trend.stats["recency_reference"] == long_ago.isoformat()
    assert trend[0].path == "/notes/release-notes-new.md"


# --- near-duplicates ------------------------------------------------------------------------------


def test_near_duplicates_from_different_documents_keep_the_newest(workspace):
    text = "Set MAX_UPLOAD_MB to raise the upload limit of the web console."
    now = timezone.now()
    add_document(workspace, "/v1/guide.md", [text], doc_date=now - timedelta(days=400))
    add_document(workspace, "/v2/guide.md", [text], doc_date=now - timedelta(days=10))
    add_document(workspace, "/undated/guide.md", [text], doc_date=None)
    add_document(workspace, "/other.md", ["The web console shows upload progress per file."])

    results = search("upload limit web console", options(workspace, top_k=5))
    assert paths(results).count("/v2/guide.md") == 1
    assert not {"/v1/guide.md", "/undated/guide.md"} & set(paths(results))
    assert results.stats["near_duplicates_removed"] == 2
    kept = {r.path: r for r in results}["/v2/guide.md"]
    assert len(kept.collapsed_chunk_ids) == 2
    assert results[0].path == "/v2/guide.md"  # the group keeps its best place

    everything = search("upload limit web console", options(workspace, top_k=5, dedup=False))
    assert {"/v1/guide.md", "/v2/guide.md", "/undated/guide.md"} <= set(paths(everything))


def test_same_document_repeats_are_not_collapsed(workspace):
    add_document(workspace, "/faq.md", ["Restart the worker after changing the queue.",
                                        "Restart the worker after changing the queue."])
    results = search("restart the worker queue", options(workspace, top_k=5))
    assert len(results) == 2


def test_near_duplicate_collapse_keeps_order_otherwise():
    from datetime import datetime

    class C:
        def __init__(self, chunk_id, year):
            self.chunk_id, self.doc_date = chunk_id, datetime(year, 1, 1) if year else None

    items = [C(1, 2020), C(2, 2024), C(3, 2021), C(4, 2023), C(5, None)]
    collapsed = collapse_near_duplicates(
        items, [(1, 4, 0.99), (3, 5, 0.97)],
        chunk_id=lambda c: c.chunk_id, doc_date=lambda c: c.doc_date, take_place=lambda s, slot, others: s,
    )
    assert [c.chunk_id for c in collapsed.kept] == [4, 2, 3]
    assert sorted(c.chunk_id for c in collapsed.removed) == [1, 5]


# --- options, chat, observability ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"top_k": 0}, "top_k"),
        ({"mode": "fuzzy"}, "mode"),
        ({"recency": "sometimes"}, "recency"),
        ({"dedup_threshold": 1.5}, "dedup_threshold"),
        ({"filters": SearchFilters(date_phrase="next tuesday")}, "date phrase"),
        ({"filters": SearchFilters(tags=("a",), tags_match="most")}, "tags_match"),
    ],
)
def test_bad_options_are_refused_with_a_message(workspace, changes, message):
    with pytest.raises(SearchOptionError, match=message):
        search("anything", options(workspace, **changes))


def test_empty_query_is_refused(workspace):
    with pytest.raises(SearchOptionError, match="empty"):
        search("   ", options(workspace))


def _sample(name: str, labels: dict | None = None) -> float:
    return REGISTRY.get_sample_value(name, labels or {}) or 0.0


def test_each_search_is_measured_and_logged(workspace, caplog):
    add_document(workspace, "/m.md", ["metrics are scraped every fifteen seconds"])
    before = _sample("docent_search_duration_seconds_count", {"canonical_aware": "false"})
    results_before = _sample("docent_search_results_count")

    with caplog.at_level(logging.INFO, logger="rag.retrieval"):
        search("metrics scrape interval", options(workspace))

    assert _sample("docent_search_duration_seconds_count", {"canonical_aware": "false"}) == before + 1
    assert _sample("docent_search_results_count") == results_before + 1
    lines = [r for r in caplog.records if r.name == "rag.retrieval" and r.getMessage() == "search"]
    assert len(lines) == 1
    assert lines[0].canonical_filtering == "unlicensed" and lines[0].results == 1
    assert lines[0].duration_ms > 0
