"""Retrieval: `search(query, SearchOptions) -> SearchResultSet`, used by chat, the CLI and the JSON API.

Callers that rank passages of the results themselves (chat's answer units) encode them through
rag.embeddings (`embed_with_cache`), the same embedding cache as indexing.
"""

from rag.retrieval.options import (
    SearchFilters,
    SearchOptionError,
    SearchOptions,
    options_from_params,
    parse_datetime_bound,
)
from rag.retrieval.results import SearchResult, SearchResultSet
from rag.retrieval.search import search

__all__ = [
    "SearchFilters",
    "SearchOptionError",
    "SearchOptions",
    "SearchResult",
    "SearchResultSet",
    "options_from_params",
    "parse_datetime_bound",
    "search",
]
