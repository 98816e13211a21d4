"""SQL filters: which chunks a search may look at, as one condition every candidate query embeds.

The workspace is always part of the condition, whatever the caller passed, so
no query built here can reach another workspace's chunks. Every other filter
is on the document (dates, types, tags, entities, archived), which also makes
the number of chunks in scope cheap to know: the sum of `chunk_count` over
the documents in scope. That number decides between the HNSW index and an
exact scan (see rag.retrieval.vectors).

The usual search has no filter but "not archived". Its condition then leaves
the document table out entirely (`workspace_id = X`, plus an anti-join on the
few archived documents if there are any), because a document subquery makes
PostgreSQL hash every document of the workspace on every query: a few ms at
100,000 chunks, ten times that at a million.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from datetime import datetime

from django.core.exceptions import EmptyResultSet
from django.db import connection
from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.models import F, Lookup, QuerySet
from django.db.models.sql.compiler import SQLCompiler

from rag.index_cache import index_cached
from rag.models import Chunk, Document
from rag.retrieval.options import SearchFilters

CHUNK_TABLE = Chunk._meta.db_table
DOCUMENT_TABLE = Document._meta.db_table


class _AnyOf(Lookup):
    """`column = ANY(%s)` with the ids as one array parameter."""

    lookup_name = "any_of"
    prepare_rhs = False

    def as_sql(self, compiler: SQLCompiler, connection: BaseDatabaseWrapper) -> tuple[str, list]:
        lhs, lhs_params = self.process_lhs(compiler, connection)
        return f"{lhs} = ANY(%s::bigint[])", [*lhs_params, [int(pk) for pk in self.rhs]]

# The chunk count of a scope only steers the choice of plan (and a wrong choice is caught by
# the exact-scan fallback), so it may be a few seconds old; counting reads every document in scope.
SCOPE_COUNT_TTL_SECONDS = 10.0
_SCOPE_COUNT_CACHE_SIZE = 512
_counts: dict[tuple, tuple[float, int, int]] = {}
_counts_lock = threading.Lock()


@dataclass(frozen=True)
class Scope:
    """The chunks in scope as a SQL condition, and how many there are (of how many in the table)."""

    workspace_id: int
    condition_sql: str  # on rag_chunk aliased "{alias}"
    condition_params: tuple
    chunks_in_scope: int
    chunks_in_table: int

    @property
    def selectivity(self) -> float:
        """Share of the whole chunk table (every workspace) that the scope keeps: what HNSW sees."""
        if self.chunks_in_table <= 0:
            return 1.0
        return min(1.0, self.chunks_in_scope / self.chunks_in_table)

    def chunk_condition(self, alias: str = "c") -> tuple[str, list]:
        """WHERE condition for rag_chunk rows in scope."""
        return self.condition_sql.replace("{alias}", alias), list(self.condition_params)


def scoped_documents(*, workspace_id: int, filters: SearchFilters, now: datetime | None = None) -> QuerySet[Document]:
    documents = Document.objects.filter(workspace_id=workspace_id)
    if not filters.include_archived:
        documents = documents.filter(archived=False)
    bounds = filters.date_bounds(now=now)
    if bounds.start:
        documents = documents.filter(doc_date__gte=bounds.start)
    if bounds.end:
        documents = documents.filter(doc_date__lt=bounds.end)
    if filters.source_types:
        documents = documents.filter(source_type__in=filters.source_types)
    if filters.doc_types:
        documents = documents.filter(doc_type__in=filters.doc_types)
    if filters.document_ids is not None:
        # One array parameter, not one per document: a question about a release scopes thousands of documents,
        # and PostgreSQL plans an IN list of that many parameters anew in every query (~20 ms at 7,000).
        documents = documents.filter(_AnyOf(F("pk"), list(filters.document_ids))) if filters.document_ids \
            else documents.none()
    if filters.tags:
        lookup = "tags__contains" if filters.tags_match == "all" else "tags__overlap"
        documents = documents.filter(**{lookup: list(filters.tags)})
    if filters.entities:
        lookup = "entities__contains" if filters.entities_match == "all" else "entities__overlap"
        documents = documents.filter(**{lookup: list(filters.entities)})
    return documents.order_by()


def filters_narrow_documents(filters: SearchFilters, *, now: datetime | None) -> bool:
    bounds = filters.date_bounds(now=now)
    return bool(bounds.start or bounds.end or filters.source_types or filters.doc_types or filters.tags
                or filters.entities or filters.document_ids is not None)


def _counts_cached(key: tuple, count_sql: str, count_params: list) -> tuple[int, int]:
    """(chunks in scope, chunks in the table), at most SCOPE_COUNT_TTL_SECONDS old."""
    now = time.monotonic()
    with _counts_lock:
        hit = _counts.get(key)
    if hit and now - hit[0] < SCOPE_COUNT_TTL_SECONDS:
        return hit[1], hit[2]
    with connection.cursor() as cursor:
        # reltuples is the planner's row estimate (free); -1 or 0 until the table is first analyzed.
        cursor.execute(
            f"SELECT COALESCE(SUM(scoped.chunk_count), 0), "
            f"(SELECT reltuples::bigint FROM pg_class WHERE oid = %s::regclass) FROM ({count_sql}) scoped",
            [CHUNK_TABLE, *count_params],
        )
        in_scope, estimate = cursor.fetchone()
        in_table = int(estimate or 0)
        if in_table <= 0:
            cursor.execute(f"SELECT count(*) FROM (SELECT 1 FROM {CHUNK_TABLE} LIMIT 1000000) t")
            in_table = int(cursor.fetchone()[0])
    in_scope, in_table = int(in_scope), max(in_table, int(in_scope))
    with _counts_lock:
        if len(_counts) >= _SCOPE_COUNT_CACHE_SIZE:
            _counts.clear()
        _counts[key] = (now, in_scope, in_table)
    return in_scope, in_table


def reset_scope_counts() -> None:
    with _counts_lock:
        _counts.clear()


def _has_archived(workspace_id: int) -> bool:
    """Read once per change of the workspace (every scope of every question asks)."""
    return index_cached("has archived", workspace_id=workspace_id, compute=lambda: _archived_exists(workspace_id))


def _archived_exists(workspace_id: int) -> bool:
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT EXISTS (SELECT 1 FROM {DOCUMENT_TABLE} WHERE workspace_id = %s AND archived)",
                       [workspace_id])
        return bool(cursor.fetchone()[0])


def build_scope(*, workspace_id: int, filters: SearchFilters, now: datetime | None = None) -> Scope:
    documents = scoped_documents(workspace_id=workspace_id, filters=filters, now=now)
    try:
        count_sql, count_params = documents.values("chunk_count").query.sql_with_params()
    except EmptyResultSet:  # a filter no document can meet (a release no document belongs to): nothing in scope
        return Scope(workspace_id=workspace_id, condition_sql="{alias}.workspace_id = %s AND FALSE",
                     condition_params=(workspace_id,), chunks_in_scope=0, chunks_in_table=0)
    key = (workspace_id, count_sql, *(tuple(param) if isinstance(param, list) else param for param in count_params))
    in_scope, in_table = _counts_cached(key, count_sql, list(count_params))

    if filters_narrow_documents(filters, now=now):
        sql, params = documents.values("id").query.sql_with_params()
        condition, condition_params = "{alias}.workspace_id = %s AND {alias}.document_id IN (" + sql + ")", params
    elif filters.include_archived or not _has_archived(workspace_id):
        condition, condition_params = "{alias}.workspace_id = %s", ()
    else:
        condition = (
            "{alias}.workspace_id = %s AND NOT EXISTS (SELECT 1 FROM " + DOCUMENT_TABLE + " archived_document "
            "WHERE archived_document.id = {alias}.document_id AND archived_document.archived)"
        )
        condition_params = ()
    return Scope(
        workspace_id=workspace_id,
        condition_sql=condition,
        condition_params=(workspace_id, *condition_params),
        chunks_in_scope=in_scope,
        chunks_in_table=in_table,
    )
