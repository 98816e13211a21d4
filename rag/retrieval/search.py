"""`search(query, options)`: the one retrieval entry point (chat, `manage.py search`, the JSON API).

    scope (SQL filters, workspace always)
      -> semantic kNN (HNSW or exact, see vectors.py) + lexical (rare terms, see lexical.py;
         with the workspace's domain expansions, expansion.py) + whole-token identifiers
         (identifiers.py) + when an LLM is configured and SEARCH_LLM_REWRITE is on, the
         semantic list of the model's rewrite of the question (rewrite.py; skipped on failure):
         planned, then read in one round trip, a change question's two sides together (candidates.py)
      -> weighted reciprocal rank fusion (k = RRF_K, weights RRF_WEIGHTS)
      -> heading boost for chunks whose heading names one of the question's identifiers
      -> sentence-level rerank of the head (rerank.py)
      -> doc-type soft boost (query classifier, or the user's choice)
      -> recency decay (trend queries only; ages from the newest document in scope)
      -> version-aware (versions.py): a superseded chunk gives its slot to its newest
         counterpart, a retired one is demoted; a question about a version or a date is
         scoped to the documents current then, a change question searches both versions
      -> canonical-aware collapse (licensed; otherwise searched as if off, and said so):
         one result per canonical record, and the newer side of a pending contradiction
         in the place of the older one
      -> near-duplicate collapse across documents (keep the newest)
      -> top_k; for the results returned (details.py), record figures, and variant metadata and provenance
         when asked and licensed
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from django.conf import settings
from django.db.models import Max
from django.utils import timezone

from licensing.features import PROVENANCE, RETRIEVAL_INTEGRATION, VARIANT_METADATA
from licensing.services import feature_cache, has_feature
from rag import embeddings
from rag.retrieval import metrics, vectors
from rag.retrieval.rerank import identifier_pattern, rerank_head
from rag.retrieval.canonical import collapse_to_canonicals, supersede_conflicts
from rag.retrieval.details import attach_details, option_gate
from rag.index_cache import generation_read_once
from rag.releases import VersionPlan, newest_release_pages, release_label, release_labels
from rag.models import Chunk
from rag.retrieval.candidates import ScopeLists, lists_plan, lists_read
from rag.retrieval.filters import Scope, build_scope, filters_narrow_documents, scoped_documents
from rag.retrieval.fusion import reciprocal_rank_fusion
from rag.retrieval.neardup import collapse_near_duplicates
from rag.retrieval.options import SearchFilters, SearchOptionError, SearchOptions
from rag.retrieval.ranking import (
    classify_query,
    doc_type_keywords,
    doc_type_multiplier,
    is_trend_query,
    recency_factor,
    with_recency,
)
from rag.retrieval.results import APPLIED, OFF, UNLICENSED, ChangeSide, SearchResult, SearchResultSet, interleaved
from rag.retrieval.subjects import demote_other_subjects, different_subjects, subjects_named, workspace_subjects
from rag.retrieval.versions import (
    newest_release_first,
    past_release_notes_demoted,
    scoped_options,
    version_plan,
)

logger = logging.getLogger("rag.retrieval")

# Near-duplicates are looked for among this many candidates per result asked for; more
# only if collapsing leaves too few. Pairs grow with the square of the window.
NEAR_DUPLICATE_WINDOW_PER_RESULT = 4
MAX_QUERY_CHARS = 2000


@dataclass
class _Candidate:
    chunk_id: int
    row: dict[str, Any]
    score: float
    ranks: dict[str, int] = field(default_factory=dict)
    collapsed: list[int] = field(default_factory=list)
    replaced_chunk_id: int | None = None  # the superseded chunk whose slot this one took


class _Clock:
    def __init__(self) -> None:
        self.started = self._last = time.perf_counter()
        self.laps: dict[str, float] = {}

    def lap(self, name: str) -> None:
        now = time.perf_counter()
        self.laps[name] = round((now - self._last) * 1000, 2)
        self._last = now

    @property
    def total_seconds(self) -> float:
        return time.perf_counter() - self.started


def search(query: str, options: SearchOptions) -> SearchResultSet:
    """Ranked results for `query` within `options.workspace`; raises SearchOptionError on bad input."""
    # Its gates are decided once, however many scopes it searches (outside a request, every has_feature
    # would read the licenses and check their signatures again), and the workspace's generation read once: what
    # every question reads alike (calendar, labels, subjects, term statistics) is kept per generation.
    with feature_cache(), generation_read_once():
        return _search_question(query, options)


def _search_question(query: str, options: SearchOptions) -> SearchResultSet:
    clock = _Clock()
    query = " ".join((query or "").split())
    if not query:
        raise SearchOptionError("the query is empty")
    if len(query) > MAX_QUERY_CHARS:
        raise SearchOptionError(f"the query is longer than {MAX_QUERY_CHARS} characters")
    options = options.resolved()
    embeddings.index_encoder_check(workspace_id=options.workspace_id)  # the index's model is the one asked with
    plan = version_plan(query, options)
    clock.lap("plan_ms")
    if plan.mode == "present":
        result_set = _search(query, options, clock, history=plan.history)
    elif plan.mode == "as_of":
        (_label, documents), = plan.scopes
        result_set = _search(plan.query, scoped_options(options, documents, version=plan.as_of_version,
                                                        date=plan.as_of_date), clock)
    else:
        sides = _search_each([(plan.query, scoped_options(options, documents, version=label))
                              for label, documents in plan.scopes])
        # Each release keeps the answer's full width: a change is told from each side's own statements, and the
        # entry that states a value in both releases is seldom both sides' first result.
        result_set = interleaved(sides, top_k=options.top_k * len(sides))
        clock.lap("change_sides_ms")
        result_set.stats["timings_ms"] = clock.laps  # the whole question's, both sides in one lap
        # Which result answers for which version, oldest first: the answer states each side.
        result_set.change_sides = tuple(ChangeSide(label, tuple(r.chunk_id for r in side))
                                        for (label, _documents), side in reversed(list(zip(plan.scopes, sides))))
        result_set.stats["change_sides"] = [side.describe() for side in result_set.change_sides]
    if plan.latest:
        _newest_release_first(result_set, plan, query, options)
        clock.lap("newest_release_ms")
    attach_details(result_set, options)
    clock.lap("details_ms")
    result_set.plan, result_set.stats["versions"] = plan, plan.describe()
    result_set.query = query
    _one_label_per_release(result_set, workspace_id=options.workspace_id)
    clock.lap("labels_ms")
    result_set.stats["duration_ms"] = round(clock.total_seconds * 1000, 2)
    _observe(result_set, workspace_id=options.workspace_id, duration=clock.total_seconds)
    return result_set


NEWEST_RELEASE_RESULTS = 2  # the newest release's own page leads; the usual results follow


def _newest_release_first(result_set: SearchResultSet, plan: VersionPlan, query: str, options: SearchOptions) -> None:
    """"What's new in the latest release", "the last 4.2 patch", "the current LTS": the page that speaks for that
    release (by version order in the calendar) leads, found within it by the question's words."""
    pages = newest_release_pages(workspace_id=options.workspace_id, question=query, line=plan.newest_release_line,
                                 long_term=plan.latest == "lts")
    if options.filters.document_ids:
        pages = [pk for pk in pages if pk in set(options.filters.document_ids)]
    result_set.stats["newest_release_pages"] = pages
    if not pages:
        return
    own = _search(plan.query, scoped_options(options, frozenset(pages)), _Clock(), history=True)
    lead = list(own)[:NEWEST_RELEASE_RESULTS]
    chosen = {result.chunk_id for result in lead}
    result_set[:] = (lead + [r for r in result_set if r.chunk_id not in chosen])[:options.top_k]


def _search(query: str, options: SearchOptions, clock: _Clock, *, history: bool = True) -> SearchResultSet:
    """One ranked search over one scope: the body of `search` once the question's versions are resolved
    (`history`: the question asks what changed or is new, so old releases' own notes keep their rank)."""
    scoped = _scope(query, options, clock)
    (ranked,) = lists_read([scoped.lists], [options], [scoped.stats])
    clock.lap("candidates_ms")
    return _ranked_search(scoped, ranked, history=history)


def _search_each(searches: list[tuple[str, SearchOptions]]) -> list[SearchResultSet]:
    """Several scopes' searches (a change question's sides) whose candidate lists are read in one round trip."""
    scoped = [_scope(query, options, _Clock()) for query, options in searches]
    ranked = lists_read([one.lists for one in scoped], [options for _query, options in searches],
                        [one.stats for one in scoped])
    return [_ranked_search(one, lists) for one, lists in zip(scoped, ranked)]


@dataclass
class _Scoped:
    """A search up to its candidate lists: the gates, the scope, the subjects named and the lists planned."""

    query: str
    options: SearchOptions
    clock: _Clock
    now: datetime
    licensed: bool
    canonical_filtering: str
    scope: Scope
    stats: dict[str, Any]
    subjects: dict[str, list[int]]
    lists: ScopeLists


def _scope(query: str, options: SearchOptions, clock: _Clock) -> _Scoped:
    workspace_id = options.workspace_id
    now = timezone.now()

    licensed = has_feature(workspace_id, RETRIEVAL_INTEGRATION)
    canonical_filtering = OFF if not options.respect_canonicals else (APPLIED if licensed else UNLICENSED)
    variant_gate = option_gate(workspace_id, VARIANT_METADATA, options.include_variant_metadata)
    provenance_gate = option_gate(workspace_id, PROVENANCE, options.include_provenance)
    clock.lap("gates_ms")
    scope = build_scope(workspace_id=workspace_id, filters=options.filters, now=now)
    clock.lap("scope_ms")
    stats: dict[str, Any] = {
        "mode": options.mode,
        "chunks_in_scope": scope.chunks_in_scope,
        "selectivity": round(scope.selectivity, 6),
        "variant_metadata": variant_gate,
        "provenance": provenance_gate,
    }

    subjects = subjects_named(query, workspace_subjects(workspace_id=workspace_id)) if options.analyse_query else {}
    stats["subjects"] = sorted(subjects)
    clock.lap("subjects_ms")
    lists = lists_plan(query, options, scope, stats, subjects=subjects, now=now)
    clock.lap("lists_plan_ms")
    return _Scoped(query, options, clock, now, licensed, canonical_filtering, scope, stats, subjects, lists)


def _ranked_search(scoped: _Scoped, ranked: dict[str, list[int]], *, history: bool = True) -> SearchResultSet:
    """The search's candidate lists fused, hydrated, reranked, made version-aware and collapsed."""
    query, options, clock, stats, subjects = scoped.query, scoped.options, scoped.clock, scoped.stats, scoped.subjects
    now = scoped.now
    workspace_id, licensed, canonical_filtering = options.workspace_id, scoped.licensed, scoped.canonical_filtering
    scope, query_vector = scoped.scope, scoped.lists.query_vector
    fused = reciprocal_rank_fusion(ranked, k=settings.RRF_K, weights=settings.RRF_WEIGHTS)
    canonical_aware = canonical_filtering == APPLIED
    present = options.version_aware and not (options.as_of_version or options.as_of_date)
    head = max(options.top_k * NEAR_DUPLICATE_WINDOW_PER_RESULT, 20)  # where a replacement can still reach top_k
    rows = vectors.hydrate([f.chunk_id for f in fused], workspace_id=workspace_id, query_vector=query_vector,
                       with_records=licensed, canonicals_within=scope if canonical_aware else None,
                       successors_of=[f.chunk_id for f in fused[:head]] if present else ())
    candidates = [_Candidate(f.chunk_id, rows[f.chunk_id], f.score, f.ranks) for f in fused if f.chunk_id in rows]
    stats["candidates"] = len(candidates)
    clock.lap("hydrate_ms")

    _rerank(query, candidates, options, stats, scope_filters=options.filters, now=now, query_vector=query_vector)
    if subjects:
        demote_other_subjects(candidates, {pk for documents in subjects.values() for pk in documents},
                              demotion=settings.SUBJECT_OTHER_DEMOTION)
    clock.lap("rerank_ms")
    # The newer release's counterparts and near-duplicate collapse both compare the head (with the newer and
    # canonical chunks that may take places in it): one read of its pairs.
    assert options.dedup_threshold is not None  # resolved
    compared = {pk for c in candidates[:2 * head]
                for pk in (c.chunk_id, c.row["superseded_by"], c.row["record_canonical_chunk_id"]) if pk is not None}
    with vectors.near_duplicate_pairs_within(sorted(compared), threshold=min(settings.RELEASE_COUNTERPART_THRESHOLD,
                                                                     options.dedup_threshold)):
        if options.version_aware:
            if present:
                candidates = _present(candidates, options, stats, rows=rows, now=now)
                if not history:
                    stats["past_release_notes_demoted"] = past_release_notes_demoted(
                        candidates, workspace_id=workspace_id, demotion=settings.PAST_RELEASE_NOTES_DEMOTION)
                clock.lap("present_ms")
            candidates = newest_release_first(candidates, stats, workspace_id=workspace_id,
                                              as_of_version=options.as_of_version,
                                              window=max(options.top_k * NEAR_DUPLICATE_WINDOW_PER_RESULT, 20))
            clock.lap("releases_ms")
        candidates = _collapse(candidates, options, stats, rows=rows, canonical_aware=canonical_aware)
    clock.lap("collapse_ms")

    results = [_result(candidate) for candidate in candidates[: options.top_k]]
    stats["timings_ms"] = clock.laps
    return SearchResultSet(  # without record details: `search` adds them to the results it returns
        results,
        query=query,
        canonical_filtering=canonical_filtering,
        options=options.describe(),
        filters=options.filters.describe(now=now),
        stats=stats,
    )


def _rerank(query: str, candidates: list[_Candidate], options: SearchOptions, stats: dict[str, Any], *,
            scope_filters: SearchFilters, now: datetime, query_vector: list[float] | None) -> None:
    """Identifier heading boost, sentence rerank, doc-type boost, then recency for trend queries; best first."""
    assert options.doc_type_boost is not None and options.recency_half_life_days is not None \
        and options.recency_weight is not None  # resolved
    wanted = identifier_pattern(stats.get("identifiers") or ())
    if wanted and settings.IDENTIFIER_HEADING_BOOST != 1.0:
        for candidate in candidates:
            if wanted.search(candidate.row["heading_path"] or ""):
                candidate.score *= settings.IDENTIFIER_HEADING_BOOST
        candidates.sort(key=lambda c: -c.score)
    # Hybrid only: mode="semantic" promises the kNN order, mode="lexical" the full-text one.
    if options.rerank and options.mode == "hybrid" and settings.RERANK_SENTENCE_WEIGHT > 0:
        stats["rerank"] = rerank_head(candidates, query_vector=query_vector, depth=settings.RERANK_DEPTH,
                                      sentence_weight=settings.RERANK_SENTENCE_WEIGHT,
                                      evidence=settings.RERANK_EVIDENCE, terms=stats.get("term_idf") or (),
                                      identifiers=stats.get("identifiers") or ())
    boosted: list[str] = []
    if options.doc_type_boost != 1.0:
        boosted = list(options.doc_type_override) or classify_query(query, doc_type_keywords())
        for candidate in candidates:
            candidate.score *= doc_type_multiplier(candidate.row["doc_type"], boosted, options.doc_type_boost)
    stats["doc_types_boosted"] = boosted
    stats["doc_type_source"] = "user" if options.doc_type_override else "classifier"
    trend = options.recency == "on" or (options.recency == "auto" and is_trend_query(query))
    stats["recency"] = trend
    if trend:
        # Ages count from the newest document in scope, not from today: a corpus last edited months
        # ago still has a newest release.
        newest = scoped_documents(workspace_id=options.workspace_id, filters=scope_filters, now=now) \
            .aggregate(newest=Max("doc_date"))["newest"] or now
        stats["recency_reference"] = newest.isoformat()
        for candidate in candidates:
            freshness = recency_factor(
                candidate.row["doc_date"], half_life_days=options.recency_half_life_days, now=newest
            )
            candidate.score = with_recency(candidate.score, freshness, weight=options.recency_weight)
    candidates.sort(key=lambda c: -c.score)


def _present(candidates: list[_Candidate], options: SearchOptions, stats: dict[str, Any], *,
             rows: dict[int, dict[str, Any]], now: datetime) -> list[_Candidate]:
    """Superseded chunks give their slot to their newest counterpart; retired ones are demoted.

    The counterparts of the head came with the candidates (hydrate's `successors_of`); one further
    down, that never made the head, is demoted like a retired passage instead of fetched.
    """
    successors = {row["document_id"] for pk, row in rows.items() if not row.get("candidate", True)}
    if successors and filters_narrow_documents(options.filters, now=now):  # newer text outside the filters stays out
        in_scope = set(scoped_documents(workspace_id=options.workspace_id, filters=options.filters, now=now)
                       .filter(pk__in=successors).values_list("pk", flat=True))
        outside = [pk for pk, row in rows.items() if not row.get("candidate", True) and row["document_id"] not in in_scope]
        for pk in outside:
            del rows[pk]
    kept: dict[int, _Candidate] = {}
    replaced = demoted = 0
    for candidate in candidates:  # best first
        lineage, newer = candidate.row["lineage"], candidate.row["superseded_by"]
        if lineage == Chunk.Lineage.SUPERSEDED and newer in rows and not rows[newer]["archived"]:
            replaced += 1
            slot = _Candidate(newer, rows[newer], candidate.score, candidate.ranks, [candidate.chunk_id])
            slot.replaced_chunk_id = candidate.chunk_id
            candidate = slot
        elif lineage in (Chunk.Lineage.RETIRED, Chunk.Lineage.SUPERSEDED):
            candidate.score *= settings.RETIRED_DEMOTION
            demoted += 1
        if candidate.chunk_id in kept:  # the newer text already holds a better slot
            kept[candidate.chunk_id].collapsed.append(candidate.replaced_chunk_id or candidate.chunk_id)
            continue
        kept[candidate.chunk_id] = candidate
    stats["superseded_replaced"], stats["retired_demoted"] = replaced, demoted
    return sorted(kept.values(), key=lambda c: -c.score)


def _collapse(candidates: list[_Candidate], options: SearchOptions, stats: dict[str, Any], *,
              rows: dict[int, dict[str, Any]], canonical_aware: bool) -> list[_Candidate]:
    """One place per canonical record and per contradiction (when applied), then per near-duplicate group."""
    stats["variants_filtered"] = stats["canonical_hits"] = stats["near_duplicates_removed"] = 0
    stats["superseded_by_newer"] = 0
    if canonical_aware:
        collapse = collapse_to_canonicals(candidates, rows=rows, substitute=_substitute)
        candidates, stats["superseded_by_newer"] = supersede_conflicts(collapse.candidates, take_place=_take_place)
        stats["variants_filtered"] = collapse.variants_filtered
        stats["canonical_hits"] = collapse.canonical_hits
    if options.dedup:
        assert options.dedup_threshold is not None  # resolved
        candidates, stats["near_duplicates_removed"] = _collapse_near_duplicates(
            candidates, top_k=options.top_k, threshold=options.dedup_threshold
        )
    return candidates


def _substitute(slot: _Candidate, row: dict[str, Any]) -> _Candidate:
    return _Candidate(row["chunk_id"], row, slot.score, {}, [])


def _take_place(survivor: _Candidate, slot: _Candidate, others: list[_Candidate]) -> _Candidate:
    survivor.score = slot.score
    gone = {chunk_id for other in others for chunk_id in (other.chunk_id, *other.collapsed)}
    survivor.collapsed = sorted(set(survivor.collapsed) | gone)
    return survivor


def _collapse_near_duplicates(
    candidates: list[_Candidate], *, top_k: int, threshold: float
) -> tuple[list[_Candidate], int]:
    window = max(top_k * NEAR_DUPLICATE_WINDOW_PER_RESULT, 20)
    while True:
        head, tail = candidates[:window], candidates[window:]
        rows = {c.chunk_id: c.row for c in head}
        pairs = [(a, b, s) for a, b, s in vectors.near_duplicate_pairs(list(rows), threshold=threshold)
                 if not different_subjects(rows[a], rows[b])]
        collapsed = collapse_near_duplicates(
            head, pairs, chunk_id=lambda c: c.chunk_id, doc_date=lambda c: c.row["doc_date"], take_place=_take_place
        )
        if len(collapsed.kept) >= top_k or not tail:
            break
        window *= 2  # too many duplicates near the top: look further down
    return collapsed.kept + tail, len(collapsed.removed)


def _one_label_per_release(results: list[SearchResult], *, workspace_id: int) -> None:
    """"3.0.0 · current" in one source and "3.0 · current" in the next would read as two releases."""
    shown = {label for result in results for label in (result.version_label, result.superseded_by_label) if label}
    if not shown:
        return
    releases = release_labels(workspace_id=workspace_id, labels=shown)
    for result in results:
        result.version_label = release_label(result.version_label, releases)
        result.superseded_by_label = release_label(result.superseded_by_label, releases)


# Result fields a hydrated row carries under the same name (vectors.hydrate); the others are worked out here.
_ROW_FIELDS = ("document_id", "path", "title", "doc_date", "doc_type", "heading_path", "text", "similarity",
               "chunk_index", "source_type", "family_id", "is_latest_version", "lineage", "superseded_by", "subject")


def _result(candidate: _Candidate) -> SearchResult:
    row = candidate.row
    record_id = row.get("record_id")
    return SearchResult(
        chunk_id=candidate.chunk_id,
        score=candidate.score,
        page=row.get("page"),
        canonical_record_id=record_id,
        is_variant=record_id is not None and row.get("record_canonical_chunk_id") != candidate.chunk_id,
        ranks=candidate.ranks,
        collapsed_chunk_ids=candidate.collapsed,
        superseded_by_label=row["superseded_by_label"] or "",
        version_label=row["release_label"] or "",  # its own label, else the release inferred for it
        replaced_chunk_id=candidate.replaced_chunk_id,
        **{name: row[name] for name in _ROW_FIELDS},
    )


def _observe(result_set: SearchResultSet, *, workspace_id: int, duration: float) -> None:
    metrics.observe_search(result_set, duration_seconds=duration)
    stats = result_set.stats
    logger.info(
        "search",
        extra={
            "workspace_id": workspace_id,
            "mode": stats["mode"],
            "query_chars": len(result_set.query),
            "results": len(result_set),
            "canonical_filtering": result_set.canonical_filtering,
            "semantic_path": stats.get("semantic_path", "-"),
            "lexical_terms": len((stats.get("lexical") or {}).get("terms", [])),
            "candidates": stats["candidates"],
            "variants_filtered": stats["variants_filtered"],
            "superseded": stats["superseded_by_newer"],
            "near_duplicates_removed": stats["near_duplicates_removed"],
            "doc_types_boosted": ",".join(stats["doc_types_boosted"]) or "-",
            "recency": stats["recency"],
            "duration_ms": stats["duration_ms"],
        },
    )

