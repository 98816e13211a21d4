"""A conversation's stored options, as chat's option form writes them, translated into rag's SearchOptions.

The mapping is chat's: rag.retrieval knows only `search(query, SearchOptions)`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rag import retrieval
from rag.retrieval import SearchFilters, SearchOptions, SearchResultSet, parse_datetime_bound

# The date choices of chat's option form, as the date phrases retrieval understands.
CHAT_DATE_PHRASES = {"last_7_days": "last 7 days", "this_month": "this month", "this_year": "this year"}


def chat_search_options(*, workspace: Any, options: dict[str, Any], top_k: int,
                        query_embedding: Sequence[float] | None = None) -> SearchOptions:
    """The SearchOptions for a conversation's options; a bad date raises SearchOptionError."""
    date_choice = options.get("date") or "any"
    doc_type = (options.get("doc_type") or "").strip()
    only_type = bool(doc_type) and options.get("doc_type_mode") == "filter"  # else the type is boosted
    filters = SearchFilters(
        date_phrase=CHAT_DATE_PHRASES.get(date_choice, ""),
        created_after=parse_datetime_bound(options.get("after"), name="after") if date_choice == "after" else None,
        include_archived=bool(options.get("include_archived")),
        doc_types=(doc_type,) if only_type else (),
    )
    return SearchOptions(
        workspace=workspace,
        top_k=top_k,
        filters=filters,
        # "Hide duplicate passages": copies merged into their record (licensed) and near-duplicates collapsed.
        respect_canonicals=bool(options.get("dedup", True)),
        dedup=bool(options.get("dedup", True)),
        include_provenance=bool(options.get("provenance")),
        doc_type_override=(doc_type,) if doc_type and not only_type else (),
        query_embedding=tuple(query_embedding) if query_embedding is not None else None,
        as_of_version=options.get("as_of_version", ""),
        as_of_date=parse_datetime_bound(options.get("as_of_date"), name="as_of_date", end_of_day=True),
    )


def search_for_chat(
    question: str, *, workspace: Any, options: dict[str, Any], top_k: int,
    query_embedding: Sequence[float] | None = None,
) -> tuple[SearchResultSet, dict]:
    """Search with a conversation's stored options; returns the results and what was applied."""
    results = retrieval.search(question, chat_search_options(workspace=workspace, options=options, top_k=top_k,
                                                             query_embedding=query_embedding))
    return results, results.describe()
