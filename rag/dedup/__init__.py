"""Near-duplicate merging: `merge` (canonical records, variants, contradictions), `neighbours`
(the pgvector neighbour search it runs on), `facts` (what two near-duplicates disagree on)."""
