"""A scope's candidate lists (semantic kNN, whole-token identifiers, full text, a named subject's passages), planned
first and read afterwards, so that every scope a question searches is read in one round trip: a change question's
two sides share one candidate read (vectors.read_together). On a busy machine a round trip, not the statement,
is what a list costs.

Planning reads nothing but what is kept per generation (the question's term statistics, the dictionary); the
optional LLM rewrite's list is read on its own after the others, as it waits for the model anyway.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any

from rag import embeddings
from rag.retrieval import lexical, vectors
from rag.retrieval.expansion import expansions_for
from rag.retrieval.filters import Scope, build_scope
from rag.retrieval.identifiers import identifiers_in
from rag.retrieval.options import SearchOptions
from rag.retrieval.rewrite import rewrite_enabled, rewrite_or_none

# The order lists are fused in (ties in fusion go to the list named first).
LIST_ORDER = ("semantic", "rewrite", "identifiers", "lexical", "subject")


@dataclass
class ScopeLists:
    """One scope's lists as planned: the statements to read, by list name, and the vector lists' plans (an HNSW
    list that comes back short is completed by an exact scan)."""

    query: str
    scope: Scope
    pool: int
    query_vector: list[float] | None = None
    reads: dict[str, vectors.CandidateRead] = field(default_factory=dict)
    vector_plans: dict[str, tuple[Scope, vectors.SemanticPlan]] = field(default_factory=dict)
    empty: tuple[str, ...] = ()  # lists the mode asks for that nothing can fill (no rare term, no subject in scope)


def lists_plan(query: str, options: SearchOptions, scope: Scope, stats: dict[str, Any], *,
               subjects: dict[str, list[int]], now: datetime) -> ScopeLists:
    """The lists the mode asks for, as statements not yet sent; the lexical side's choices go into `stats`."""
    assert options.candidate_pool is not None  # `search` resolved the options: no setting is left None
    planned = ScopeLists(query=query, scope=scope, pool=max(options.candidate_pool, options.top_k))
    empty: list[str] = []
    if options.mode in ("hybrid", "semantic"):
        planned.query_vector = list(options.query_embedding) if options.query_embedding \
            else embeddings.encode_query(query)
        _vector_list(planned, "semantic", scope)
    if options.mode in ("hybrid", "lexical"):
        expansions = expansions_for(query, workspace_id=scope.workspace_id) if options.expansion else []
        stats["expansions"] = expansions
        lexical_text = " ".join([query, *expansions])
        wanted = identifiers_in(lexical_text) if options.identifiers else []
        # The identifiers that some chunk of the workspace holds come with the terms (one round trip, kept per
        # generation): a question naming none of them costs no identifier query.
        terms, table_rows, held = lexical.question_terms(lexical_text, workspace_id=scope.workspace_id,
                                                         identifiers=wanted)
        if options.identifiers:
            stats["identifiers"] = held
            if held:
                planned.reads["identifiers"] = lexical.identifier_read(scope, held, planned.pool)
        stats["term_idf"] = [(t.lexeme, round(-math.log(max(t.frequency, 1e-6)), 3)) for t in terms]
        lexical_query = lexical.build_lexical_query(terms, table_rows=table_rows)
        if lexical_query:
            planned.reads["lexical"] = lexical.lexical_read(scope, lexical_query, planned.pool)
        else:
            empty.append("lexical")
        stats["lexical"] = lexical_query.describe() if lexical_query else None
    if subjects and planned.query_vector is not None:
        subject_scope = _subject_scope(subjects, options, now=now)
        if subject_scope is not None:
            _vector_list(planned, "subject", subject_scope)
        else:
            empty.append("subject")
    planned.empty = tuple(empty)
    return planned


def _vector_list(planned: ScopeLists, name: str, scope: Scope) -> None:
    assert planned.query_vector is not None
    plan, planned.reads[name] = vectors.semantic_read(scope, planned.query_vector, planned.pool)
    planned.vector_plans[name] = (scope, plan)


def _subject_scope(subjects: dict[str, list[int]], options: SearchOptions, *, now: datetime) -> Scope | None:
    """The named subjects' own documents within the search's filters; None when none is left."""
    documents = {pk for ids in subjects.values() for pk in ids}
    if options.filters.document_ids:
        documents &= set(options.filters.document_ids)
    if not documents:
        return None
    return build_scope(workspace_id=options.workspace_id, now=now,
                       filters=replace(options.filters, document_ids=tuple(sorted(documents))))


def lists_read(planned: Sequence[ScopeLists], options: Sequence[SearchOptions],
               stats: Sequence[dict[str, Any]]) -> list[dict[str, list[int]]]:
    """Each scope's ranked lists (chunk ids, best first, in fusion order), every scope's statements in one round
    trip."""
    reads = [(index, name, read) for index, one in enumerate(planned) for name, read in one.reads.items()]
    rows = vectors.read_together([read for _index, _name, read in reads])
    found: list[dict[str, list[tuple[int, float]]]] = [{} for _ in planned]
    for (index, name, _read), listed in zip(reads, rows):
        found[index][name] = listed
    return [_ranked(one, found_here, scope_options, scope_stats)
            for one, found_here, scope_options, scope_stats in zip(planned, found, options, stats)]


def _ranked(planned: ScopeLists, found: dict[str, list[tuple[int, float]]], options: SearchOptions,
            stats: dict[str, Any]) -> dict[str, list[int]]:
    ranked: dict[str, list[int]] = {}
    for name in LIST_ORDER:
        if name in planned.vector_plans:
            scope, plan = planned.vector_plans[name]
            assert planned.query_vector is not None
            semantic = vectors.semantic_result(scope, planned.query_vector, planned.pool, plan, found[name])
            ranked[name] = [chunk_id for chunk_id, _ in semantic.rows]
            if name == "semantic":
                stats["semantic_path"], stats["ef_search"] = semantic.path, semantic.ef_search
        elif name in found:
            ranked[name] = [chunk_id for chunk_id, _ in found[name]]
        elif name in planned.empty:
            ranked[name] = []
        elif name == "rewrite" and options.mode == "hybrid" and planned.query_vector is not None \
                and rewrite_enabled():
            rewritten, failure = rewrite_or_none(planned.query)
            stats["rewrite"] = {"query": rewritten, "error": failure}
            if rewritten:
                ranked[name] = [chunk_id for chunk_id, _ in vectors.semantic_candidates(
                    planned.scope, embeddings.encode_query(rewritten), planned.pool).rows]
    return ranked
