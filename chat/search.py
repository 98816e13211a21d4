"""A conversation's options (chat.options.ConversationOptions), translated into rag's SearchOptions.

The mapping is chat's: rag.retrieval knows only `search(query, SearchOptions)`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from chat.options import ConversationOptions
from rag import retrieval
from rag.dates import NAMED_PERIODS
from rag.retrieval import SearchFilters, SearchOptions, SearchResultSet, parse_datetime_bound


def chat_search_options(*, workspace: Any, options: Mapping[str, Any] | ConversationOptions, top_k: int,
                        query_embedding: Sequence[float] | None = None) -> SearchOptions:
    """The SearchOptions for a conversation's options (stored JSON, read through ConversationOptions);
    a bad stored value raises SearchOptionError."""
    chosen = options if isinstance(options, ConversationOptions) else ConversationOptions.read(options)
    doc_type = chosen.doc_type.strip()
    only_type = bool(doc_type) and chosen.doc_type_mode == "filter"  # else the type is boosted
    filters = SearchFilters(
        date_phrase=NAMED_PERIODS.get(chosen.date, ""),
        created_after=parse_datetime_bound(chosen.after, name="after") if chosen.date == "after" else None,
        include_archived=chosen.include_archived,
        doc_types=(doc_type,) if only_type else (),
    )
    return SearchOptions(
        workspace=workspace,
        top_k=top_k,
        filters=filters,
        # "Hide duplicate passages": copies merged into their record (licensed) and near-duplicates collapsed.
        respect_canonicals=chosen.dedup,
        dedup=chosen.dedup,
        include_provenance=chosen.provenance,
        doc_type_override=(doc_type,) if doc_type and not only_type else (),
        query_embedding=tuple(query_embedding) if query_embedding is not None else None,
        as_of_version=chosen.as_of_version,
        as_of_date=parse_datetime_bound(chosen.as_of_date, name="as_of_date", end_of_day=True),
    )


def search_for_chat(
    question: str, *, workspace: Any, options: Mapping[str, Any] | ConversationOptions, top_k: int,
    query_embedding: Sequence[float] | None = None,
) -> tuple[SearchResultSet, dict]:
    """Search with a conversation's stored options; returns the results and what was applied."""
    results = retrieval.search(question, chat_search_options(workspace=workspace, options=options, top_k=top_k,
                                                             query_embedding=query_embedding))
    return results, results.describe()
