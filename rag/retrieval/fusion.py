"""Weighted reciprocal rank fusion: score = sum over lists of weight / (k + rank).

Ranks, not scores, are fused because cosine distances and ts_rank_cd values
live on unrelated scales. The fused score is divided by the best score any
chunk could get (rank 1 in every list that returned something), so it lies
in (0, 1]: 1.0 is "first in every list", and the recency mix and the
doc-type boost act on the same scale for every query and mode.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field


@dataclass
class Fused:
    chunk_id: int
    score: float  # normalized RRF, (0, 1]
    ranks: dict[str, int] = field(default_factory=dict)  # list name -> 1-based rank


def reciprocal_rank_fusion(
    ranked: Mapping[str, Sequence[int]], *, k: int, weights: Mapping[str, float] | None = None
) -> list[Fused]:
    """Fuse ranked lists of chunk ids; best first, ties broken by the order of first appearance.

    `weights` maps a list's name to its weight (1.0 when missing): a list that measured
    better on the evaluation corpora counts for more (settings.RRF_WEIGHTS).
    """
    weight = lambda name: (weights or {}).get(name, 1.0)  # noqa: E731
    active = [name for name, ids in ranked.items() if ids and weight(name) > 0]
    if not active:
        return []
    best_possible = sum(weight(name) for name in active) / (k + 1)
    fused: dict[int, Fused] = {}
    for name in active:
        for position, chunk_id in enumerate(ranked[name], start=1):
            entry = fused.setdefault(chunk_id, Fused(chunk_id, 0.0))
            if name in entry.ranks:
                continue  # a list that repeats an id counts it once, at its best rank
            entry.ranks[name] = position
            entry.score += weight(name) / (k + position)
    for entry in fused.values():
        entry.score /= best_possible
    return sorted(fused.values(), key=lambda e: -e.score)
