"""Near-duplicate merging: `merge` (canonical records, variants, contradictions), `neighbours`
(the pgvector neighbour search it runs on), `facts` (what two near-duplicates disagree on).

The face everyone outside the package uses. `facts` is plain text work and loads with the face; the
merge's names load on first use, because it needs Django's models.
"""

from __future__ import annotations

from typing import Any

from rag.dedup.facts import extract_facts, fact_differences, highlight_segments

_FROM_MERGE = {"CONTRADICTION_ACTIONS", "MergeStats", "chunks_detach", "contradiction_resolve", "document_merge",
               "reviews_carry_over", "workspace_merge"}

__all__ = ["extract_facts", "fact_differences", "highlight_segments", *sorted(_FROM_MERGE)]


def __getattr__(name: str) -> Any:  # noqa: ANN401 - a name of merge.py
    if name not in _FROM_MERGE:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    # import here: merge.py reads Django's models; facts must work before django.setup().
    from rag.dedup import merge

    return getattr(merge, name)
