"""Near-duplicate merging: `merge` (canonical records, variants, contradictions), `neighbours` (the neighbour
search it runs on), `contradictions` (what a reviewer must decide). What two passages disagree on is
rag/facts.py's.

The face everyone outside the package uses. Importing it loads Django's models: a script sets Django up first.
"""

from __future__ import annotations

from rag.dedup.contradictions import contradictions_prune
from rag.dedup.merge import (
    CONTRADICTION_ACTIONS,
    MergeStats,
    chunks_detach,
    contradiction_resolve,
    document_merge,
    documents_merge,
    releases_settle,
    reviews_carry_over,
    workspace_merge,
)

__all__ = ["CONTRADICTION_ACTIONS", "MergeStats", "chunks_detach", "contradiction_resolve", "contradictions_prune",
           "document_merge", "documents_merge", "releases_settle", "reviews_carry_over", "workspace_merge"]
