"""Identifier-aware lexical search, the domain dictionary and weighted fusion, on the real database.

The passages are real documentation text (Sphinx's configuration and man page, an
API gateway's reference); the hashing encoder stands in for the model.
"""

from __future__ import annotations

import pytest
from django.db import connection
from django.test import override_settings
from django.test.utils import CaptureQueriesContext

from rag.models import Chunk, QueryExpansion
from rag.retrieval import search
from rag.retrieval.expansion import expansions_for
from rag.retrieval.fusion import reciprocal_rank_fusion
from rag.retrieval.identifiers import chunk_identifiers, identifiers_in
from tests.rag.factories import ChunkFactory, DocumentFactory
from tests.rag.retrieval_helpers import license_workspace, options
from tests.rag.retrieval_helpers import retrieval_isolation  # noqa: F401 (an autouse fixture)

pytestmark = pytest.mark.django_db

SPHINX_LINKCHECK = (
    ".. confval:: linkcheck_timeout\n\n   A timeout value, in seconds, for the linkcheck builder.  The default is to\n"
    "   use Python's global socket timeout.\n\n   .. versionadded:: 1.1"
)
SPHINX_KEEP_GOING = (
    ".. option:: --keep-going\n\n   With -W option, keep going processing when getting warnings to the end\n"
    "   of build, and ``sphinx-build`` exits with exit status 1."
)
GATEWAY_HEADERS = (
    "Every proxied response carries X-RateLimit-Limit and X-RateLimit-Remaining; when the budget is spent "
    "the gateway answers 429 with a Retry-After header."
)
GATEWAY_SETTING = "proxy.upstream_timeout: how long the proxy waits for the upstream service (default 60s)."


# --- tokenisation ----------------------------------------------------------------------------


@pytest.mark.parametrize(("text", "expected"), [
    (SPHINX_LINKCHECK, ["linkcheck_timeout"]),
    (SPHINX_KEEP_GOING, ["--keep-going", "-W", "sphinx-build"]),
    (GATEWAY_HEADERS, ["x-ratelimit-limit", "x-ratelimit-remaining", "retry-after"]),
    (GATEWAY_SETTING, ["proxy.upstream_timeout", "upstream_timeout"]),
    ("Set DATABASE_URL, then call config.load() or get_settings().", ["database_url", "config.load", "get_settings"]),
    ("Clients are getting LG1504 errors from MathJax.", ["lg1504", "mathjax"]),
])
def test_identifiers_are_whole_tokens_in_normal_form(text, expected):
    assert identifiers_in(text) == expected


def test_plain_prose_dates_versions_and_abbreviations_are_not_identifiers():
    text = "It is built-in and read-only, e.g. since 2025-03-15 in version 2.1 over HTTP/1.1 at /api/v2."
    assert identifiers_in(text) == []


def test_short_options_keep_their_case_and_the_heading_comes_first():
    assert identifiers_in("-W turns warnings into errors; -w FILE writes them to FILE") == ["-W", "-w"]
    assert chunk_identifiers(text="see linkcheck_timeout", heading_path="Options > linkcheck_workers") == [
        "linkcheck_workers", "linkcheck_timeout"]


# --- matching ----------------------------------------------------------------------------------


def _chunk(workspace, path: str, text: str, heading: str) -> Chunk:
    document = DocumentFactory(workspace=workspace, path=path, title=path.rsplit("/", 1)[-1], chunk_count=1)
    return ChunkFactory(document=document, text=text, heading_path=heading)


def _topic_pages(workspace, count: int = 6) -> None:
    """Pages about timeouts and rate limits in general: what a stemmed full-text match also finds."""
    for n in range(count):
        _chunk(workspace, f"/guides/topic-{n}.md",
               f"Timeouts and limits, part {n}: a slow upstream times out, the proxy waits, the rate limit "
               f"resets every minute and the remaining budget is shown to clients.", f"Guide {n} > Timeouts")


def test_a_setting_header_and_option_named_in_the_question_find_the_entry_that_defines_them(workspace):
    _topic_pages(workspace)
    setting = _chunk(workspace, "/ref/config.md", GATEWAY_SETTING, "Configuration > proxy.upstream_timeout")
    header = _chunk(workspace, "/ref/headers.md", GATEWAY_HEADERS, "Reference > Response headers")
    option = _chunk(workspace, "/man/sphinx-build.rst", SPHINX_KEEP_GOING, "sphinx-build > Options")
    assert setting.identifiers[:2] == ["proxy.upstream_timeout", "upstream_timeout"]

    cases = [
        ("How long does proxy.upstream_timeout wait?", setting),
        ("What does X-RateLimit-Remaining tell a client?", header),
        ("Do I still need --keep-going?", option),
    ]
    for question, expected in cases:
        results = search(question, options(workspace, mode="lexical", top_k=3))
        assert results[0].chunk_id == expected.pk, question
        assert results.stats["identifiers"], question
        without = search(question, options(workspace, mode="lexical", top_k=3, identifiers=False))
        assert "identifiers" not in without.stats


def test_identifiers_match_whole_tokens_not_their_stems(workspace):
    """`upstream_timeout` is not "upstream" and "timeout": the topic pages hold both words, not the name."""
    _topic_pages(workspace)
    setting = _chunk(workspace, "/ref/config.md", GATEWAY_SETTING, "Configuration")
    from rag.retrieval import lexical
    from rag.retrieval.filters import build_scope
    from django.utils import timezone
    from rag.retrieval.options import SearchFilters

    from rag.retrieval.vectors import read_together

    scope = build_scope(workspace_id=workspace.pk, filters=SearchFilters(), now=timezone.now())
    whole, part = read_together([lexical.identifier_read(scope, ["upstream_timeout"], 10),
                                 lexical.identifier_read(scope, ["timeout"], 10)])
    assert [chunk_id for chunk_id, _weight in whole] == [setting.pk]
    assert part == []


def _queries_of(workspace, question: str, **changes) -> tuple[list, list[str]]:
    with CaptureQueriesContext(connection) as captured:
        results = list(search(question, options(workspace, **changes)))
    return results, [query["sql"] for query in captured.captured_queries]


def test_the_identifier_query_runs_only_for_an_identifier_the_workspace_holds(workspace):
    _topic_pages(workspace)
    setting = _chunk(workspace, "/ref/config.md", GATEWAY_SETTING, "Configuration > proxy.upstream_timeout")

    absent = search("How long does the proxy wait for slow_backend_timeout?", options(workspace, top_k=3))
    _, absent_sql = _queries_of(workspace, "How long does the proxy wait for slow_backend_timeout?", top_k=3)
    named = search("How long does proxy.upstream_timeout wait?", options(workspace, top_k=3))
    _, named_sql = _queries_of(workspace, "How long does proxy.upstream_timeout wait?", top_k=3)

    assert absent.stats["identifiers"] == []
    assert not any("c.identifiers && " in sql for sql in absent_sql)
    assert named.stats["identifiers"] == ["proxy.upstream_timeout", "upstream_timeout"]
    assert sum("c.identifiers && " in sql for sql in named_sql) == 1
    assert named[0].chunk_id == setting.pk


def test_a_search_costs_the_same_queries_for_two_results_or_ten(workspace):
    """No query per result: hydration, records and details are fetched for all results at once."""
    license_workspace(workspace)
    topics = ["billing", "mirrors", "backups", "webhooks", "tokens", "exports", "audits", "quotas", "alerts",
              "regions", "caching", "logging", "tenants", "sessions"]
    for n, topic in enumerate(topics):
        _chunk(workspace, f"/guides/{topic}.md", f"The {topic} service of release {n} resets its rate limit "
               f"every {n + 2} minutes; {topic} clients see the remaining {topic} budget.", f"Guide > {topic}")
    question = "When does the rate limit of the service reset?"
    search(question, options(workspace, top_k=2))  # caches of the first search (expansions, licence) filled

    few, few_sql = _queries_of(workspace, question, top_k=2, include_variant_metadata=True)
    many, many_sql = _queries_of(workspace, question, top_k=10, include_variant_metadata=True)

    assert (len(few), len(many)) == (2, 10)
    assert len(many_sql) == len(few_sql)


def test_a_heading_that_names_the_identifier_lifts_its_chunk(workspace):
    mention = _chunk(workspace, "/guide/builders.md",
                     "The linkcheck builder reads linkcheck_timeout and linkcheck_workers.", "Guide > Builders")
    entry = _chunk(workspace, "/ref/conf.md", "A timeout value, in seconds, for the linkcheck builder "
                   "(linkcheck_timeout).", "Configuration > linkcheck_timeout")
    question = "What is linkcheck_timeout?"
    with override_settings(IDENTIFIER_HEADING_BOOST=1.0):
        plain = [r.chunk_id for r in search(question, options(workspace, top_k=2, rerank=False))]
    with override_settings(IDENTIFIER_HEADING_BOOST=1.5):
        boosted = [r.chunk_id for r in search(question, options(workspace, top_k=2, rerank=False))]
    assert boosted[0] == entry.pk
    assert set(plain) == {mention.pk, entry.pk}


# --- the domain dictionary ---------------------------------------------------------------------


def test_the_dictionary_expands_the_lexical_query_of_its_own_workspace_only(workspace):
    other = DocumentFactory().workspace
    QueryExpansion.objects.create(workspace=workspace, term="capacity", expansions="throughput, max concurrent workflows")
    QueryExpansion.objects.create(workspace=other, term="capacity", expansions="disk quota")
    assert expansions_for("What is the Capacity of a node?", workspace_id=workspace.pk) == [
        "throughput", "max concurrent workflows"]
    assert expansions_for("capacitys", workspace_id=workspace.pk) == []

    target = _chunk(workspace, "/ref/limits.md", "Each worker runs at most 200 concurrent workflows.", "Limits")
    _chunk(workspace, "/guide/other.md", "Nodes join the cluster through the admin port.", "Cluster")
    question = "what is the capacity"
    assert [r.chunk_id for r in search(question, options(workspace, mode="lexical", top_k=3))] == [target.pk]
    assert list(search(question, options(workspace, mode="lexical", top_k=3, expansion=False))) == []


def test_the_dictionary_is_edited_in_the_admin(staff_client, workspace):
    response = staff_client.post("/admin/rag/queryexpansion/add/", {
        "workspace": workspace.pk, "term": "capacity", "expansions": "throughput, max concurrent workflows"})
    assert response.status_code == 302, response.content[:500]
    entry = QueryExpansion.objects.get(workspace=workspace, term="capacity")
    response = staff_client.post(f"/admin/rag/queryexpansion/{entry.pk}/change/", {
        "workspace": workspace.pk, "term": "capacity", "expansions": "throughput"})
    assert response.status_code == 302
    assert expansions_for("capacity?", workspace_id=workspace.pk) == ["throughput"]
    listing = staff_client.get("/admin/rag/queryexpansion/")
    assert b"throughput" in listing.content


# --- weighted fusion ---------------------------------------------------------------------------


def test_fusion_weights_change_the_order_and_keep_the_scale():
    ranked = {"semantic": [1, 2], "lexical": [2, 1]}
    assert [f.chunk_id for f in reciprocal_rank_fusion(ranked, k=60, weights={"lexical": 2.0})] == [2, 1]
    assert [f.chunk_id for f in reciprocal_rank_fusion(ranked, k=60, weights={"semantic": 2.0})] == [1, 2]
    top = reciprocal_rank_fusion({"semantic": [7], "lexical": [7]}, k=60, weights={"lexical": 3.0})[0]
    assert top.score == pytest.approx(1.0)
    assert reciprocal_rank_fusion({"semantic": [1], "lexical": [2]}, k=60, weights={"lexical": 0.0})[0].chunk_id == 1


def test_search_reads_the_fusion_weights_from_settings(workspace):
    _chunk(workspace, "/a.md", "rotate the signing key", "A")
    _chunk(workspace, "/b.md", "signing keys rotate yearly; rotate them", "B")
    with override_settings(RRF_WEIGHTS={"semantic": 1.0, "lexical": 0.0, "identifiers": 0.0}):
        semantic_only = search("rotate the signing key", options(workspace, top_k=2, rerank=False))
    assert all(set(r.ranks) == {"semantic"} or "lexical" in r.ranks for r in semantic_only)
    assert semantic_only[0].score == pytest.approx(1.0)  # normalized by the weights that count
    with override_settings(RRF_WEIGHTS={"semantic": 0.0, "lexical": 1.0, "identifiers": 0.0}):
        lexical_only = search("rotate the signing key", options(workspace, top_k=2, rerank=False))
    assert lexical_only[0].score == pytest.approx(1.0)
    assert lexical_only[0].ranks.get("lexical") == 1


# --- sentence evidence -------------------------------------------------------------------------


def test_term_evidence_prefers_the_sentence_that_holds_the_rare_terms_together():
    from rag.retrieval.rerank import best_sentence_term_cover

    terms = [("timeout", 3.0), ("linkcheck", 2.0), ("default", 0.5)]
    scattered = "The linkcheck builder checks links. Each request may hit a timeout. Defaults vary."
    together = "Unrelated intro line here. The default linkcheck timeout is 30 seconds."
    covers = best_sentence_term_cover([scattered, together], ["Builders", "Options"], terms=terms, identifiers=[])
    assert covers[1] == pytest.approx(1.0)
    assert covers[0] == pytest.approx(3.0 / 5.5)
    with_identifier = best_sentence_term_cover(
        ["See the options below for tuning."], ["Configuration > linkcheck_timeout"],
        terms=terms, identifiers=["linkcheck_timeout"])
    assert with_identifier[0] > 0.5  # the heading names the identifier and holds two of the terms
