"""Retrieval-time near-duplicate collapse, for what merging has not caught (yet).

Among the ranked candidates, chunks of different documents whose embeddings
are closer than `dedup_threshold` (cosine similarity) are one passage. The
group keeps the place of its best-ranked member, and the chunk shown there is
the one from the newest document (an unknown doc_date counts as oldest; equal
dates keep the better-ranked). Everything else keeps its order.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Generic, TypeVar

T = TypeVar("T")


@dataclass
class Collapsed(Generic[T]):
    kept: list[T]
    removed: list[T]


def _newness(doc_date: datetime | None) -> float:
    return doc_date.timestamp() if doc_date else float("-inf")


def collapse_near_duplicates(
    candidates: Sequence[T],
    pairs: Sequence[tuple[int, int, float]],
    *,
    chunk_id: Callable[[T], int],
    doc_date: Callable[[T], datetime | None],
    take_place: Callable[[T, T, list[T]], T],
) -> Collapsed[T]:
    """Collapse candidates (best first) along near-duplicate `pairs` of chunk ids.

    For every group of two or more, `take_place(survivor, slot_holder, others)`
    returns the survivor as it should appear in the slot of the group's
    best-ranked member (e.g. with that member's score); `others` are the
    members that leave.
    """
    position = {chunk_id(c): i for i, c in enumerate(candidates)}
    parent = list(range(len(candidates)))

    def root(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    for a, b, _similarity in pairs:
        if a in position and b in position:
            ra, rb = root(position[a]), root(position[b])
            if ra != rb:
                parent[max(ra, rb)] = min(ra, rb)  # the root is always the best-ranked member

    groups: dict[int, list[int]] = {}
    for i in range(len(candidates)):
        groups.setdefault(root(i), []).append(i)
    kept: list[T] = []
    removed: list[T] = []
    for first in sorted(groups):
        members = groups[first]
        # Newest first; among equals, the better-ranked (smaller index).
        survivor = max(members, key=lambda i: (_newness(doc_date(candidates[i])), -i))
        others = [candidates[i] for i in members if i != survivor]
        kept.append(take_place(candidates[survivor], candidates[first], others) if others else candidates[first])
        removed.extend(others)
    return Collapsed(kept, removed)
