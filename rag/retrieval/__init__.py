"""Retrieval: `search(query, SearchOptions) -> SearchResultSet`, used by chat, the CLI and the JSON API.

Callers that rank passages of the results themselves (chat's answer units) encode them through
rag.embeddings (`embed_with_cache`), the same embedding cache as indexing.
"""

from rag.retrieval.expansion import workspace_vocabulary
from rag.retrieval.identifiers import chunk_identifiers
from rag.retrieval.options import (
    DOC_TYPE_MODES,
    MAX_VERSION_LABEL,
    MODES,
    RECENCY_MODES,
    SearchFilters,
    SearchOptionError,
    SearchOptions,
    SearchParams,
    parse_datetime_bound,
    validation_message,
)
from rag.retrieval.results import UNLICENSED, ChangeSide, SearchResult, SearchResultSet, chunk_url_path
from rag.retrieval.search import search
from rag.retrieval.subjects import subjects_named
from rag.retrieval.vectors import NeighbourPlan, chunk_neighbours, close_pairs, neighbour_plan, pair_similarities

__all__ = [
    "DOC_TYPE_MODES",
    "MAX_VERSION_LABEL",
    "MODES",
    "NeighbourPlan",
    "RECENCY_MODES",
    "UNLICENSED",
    "ChangeSide",
    "SearchFilters",
    "SearchOptionError",
    "SearchOptions",
    "SearchParams",
    "SearchResult",
    "SearchResultSet",
    "chunk_identifiers",
    "chunk_url_path",
    "chunk_neighbours",
    "close_pairs",
    "neighbour_plan",
    "pair_similarities",
    "parse_datetime_bound",
    "search",
    "subjects_named",
    "validation_message",
    "workspace_vocabulary",
]
