"""Retrieval: `search(query, SearchOptions) -> SearchResultSet`, used by chat, the CLI and the JSON API."""

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
