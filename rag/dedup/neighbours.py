"""The neighbour search of dedup merging: pgvector kNN per chunk, never all pairs.

pgvector 0.6 applies WHERE filters after the HNSW scan, so a workspace that
holds a small share of the table would get too few neighbours from the index:
`search_plan` widens the candidate list (hnsw.ef_search) with that share by the
rule search uses too (rag.retrieval.vectors.hnsw_ef_search), and falls back to
an exact scan for small workspaces or when the list would have to pass
pgvector's maximum.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from django.conf import settings
from django.db import connection

from rag.models import Chunk, Document
from rag.retrieval.vectors import hnsw_ef_search, set_ef_search
from rag.unionfind import UnionFind


@dataclass(frozen=True)
class SearchPlan:
    strategy: str  # "exact" or "hnsw"
    ef_search: int
    archived_document_ids: tuple[int, ...]


def search_plan(workspace_id: int) -> SearchPlan:
    """Exact scan for small workspaces; HNSW with a candidate list wide enough to survive the filters.

    pgvector 0.6 filters HNSW results after the scan: when the workspace holds
    a small share of the table (live and dead rows), most candidates are filtered out, so
    ef_search grows with that share, and past pgvector's maximum (1000) only an
    exact scan finds the neighbours.
    """
    with connection.cursor() as cursor:
        cursor.execute(
            f"""SELECT archived.ids,
                       (SELECT count(*) FROM {Chunk._meta.db_table} c
                        WHERE c.workspace_id = %(workspace_id)s AND NOT (c.document_id = ANY(archived.ids))),
                       -- the HNSW scan visits dead entries too (re-indexed or rolled-back chunks not yet
                       -- vacuumed), and they crowd the candidate list like other workspaces' rows do
                       greatest((SELECT reltuples::bigint FROM pg_class WHERE oid = %(table)s::regclass),
                                pg_stat_get_live_tuples(%(table)s::regclass)
                                + pg_stat_get_dead_tuples(%(table)s::regclass))
                FROM (SELECT coalesce(array_agg(id), '{{}}') AS ids FROM {Document._meta.db_table}
                      WHERE workspace_id = %(workspace_id)s AND archived) archived""",
            {"workspace_id": workspace_id, "table": Chunk._meta.db_table},
        )
        archived_ids, active, estimated_total = cursor.fetchone()
    archived = tuple(archived_ids)
    if active <= settings.MERGE_EXACT_SCAN_MAX_CHUNKS:
        return SearchPlan("exact", 0, archived)
    share = active / max(active, estimated_total)
    # One more than the neighbours wanted: the chunk itself falls out too (and its document's chunks).
    ef_search = hnsw_ef_search(share, settings.MERGE_NEIGHBOURS + 1, floor=settings.MERGE_EF_SEARCH)
    if ef_search is None:
        return SearchPlan("exact", 0, archived)
    return SearchPlan("hnsw", ef_search, archived)


_NEIGHBOURS_SQL = """
SELECT q.id, n.id, 1 - n.distance
FROM {chunk} q
CROSS JOIN LATERAL (
    SELECT c.id, c.embedding <=> q.embedding AS distance
    FROM {chunk} c
    WHERE c.workspace_id = %(workspace_id)s
      AND c.document_id <> q.document_id
      AND NOT (c.document_id = ANY(%(archived)s))
    ORDER BY {order}
    LIMIT %(neighbours)s
) n
WHERE q.id = ANY(%(chunk_ids)s) AND n.distance <= %(max_distance)s
"""
# Steered by the query's shape, not by a SET: "+ 0" hides the ordering from the HNSW index, so the
# plan is an exact scan even when a prepared plan was cached (see ARCHITECTURE.md).
_ORDER = {"hnsw": "c.embedding <=> q.embedding", "exact": "(c.embedding <=> q.embedding) + 0, c.id"}


def neighbours_sql(strategy: str) -> str:
    return _NEIGHBOURS_SQL.format(chunk=Chunk._meta.db_table, order=_ORDER[strategy])


def neighbours(workspace_id: int, chunk_ids: list[int], plan: SearchPlan) -> list[tuple[int, int, float]]:
    """(chunk, neighbour, cosine) for each chunk's nearest neighbours in other active documents.

    Down to the lower of the contradiction and the family-counterpart thresholds: one search
    serves merging, contradictions and version families.
    """
    min_similarity = min(settings.CONTRADICTION_THRESHOLD, settings.FAMILY_COUNTERPART_THRESHOLD)
    found: list[tuple[int, int, float]] = []
    with connection.cursor() as cursor:
        if plan.strategy == "hnsw":
            set_ef_search(cursor, plan.ef_search)
        size = settings.MERGE_QUERY_BATCH_SIZE
        for start in range(0, len(chunk_ids), size):
            cursor.execute(neighbours_sql(plan.strategy), {
                "workspace_id": workspace_id,
                "archived": list(plan.archived_document_ids),
                "neighbours": settings.MERGE_NEIGHBOURS,
                "chunk_ids": chunk_ids[start:start + size],
                "max_distance": 1 - min_similarity,
            })
            found.extend((a, b, float(similarity)) for a, b, similarity in cursor.fetchall())
    return found


def _edges_sql(table: str, documents: str, *, distinct_pairs: bool) -> str:
    """Merge edges between chunks of `a` ids and `b` ids, in other active documents, by exact cosine."""
    order = "a.id < b.id" if distinct_pairs else "a.id <> b.id"
    return f"""SELECT a.id, b.id FROM {table} a JOIN {table} b ON {order} AND a.document_id <> b.document_id
               JOIN {documents} da ON da.id = a.document_id JOIN {documents} db ON db.id = b.document_id
               WHERE a.id = ANY(%s) AND b.id = ANY(%s) AND NOT da.archived AND NOT db.archived
                 AND (a.embedding <=> b.embedding) + 0 <= %s"""


def pairwise_edges(chunk_ids: Iterable[int]) -> list[tuple[int, int]]:
    """All merge edges among a few chunks: exact, no index, quadratic in their number."""
    ids = list(chunk_ids)
    if len(ids) < 2:
        return []
    with connection.cursor() as cursor:
        cursor.execute(_edges_sql(Chunk._meta.db_table, Document._meta.db_table, distinct_pairs=True),
                       [ids, ids, 1 - settings.MERGE_THRESHOLD])
        return cursor.fetchall()


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
    sql = _edges_sql(Chunk._meta.db_table, Document._meta.db_table, distinct_pairs=False)
    with connection.cursor() as cursor:
        while remaining:
            fresh = preferred + [c for c in _spread_sample(list(remaining - set(preferred)), sample_size)]
            preferred = []
            used.extend(fresh)
            remaining -= set(fresh)
            if len(remaining) <= 2 * sample_size:  # small enough: the rest pairwise, and each with every anchor
                cursor.execute(_edges_sql(Chunk._meta.db_table, Document._meta.db_table, distinct_pairs=True),
                               [list(remaining) + used, list(remaining) + used, 1 - settings.MERGE_THRESHOLD])
                edges.extend(cursor.fetchall())
                break
            cursor.execute(sql, [list(remaining) + fresh, used, 1 - settings.MERGE_THRESHOLD])
            found = cursor.fetchall()
            edges.extend(found)
            for a, b in found:
                union.union(a, b)
            placed = {union.find(anchor) for anchor in used}
            remaining = {chunk for chunk in remaining if union.find(chunk) not in placed}
    return edges
