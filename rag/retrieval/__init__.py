"""Retrieval: `search(query, SearchOptions) -> SearchResultSet`, used by chat, the CLI and the JSON API."""

from rag.retrieval.options import SearchFilters, SearchOptionError, SearchOptions, options_from_params
from rag.retrieval.results import SearchResult, SearchResultSet
from rag.retrieval.search import search, search_for_chat

__all__ = [
    "SearchFilters",
    "SearchOptionError",
    "SearchOptions",
    "SearchResult",
    "SearchResultSet",
    "options_from_params",
    "search",
    "search_for_chat",
]
