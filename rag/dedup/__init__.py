"""Near-duplicate merging: `merge` (canonical records, variants, contradictions), `neighbours` (the neighbour
search it runs on), `contradictions` (what a reviewer must decide). What two passages disagree on is
rag/facts.py's.

The face everyone outside the package uses; the merge's names load on first use, because it needs Django's models.
"""

from __future__ import annotations

from typing import Any

_DJANGO_BOUND = {"CONTRADICTION_ACTIONS", "contradictions_prune", "MergeStats", "chunks_detach", "contradiction_resolve", "document_merge",
               "releases_settle", "reviews_carry_over", "workspace_merge"}

__all__ = sorted(_DJANGO_BOUND)


def __getattr__(name: str) -> Any:  # noqa: ANN401 - a name of merge.py or contradictions.py
    if name not in _DJANGO_BOUND:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    # import here: merge.py reads Django's models, and the face is imported before django.setup() by scripts.
    from rag.dedup import contradictions, merge

    return getattr(contradictions if name == "contradictions_prune" else merge, name)
