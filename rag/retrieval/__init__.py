"""Retrieval: `search(query, SearchOptions) -> SearchResultSet`, used by chat, the CLI and the JSON API.

Also `embed_with_cache` (rag.embeddings.cache), for callers that rank passages of the results themselves
(chat's answer units): they encode through the same embedding cache as indexing.
"""

from rag.embeddings.cache import embed_with_cache
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
    "embed_with_cache",
    "options_from_params",
    "parse_datetime_bound",
    "search",
]
