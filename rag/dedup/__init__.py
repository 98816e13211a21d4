"""Near-duplicate merging: `merge` (canonical records, variants, contradictions), `neighbours`
(the pgvector neighbour search it runs on), `facts` (what two near-duplicates disagree on).

The package exports what other apps (chat) may call: `extract_facts`, `fact_differences`.
"""

from rag.dedup.facts import extract_facts, fact_differences

__all__ = ["extract_facts", "fact_differences"]
