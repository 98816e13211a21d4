"""Canonical-aware results: one result per canonical record, showing its canonical (newest) chunk.

Merging (rag.dedup.merge) files near-duplicate chunks under a CanonicalRecord whose
canonical chunk is the newest version and whose ChunkVariants are the older
ones. Here a record takes the place of its best-ranked member among the
candidates, and the chunk shown there is the canonical (brought by the same
statement that hydrates the candidates when it did not come up itself). A canonical outside the search's filters (another doc type,
an archived document) is not shown: the best-ranked member inside them is.

Merging files versions under one record only when they are near-identical
(MERGE_THRESHOLD); two versions of a passage that state a different value
drift further apart and are filed as a pending Contradiction instead. The same
rule applies to them here: when both sides of a pending contradiction are
candidates, the newer one takes the better place and the older one leaves
(newest wins a conflict, as the answer prompt says). The result that stays
says `has_contradictions`, and its provenance lists the other side.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Generic, Protocol, TypeVar

from rag.index_cache import index_cached
from rag.models import Contradiction
from rag.retrieval.neardup import collapse_near_duplicates
from rag.records import record_members


class Candidate(Protocol):
    chunk_id: int
    row: dict[str, Any]
    score: float
    collapsed: list[int]


C = TypeVar("C", bound=Candidate)  # the caller's own candidate type, handed back to it


@dataclass
class CanonicalCollapse(Generic[C]):
    candidates: list[C]
    variants_filtered: int  # candidates dropped because their record already has a place
    canonical_hits: int  # places now held by a record's canonical chunk


def collapse_to_canonicals(
    candidates: Sequence[C],
    *,
    rows: dict[int, dict[str, Any]],
    substitute: Callable[[C, dict[str, Any]], C],
) -> CanonicalCollapse[C]:
    """`rows`: hydrated rows of the candidates and of their records' canonicals within the filters.

    `substitute(slot_holder, canonical_row)` builds the canonical's candidate in a member's slot.
    """
    by_record: dict[int, list[C]] = {}
    for candidate in candidates:
        record_id = candidate.row.get("record_id")
        if record_id is not None:
            by_record.setdefault(record_id, []).append(candidate)
    if not by_record:
        return CanonicalCollapse(list(candidates), 0, 0)

    placed: set[int] = set()
    collapsed: list[C] = []
    filtered = 0
    canonical_hits = 0
    for candidate in candidates:
        record_id = candidate.row.get("record_id")
        if record_id is None:
            collapsed.append(candidate)
            continue
        if record_id in placed:
            filtered += 1
            continue
        placed.add(record_id)
        members = by_record[record_id]
        canonical_id = candidate.row.get("record_canonical_chunk_id")
        stand_ins = [m.chunk_id for m in members]
        if canonical_id in rows:
            shown = candidate if candidate.chunk_id == canonical_id else substitute(candidate, rows[canonical_id])
            canonical_hits += 1
        else:
            shown = candidate  # the canonical is outside the filters: the best member in them stands in
        shown.collapsed = sorted(set(shown.collapsed) | set(stand_ins) - {shown.chunk_id})
        collapsed.append(shown)
    return CanonicalCollapse(collapsed, filtered, canonical_hits)


def supersede_conflicts(
    candidates: Sequence[C],
    *,
    take_place: Callable[[C, C, list[C]], C],
) -> tuple[list[C], int]:
    """Collapse candidates joined by pending contradictions to their newest member; returns (kept, removed count)."""
    present = {c.chunk_id for c in candidates}
    pairs = [
        (c.chunk_id, other, 1.0)
        for c in candidates
        for other in c.row.get("conflicts") or ()
        if other in present and c.chunk_id < other
    ]
    if not pairs:
        return list(candidates), 0
    collapsed = collapse_near_duplicates(
        candidates, pairs, chunk_id=lambda c: c.chunk_id, doc_date=lambda c: c.row["doc_date"], take_place=take_place
    )
    return collapsed.kept, len(collapsed.removed)


def record_details(record_ids: Sequence[int], *, workspace_id: int, contradictions_of: Sequence[int] | None = ()
                   ) -> tuple[dict[int, list[dict]], list[dict]]:
    """Members of each record, as results show them, and the pending contradictions of all of them and of the
    chunks `contradictions_of` (None: no contradictions wanted, none read)."""
    members: dict[int, list[dict[str, Any]]] = {
        record_id: [{
            "role": m.role, "chunk_id": m.chunk_id, "document_id": m.document_id, "path": m.path, "title": m.title,
            "doc_date": m.doc_date, "archived": m.archived,
            "similarity": 1.0 if m.similarity is None else round(float(m.similarity), 4),
        } for m in rows]
        for record_id, rows in record_members(record_ids=record_ids, workspace_id=workspace_id).items()
    }
    if contradictions_of is None:
        return members, []
    chunk_ids = [m["chunk_id"] for rows in members.values() for m in rows] + list(contradictions_of)
    return members, pending_contradictions(chunk_ids, workspace_id=workspace_id)


def pending_contradictions(chunk_ids: Sequence[int], *, workspace_id: int) -> list[dict]:
    """The pending contradictions of any of these chunks, oldest first: the workspace's are read once per change of
    it (every search that shows provenance asks), and each caller gets its own copies."""
    if not chunk_ids:
        return []
    by_chunk = index_cached("pending contradictions", workspace_id=workspace_id,
                            compute=lambda: _pending_contradictions(workspace_id))
    found = {row["id"]: row for chunk_id in set(chunk_ids) for row in by_chunk.get(chunk_id, ())}
    return copy.deepcopy([found[pk] for pk in sorted(found)])


def _pending_contradictions(workspace_id: int) -> dict[int, list[dict]]:
    by_chunk: dict[int, list[dict]] = {}
    rows = Contradiction.objects.filter(workspace_id=workspace_id, status=Contradiction.Status.PENDING)
    for row in rows.order_by("pk"):
        shown = {"id": row.pk, "chunk_a_id": row.chunk_a_id, "chunk_b_id": row.chunk_b_id,
                 "similarity": round(row.similarity, 4), "differences": row.differences}
        by_chunk.setdefault(row.chunk_a_id, []).append(shown)
        by_chunk.setdefault(row.chunk_b_id, []).append(shown)
    return by_chunk
