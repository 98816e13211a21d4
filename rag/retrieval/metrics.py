"""Prometheus figures of each search (served by the `/metrics` view, rag/metrics.py)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from prometheus_client import Counter, Histogram

if TYPE_CHECKING:
    from rag.retrieval.results import SearchResultSet

SEARCH_DURATION = Histogram(
    "docent_search_duration_seconds",
    "Time spent in rag.retrieval.search, query encoding included.",
    ["canonical_aware"],
    buckets=(0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0),
)
SEARCH_RESULTS = Histogram(
    "docent_search_results",
    "Results returned per search.",
    buckets=(0, 1, 2, 3, 5, 10, 20, 50, 100),
)
VARIANTS_FILTERED = Counter(
    "docent_search_variants_filtered",
    "Candidates left out because their canonical record already had a place in the results.",
)
SUPERSEDED = Counter(
    "docent_search_superseded",
    "Candidates left out because a newer chunk they contradict (pending contradiction) was also a candidate.",
)
NEAR_DUPLICATES_REMOVED = Counter(
    "docent_search_near_duplicates_removed",
    "Candidates left out by the retrieval-time near-duplicate collapse.",
)
RESULTS_TOTAL = Counter("docent_search_results_returned", "Results returned, all searches.", ["canonical_aware"])
CANONICAL_RESULTS = Counter(
    "docent_search_canonical_results",
    "Results that are a canonical record's canonical chunk (canonical-aware searches only).",
)
CANONICAL_HIT_RATE = Histogram(
    "docent_search_canonical_hit_rate",
    "Per canonical-aware search: the share of its results that are canonical records.",
    buckets=(0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0),
)


def observe_search(result_set: SearchResultSet, *, duration_seconds: float) -> None:
    canonical_aware = result_set.canonical_filtering == "applied"
    label = "true" if canonical_aware else "false"
    SEARCH_DURATION.labels(canonical_aware=label).observe(duration_seconds)
    SEARCH_RESULTS.observe(len(result_set))
    RESULTS_TOTAL.labels(canonical_aware=label).inc(len(result_set))
    VARIANTS_FILTERED.inc(result_set.stats.get("variants_filtered", 0))
    SUPERSEDED.inc(result_set.stats.get("superseded_by_newer", 0))
    NEAR_DUPLICATES_REMOVED.inc(result_set.stats.get("near_duplicates_removed", 0))
    if canonical_aware and len(result_set):
        canonical = sum(1 for r in result_set if r.canonical_record_id is not None and not r.is_variant)
        CANONICAL_RESULTS.inc(canonical)
        CANONICAL_HIT_RATE.observe(canonical / len(result_set))
