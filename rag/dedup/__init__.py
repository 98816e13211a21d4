"""Near-duplicate merging: `merge` (canonical records, variants, contradictions), `neighbours`
(the pgvector neighbour search it runs on), `facts` (what two near-duplicates disagree on).

The package exports what other apps (chat) may call: `fact_differences`.
"""

from rag.dedup.facts import fact_differences

__all__ = ["fact_differences"]
