"""The vector plans and vector SQL, in one place: kNN (HNSW or exact), hydration, near-duplicate pairs,
and what dedup asks of stored vectors (each chunk's neighbours, merge edges, a variant's cosine).

`hnsw_ef_search` is the one rule for how wide an HNSW candidate list must be
for a filtered scan, shared by search (`semantic_plan`) and dedup's neighbour
search (`neighbour_plan`); `set_ef_search` the one way to set it. Dedup keeps
its policy (how many neighbours, down to which cosine, which pairs to compare:
rag.dedup.neighbours) and asks here for the rows.

HNSW or exact. pgvector 0.6 filters an HNSW scan after the fact: the index
hands back at most `hnsw.ef_search` nearest rows and the WHERE clause then
drops those out of scope, so a filter that keeps 1% of the table returns about
1% of what was asked. We therefore look at the scope's share of the table
(`Scope.selectivity`) first. Wide scopes use the index with `ef_search` raised
so that enough rows survive the filter; narrow ones, where no `ef_search`
would be enough, take an exact scan over the rows in scope, which is fast
precisely because the scope is small. If the index still comes back short, we
fall back to the exact scan, so a filter never loses results.

The exact scan is chosen by the shape of the query, not by a planner setting:
`ORDER BY (distance) + 0` is an expression no index can order by. A `SET
enable_indexscan` would not reach a statement that psycopg has already prepared
with the index plan. `ef_search` is different: the index reads it when the
scan starts, so a transaction-local setting reaches prepared statements too.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass

from django.conf import settings
from django.db import connection, transaction
from django.db.backends.utils import CursorWrapper
from psycopg import ClientCursor

from rag.models import CanonicalRecord, Chunk, ChunkVariant, Contradiction, Document
from rag.records import record_members_sql
from rag.retrieval.filters import Scope

CHUNK = Chunk._meta.db_table
DOCUMENT = Document._meta.db_table
VARIANT = ChunkVariant._meta.db_table
RECORD = CanonicalRecord._meta.db_table
CONTRADICTION = Contradiction._meta.db_table

# pgvector's upper bound for hnsw.ef_search.
EF_SEARCH_MAX = 1000
# pgvector's default; a wide scope never searches with less.
EF_SEARCH_MIN = 40
# Ask the index for twice what the filter should leave: the scope's share is an
# average, and the nearest rows are not spread evenly across documents.
EF_SEARCH_OVERSAMPLE = 2.0


def vector_literal(vector: Sequence[float]) -> str:
    return "[" + ",".join(f"{float(x):.7g}" for x in vector) + "]"


@dataclass(frozen=True)
class SemanticPlan:
    path: str  # "hnsw" | "exact"
    ef_search: int | None = None


@dataclass(frozen=True)
class SemanticCandidates:
    rows: list[tuple[int, float]]  # (chunk id, cosine distance), nearest first
    path: str  # "hnsw", "exact", or "hnsw+exact" when the index came back short
    ef_search: int | None


def hnsw_ef_search(share: float, wanted: int, *, floor: int = EF_SEARCH_MIN) -> int | None:
    """The ef_search that leaves about `wanted` rows after a filter keeping `share` of the index; None: exact.

    None when no ef_search up to pgvector's maximum is wide enough (or nothing is in scope).
    """
    if share <= 0:
        return None
    needed = math.ceil(wanted * EF_SEARCH_OVERSAMPLE / share)
    if needed > EF_SEARCH_MAX:
        return None
    return min(EF_SEARCH_MAX, max(floor, needed))


def set_ef_search(cursor: CursorWrapper, ef_search: int) -> None:
    """hnsw.ef_search for the current transaction only (the index reads it when a scan starts)."""
    cursor.execute("SELECT set_config('hnsw.ef_search', %s, true)", [str(ef_search)])


def semantic_plan(scope: Scope, limit: int) -> SemanticPlan:
    """HNSW with a wide enough ef_search, or an exact scan where no ef_search is wide enough."""
    ef_search = hnsw_ef_search(scope.selectivity, limit)
    if ef_search is None or scope.selectivity < settings.EXACT_SCAN_SELECTIVITY:
        return SemanticPlan("exact")
    return SemanticPlan("hnsw", ef_search=ef_search)


def knn_query(scope: Scope, query_vector: str, limit: int, *, exact: bool) -> tuple[str, list]:
    """The nearest chunks in scope: by the HNSW index, or (`exact`) by comparing every row in scope.

    The two differ only in the ORDER BY: "+ 0" is an order the HNSW index cannot serve, so the planner
    scans; psycopg keeps a prepared statement's plan, so the statement's shape is what picks the path.
    """
    condition, params = scope.chunk_condition("c")
    order = "(c.embedding <=> %s::vector) + 0, c.id" if exact else "c.embedding <=> %s::vector"
    sql = (
        f"SELECT c.id, c.embedding <=> %s::vector AS distance FROM {CHUNK} c WHERE {condition} "
        f"ORDER BY {order} LIMIT %s"
    )
    return sql, [query_vector, *params, query_vector, limit]


def _fetch(sql: str, params: list) -> list[tuple[int, float]]:
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return [(int(row[0]), float(row[1])) for row in cursor.fetchall()]


@dataclass(frozen=True)
class CandidateRead:
    """One statement of a search's candidate lists, rows of (chunk id, score); `ef_search`: the HNSW width it
    is read with (the index path)."""

    sql: str
    params: list
    ef_search: int | None = None


def read_together(reads: Sequence[CandidateRead]) -> list[list[tuple[int, float]]]:
    """Each read's rows, every read in one round trip: a question's candidate lists (semantic, identifiers, full
    text, a subject's passages), of every scope it searches (a change question's two sides).

    With client-side binding (Django's default cursor) the statements travel as one simple-protocol message,
    which PostgreSQL runs as one implicit transaction (or within the caller's): each `set_config(..., true)`
    holds for the statements after it, so every read carries its own width. Otherwise, one statement each in a
    transaction.
    """
    if not reads:
        return []
    with connection.cursor() as cursor:
        if isinstance(cursor.cursor, ClientCursor):
            statements: list[str] = []
            params: list = []
            for read in reads:
                if read.ef_search is not None:
                    statements.append("SELECT set_config('hnsw.ef_search', %s, true)")
                    params.append(str(read.ef_search))
                statements.append(read.sql)
                params.extend(read.params)
            cursor.execute("; ".join(statements), params)
            found = []
            for read in reads:
                if read.ef_search is not None:
                    cursor.nextset()
                found.append([(int(row[0]), float(row[1])) for row in cursor.fetchall()])
                cursor.nextset()
            return found
    with transaction.atomic():
        with connection.cursor() as cursor:
            found = []
            for read in reads:
                if read.ef_search is not None:
                    set_ef_search(cursor, read.ef_search)
                cursor.execute(read.sql, read.params)
                found.append([(int(row[0]), float(row[1])) for row in cursor.fetchall()])
            return found


def semantic_read(scope: Scope, query_vector: Sequence[float], limit: int, *,
                  force: str = "") -> tuple[SemanticPlan, CandidateRead]:
    """The plan for the `limit` chunks in scope nearest to the query, and its statement (not yet read)."""
    plan = SemanticPlan(force, EF_SEARCH_MIN if force == "hnsw" else None) if force else semantic_plan(scope, limit)
    exact = plan.path == "exact" or plan.ef_search is None
    return plan, CandidateRead(*knn_query(scope, vector_literal(query_vector), limit, exact=exact),
                               ef_search=None if exact else plan.ef_search)


def semantic_result(scope: Scope, query_vector: Sequence[float], limit: int, plan: SemanticPlan,
                    rows: list[tuple[int, float]], *, force: str = "") -> SemanticCandidates:
    """What `semantic_read`'s statement returned, completed by an exact scan when the index came back short."""
    if plan.path == "exact" or plan.ef_search is None:
        return SemanticCandidates(rows, "exact", None)
    if not force and len(rows) < limit and scope.chunks_in_scope > len(rows):
        exact = knn_query(scope, vector_literal(query_vector), limit, exact=True)
        return SemanticCandidates(_fetch(*exact), "hnsw+exact", plan.ef_search)
    return SemanticCandidates(rows, "hnsw", plan.ef_search)


def semantic_candidates(
    scope: Scope, query_vector: Sequence[float], limit: int, *, force: str = ""
) -> SemanticCandidates:
    """The `limit` chunks in scope nearest to the query by cosine distance (one scope, read on its own)."""
    plan, read = semantic_read(scope, query_vector, limit, force=force)
    (rows,) = read_together([read])
    return semantic_result(scope, query_vector, limit, plan, rows, force=force)


# --- hydration -------------------------------------------------------------------------------

_HYDRATE_COLUMNS = (
    "chunk_id", "document_id", "text", "heading_path", "chunk_index", "total_chunks", "path", "title", "doc_date",
    "doc_type", "source_type", "archived", "family_id", "version_label", "is_latest_version", "lineage",
    "superseded_by", "superseded_by_label", "similarity", "record_id", "record_canonical_chunk_id", "conflicts", "page",
    "subject", "release_label", "series_version", "series_name",
)


def hydrate(
    chunk_ids: Sequence[int],
    *,
    workspace_id: int,
    query_vector: Sequence[float] | None,
    with_records: bool,
    canonicals_within: Scope | None = None,
    successors_of: Sequence[int] = (),
) -> dict[int, dict]:
    """Chunk and document fields (and the chunk's canonical record) by chunk id, in the workspace only.

    With `canonicals_within`, the same statement also brings the canonical
    chunk of every candidate's record, when it lies within that scope and did
    not come up itself (flagged `candidate=False`): canonical-aware results
    then cost no extra round trip. With `successors_of`, likewise the newer
    chunk that supersedes each of those candidates, for version-aware replacement.
    """
    if not chunk_ids:
        return {}
    params: list = []
    similarity = "NULL::float8"
    if query_vector is not None:
        similarity = "1 - (c.embedding <=> %s::vector)"
        params.append(vector_literal(query_vector))
    record_select = ", NULL::bigint, NULL::bigint, NULL::bigint[]"
    record_join = ""
    if with_records:
        # A chunk belongs to at most one record: as its canonical or as one of its variants.
        # `conflicts`: the chunks a pending contradiction pairs it with, looked up for all rows at once.
        record_select = ", r.id, r.canonical_chunk_id, conflict.others"
        record_join = f"""
            LEFT JOIN {VARIANT} v ON v.chunk_id = c.id
            LEFT JOIN {RECORD} own ON own.canonical_chunk_id = c.id
            LEFT JOIN {RECORD} r ON r.id = COALESCE(v.record_id, own.id)
            LEFT JOIN (
                SELECT pair.id, array_agg(pair.other) AS others FROM (
                    SELECT x.chunk_a_id AS id, x.chunk_b_id AS other FROM {CONTRADICTION} x
                    WHERE x.chunk_a_id IN (SELECT id FROM wanted) AND x.status = 'pending'
                    UNION ALL
                    SELECT x.chunk_b_id, x.chunk_a_id FROM {CONTRADICTION} x
                    WHERE x.chunk_b_id IN (SELECT id FROM wanted) AND x.status = 'pending'
                ) pair GROUP BY pair.id
            ) conflict ON conflict.id = c.id"""
    ids = list(chunk_ids)
    wanted = "SELECT id, TRUE AS candidate FROM unnest(%s::bigint[]) AS id"
    wanted_params: list = [ids]
    if with_records and canonicals_within is not None:
        # The canonicals of the candidates' records that did not come up themselves, if in scope;
        # checked on those few rows only, so the candidates are still fetched by primary key.
        in_scope, scope_params = canonicals_within.chunk_condition("sc")
        wanted += f"""
            UNION ALL
            SELECT sc.id, FALSE FROM {CHUNK} sc
            WHERE sc.id IN (
                SELECT cr.canonical_chunk_id FROM {VARIANT} cv JOIN {RECORD} cr ON cr.id = cv.record_id
                WHERE cv.chunk_id = ANY(%s) AND NOT cr.canonical_chunk_id = ANY(%s)
            ) AND {in_scope}"""
        wanted_params += [ids, ids, *scope_params]
    if successors_of:
        wanted += f"""
            UNION ALL
            SELECT DISTINCT sc.superseded_by_id, FALSE FROM {CHUNK} sc
            WHERE sc.id = ANY(%s) AND sc.superseded_by_id IS NOT NULL AND NOT sc.superseded_by_id = ANY(%s)"""
        wanted_params += [list(successors_of), ids]
    sql = f"""
        WITH wanted AS MATERIALIZED ({wanted})
        SELECT c.id, c.document_id, c.text, c.heading_path, c.chunk_index, c.total_chunks, d.path, d.title,
               d.doc_date, d.doc_type, d.source_type, d.archived, d.family_id, d.version_label, d.is_latest_version,
               c.lineage, c.superseded_by_id, newer_document.version_label, {similarity} {record_select}, c.page,
               d.subject,
               COALESCE(NULLIF(d.version_label, ''), CASE WHEN d.inferred_source <> '' THEN d.inferred_label END),
               CASE WHEN d.metadata->'release_entries'->0->>'how' = 'title'
                    THEN d.metadata->'release_entries'->0->>'version' END,
               d.metadata->'release_entries'->0->>'series', w.candidate
        FROM wanted w JOIN {CHUNK} c ON c.id = w.id JOIN {DOCUMENT} d ON d.id = c.document_id
        LEFT JOIN {CHUNK} newer ON newer.id = c.superseded_by_id
        LEFT JOIN {DOCUMENT} newer_document ON newer_document.id = newer.document_id {record_join}
        WHERE c.workspace_id = %s"""
    params = [*wanted_params, *params, workspace_id]
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        rows = [dict(zip(_HYDRATE_COLUMNS + ("candidate",), row)) for row in cursor.fetchall()]
    for row in rows:
        row["similarity"] = float(row["similarity"]) if row["similarity"] is not None else None
        row["conflicts"] = row["conflicts"] or []
    return {row["chunk_id"]: row for row in rows}


def record_stats(chunks: Sequence[tuple[int, int | None]]) -> dict[int, tuple[int, bool]]:
    """(variant count, pending contradiction among its versions) for final results, by chunk id.

    `chunks` are (chunk id, record id or None); a chunk outside any record is
    checked for contradictions of its own. Asked for the few results shown, not
    for every candidate.
    """
    if not chunks:
        return {}
    # The record's members as rag.records defines them, read per result inside this one statement.
    members = record_members_sql("rec.id = m.record_id")
    sql = f"""
        SELECT m.chunk_id,
               (SELECT count(*) FROM ({members}) variant WHERE variant.role = 'variant'),
               EXISTS (
                   SELECT 1 FROM (
                       SELECT m.chunk_id AS id
                       UNION ALL SELECT own.chunk_id FROM ({members}) own
                   ) member
                   WHERE EXISTS (SELECT 1 FROM {CONTRADICTION} x
                                 WHERE x.chunk_a_id = member.id AND x.status = 'pending')
                      OR EXISTS (SELECT 1 FROM {CONTRADICTION} x
                                 WHERE x.chunk_b_id = member.id AND x.status = 'pending')
               )
        FROM unnest(%s::bigint[], %s::bigint[]) AS m(chunk_id, record_id)"""
    with connection.cursor() as cursor:
        cursor.execute(sql, [[c for c, _ in chunks], [r for _, r in chunks]])
        return {int(chunk_id): (int(count), bool(flag)) for chunk_id, count, flag in cursor.fetchall()}


@dataclass
class _PairsWithin:
    chunk_ids: frozenset[int]
    threshold: float
    distances: list[tuple[int, int, float]] | None = None  # read at the first question asked of the block


_pairs_within: ContextVar[_PairsWithin | None] = ContextVar("near_duplicate_pairs_within", default=None)


@contextmanager
def near_duplicate_pairs_within(chunk_ids: Sequence[int], *, threshold: float) -> Iterator[None]:
    """Within the block, `near_duplicate_pairs` of any of these chunks at `threshold` or above is answered from one
    read (a search asks twice: the newer release's counterparts, then near-duplicate collapse, over its head)."""
    token = _pairs_within.set(_PairsWithin(frozenset(chunk_ids), threshold))
    try:
        yield
    finally:
        _pairs_within.reset(token)


def near_duplicate_pairs(chunk_ids: Sequence[int], *, threshold: float) -> list[tuple[int, int, float]]:
    """Pairs of these chunks, from different documents, with cosine similarity above `threshold`."""
    if len(chunk_ids) < 2:
        return []
    within = _pairs_within.get()
    if within is None or threshold < within.threshold or not within.chunk_ids.issuperset(chunk_ids):
        return [(a, b, 1 - distance) for a, b, distance in _pair_distances(chunk_ids, below=1 - threshold)]
    if within.distances is None:
        within.distances = _pair_distances(sorted(within.chunk_ids), below=1 - within.threshold)
    asked, below = set(chunk_ids), 1 - threshold
    return [(a, b, 1 - distance) for a, b, distance in within.distances
            if distance < below and a in asked and b in asked]


def _pair_distances(chunk_ids: Sequence[int], *, below: float) -> list[tuple[int, int, float]]:
    # Each vector is read (and de-TOASTed) once into the CTE, not once per pair: ten times faster.
    sql = f"""
        WITH v AS MATERIALIZED (
            SELECT id, document_id, embedding::real[]::vector AS embedding FROM {CHUNK} WHERE id = ANY(%s)
        )
        SELECT a.id, b.id, a.embedding <=> b.embedding
        FROM v a JOIN v b ON a.id < b.id AND a.document_id <> b.document_id
        WHERE (a.embedding <=> b.embedding) < %s"""
    with connection.cursor() as cursor:
        cursor.execute(sql, [list(chunk_ids), below])
        return [(int(a), int(b), float(distance)) for a, b, distance in cursor.fetchall()]


# --- stored chunks against each other (dedup) ------------------------------------------------


@dataclass(frozen=True)
class NeighbourPlan:
    strategy: str  # "exact" or "hnsw"
    ef_search: int
    archived_document_ids: tuple[int, ...]


def neighbour_plan(workspace_id: int, *, wanted: int, exact_up_to: int, ef_floor: int) -> NeighbourPlan:
    """Exact scan up to `exact_up_to` active chunks; HNSW with a candidate list wide enough to survive the filters.

    pgvector 0.6 filters HNSW results after the scan: when the workspace holds
    a small share of the table (live and dead rows), most candidates are filtered out, so
    ef_search grows with that share, and past pgvector's maximum (1000) only an
    exact scan finds the `wanted` neighbours.
    """
    with connection.cursor() as cursor:
        cursor.execute(
            f"""SELECT archived.ids,
                       (SELECT count(*) FROM {CHUNK} c
                        WHERE c.workspace_id = %(workspace_id)s AND NOT (c.document_id = ANY(archived.ids))),
                       -- the HNSW scan visits dead entries too (re-indexed or rolled-back chunks not yet
                       -- vacuumed), and they crowd the candidate list like other workspaces' rows do
                       greatest((SELECT reltuples::bigint FROM pg_class WHERE oid = %(table)s::regclass),
                                pg_stat_get_live_tuples(%(table)s::regclass)
                                + pg_stat_get_dead_tuples(%(table)s::regclass))
                FROM (SELECT coalesce(array_agg(id), '{{}}') AS ids FROM {DOCUMENT}
                      WHERE workspace_id = %(workspace_id)s AND archived) archived""",
            {"workspace_id": workspace_id, "table": CHUNK},
        )
        archived_ids, active, estimated_total = cursor.fetchone()
    archived = tuple(archived_ids)
    if active <= exact_up_to:
        return NeighbourPlan("exact", 0, archived)
    ef_search = hnsw_ef_search(active / max(active, estimated_total), wanted, floor=ef_floor)
    if ef_search is None:
        return NeighbourPlan("exact", 0, archived)
    return NeighbourPlan("hnsw", ef_search, archived)


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
# The same steering as knn_query's: "+ 0" hides the ordering from the HNSW index, so the plan is an
# exact scan even when a prepared plan was cached.
_NEIGHBOUR_ORDER = {"hnsw": "c.embedding <=> q.embedding", "exact": "(c.embedding <=> q.embedding) + 0, c.id"}


def neighbours_sql(strategy: str) -> str:
    return _NEIGHBOURS_SQL.format(chunk=CHUNK, order=_NEIGHBOUR_ORDER[strategy])


def chunk_neighbours(workspace_id: int, chunk_ids: Sequence[int], plan: NeighbourPlan, *, limit: int,
                     min_similarity: float, batch_size: int) -> list[tuple[int, int, float]]:
    """(chunk, neighbour, cosine): each chunk's `limit` nearest in other active documents, down to `min_similarity`."""
    found: list[tuple[int, int, float]] = []
    with connection.cursor() as cursor:
        if plan.strategy == "hnsw":
            set_ef_search(cursor, plan.ef_search)
        for start in range(0, len(chunk_ids), batch_size):
            cursor.execute(neighbours_sql(plan.strategy), {
                "workspace_id": workspace_id,
                "archived": list(plan.archived_document_ids),
                "neighbours": limit,
                "chunk_ids": list(chunk_ids[start:start + batch_size]),
                "max_distance": 1 - min_similarity,
            })
            found.extend((a, b, float(similarity)) for a, b, similarity in cursor.fetchall())
    return found


def close_pairs(a_ids: Sequence[int], b_ids: Sequence[int], *, min_similarity: float,
                distinct_pairs: bool) -> list[tuple[int, int]]:
    """Pairs of an `a` chunk and a `b` chunk in different active documents at cosine >= `min_similarity`,
    compared exactly ("+ 0": no index); `distinct_pairs` keeps one of (a, b) and (b, a)."""
    order = "a.id < b.id" if distinct_pairs else "a.id <> b.id"
    sql = f"""SELECT a.id, b.id FROM {CHUNK} a JOIN {CHUNK} b ON {order} AND a.document_id <> b.document_id
              JOIN {DOCUMENT} da ON da.id = a.document_id JOIN {DOCUMENT} db ON db.id = b.document_id
              WHERE a.id = ANY(%s) AND b.id = ANY(%s) AND NOT da.archived AND NOT db.archived
                AND (a.embedding <=> b.embedding) + 0 <= %s"""
    with connection.cursor() as cursor:
        cursor.execute(sql, [list(a_ids), list(b_ids), 1 - min_similarity])
        return cursor.fetchall()


def pair_similarities(pairs: Sequence[tuple[int, int]], *, batch_size: int) -> dict[tuple[int, int], float]:
    """Cosine of each (chunk, chunk) pair, computed by PostgreSQL from the stored vectors."""
    if not pairs:
        return {}
    result: dict[tuple[int, int], float] = {}
    with connection.cursor() as cursor:
        for start in range(0, len(pairs), batch_size):
            batch = pairs[start:start + batch_size]
            cursor.execute(
                f"""SELECT p.a_id, p.b_id, 1 - (a.embedding <=> b.embedding)
                    FROM unnest(%s::bigint[], %s::bigint[]) AS p(a_id, b_id)
                    JOIN {CHUNK} a ON a.id = p.a_id JOIN {CHUNK} b ON b.id = p.b_id""",
                [[a for a, _ in batch], [b for _, b in batch]],
            )
            result.update({(a, b): float(similarity) for a, b, similarity in cursor.fetchall()})
    return result
