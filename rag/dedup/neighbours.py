"""The neighbour search of dedup merging: pgvector kNN per chunk, never all pairs; the edges that hold a record.

Dedup's policy lives here (how many neighbours, down to which cosine, which members to compare);
the SQL and the HNSW-or-exact plan are rag.retrieval.vectors' (`neighbour_plan`, `chunk_neighbours`,
`close_pairs`). pgvector 0.6 applies WHERE filters after the HNSW scan, so a workspace that holds a
small share of the table would get too few neighbours from the index: the plan widens the candidate
list with that share by the rule search uses too, and falls back to an exact scan for small
workspaces or when the list would have to pass pgvector's maximum.
"""

from __future__ import annotations

from collections.abc import Iterable

from django.conf import settings

from rag.retrieval import NeighbourPlan, chunk_neighbours, close_pairs, neighbour_plan
from rag.unionfind import UnionFind


def search_plan(workspace_id: int) -> NeighbourPlan:
    """Exact scan for small workspaces (MERGE_EXACT_SCAN_MAX_CHUNKS); HNSW, ef_search at least MERGE_EF_SEARCH."""
    # One more than the neighbours wanted: the chunk itself falls out too (and its document's chunks).
    return neighbour_plan(workspace_id, wanted=settings.MERGE_NEIGHBOURS + 1,
                          exact_up_to=settings.MERGE_EXACT_SCAN_MAX_CHUNKS, ef_floor=settings.MERGE_EF_SEARCH)


def neighbours(workspace_id: int, chunk_ids: list[int], plan: NeighbourPlan) -> list[tuple[int, int, float]]:
    """(chunk, neighbour, cosine) for each chunk's nearest neighbours in other active documents.

    Down to the lower of the contradiction and the family-counterpart thresholds: one search
    serves merging, contradictions and version families.
    """
    return chunk_neighbours(
        workspace_id, chunk_ids, plan, limit=settings.MERGE_NEIGHBOURS, batch_size=settings.MERGE_QUERY_BATCH_SIZE,
        min_similarity=min(settings.CONTRADICTION_THRESHOLD, settings.FAMILY_COUNTERPART_THRESHOLD))


def pairwise_edges(chunk_ids: Iterable[int]) -> list[tuple[int, int]]:
    """All merge edges among a few chunks: exact, no index, quadratic in their number."""
    ids = list(chunk_ids)
    if len(ids) < 2:
        return []
    return close_pairs(ids, ids, min_similarity=settings.MERGE_THRESHOLD, distinct_pairs=True)


def _spread_sample(ids: list[int], size: int) -> list[int]:
    """`size` ids evenly spread over the sorted ids: the same members whatever order they came in."""
    ordered = sorted(ids)
    if len(ordered) <= size:
        return ordered
    step = len(ordered) / size
    return [ordered[int(index * step)] for index in range(size)]


def member_edges(chunk_ids: Iterable[int], *, anchors: Iterable[int] = ()) -> list[tuple[int, int]]:
    """Merge edges that hold a record's members together, with work linear in their number.

    A few members are compared pairwise, as before. A large record (one boilerplate
    chunk shared by thousands of documents) would cost members squared distances, so
    every member is compared with anchors only: the given ones (the canonical) and a
    fixed, order-independent sample of MERGE_RECORD_SAMPLE members. Members that reach
    no anchor are compared again with a sample of their own plus the earlier anchors,
    until every member is placed: a record that truly split in two becomes two records,
    one round per part.
    """
    ids = sorted(set(chunk_ids))
    sample_size = settings.MERGE_RECORD_SAMPLE
    if len(ids) <= 2 * sample_size:
        return pairwise_edges(ids)
    edges: list[tuple[int, int]] = []
    union = UnionFind()
    remaining = set(ids)
    used: list[int] = []
    preferred = [anchor for anchor in dict.fromkeys(anchors) if anchor in remaining]
    while remaining:
        fresh = preferred + [c for c in _spread_sample(list(remaining - set(preferred)), sample_size)]
        preferred = []
        used.extend(fresh)
        remaining -= set(fresh)
        if len(remaining) <= 2 * sample_size:  # small enough: the rest pairwise, and each with every anchor
            edges.extend(close_pairs(list(remaining) + used, list(remaining) + used,
                                     min_similarity=settings.MERGE_THRESHOLD, distinct_pairs=True))
            break
        found = close_pairs(list(remaining) + fresh, used, min_similarity=settings.MERGE_THRESHOLD,
                            distinct_pairs=False)
        edges.extend(found)
        for a, b in found:
            union.union(a, b)
        placed = {union.find(anchor) for anchor in used}
        remaining = {chunk for chunk in remaining if union.find(chunk) not in placed}
    return edges
