"""A canonical record's members: the one reader, below both search (rag.retrieval) and the pages (rag.selectors).

Merging (rag.dedup.merge) files near-duplicate chunks under a CanonicalRecord: its canonical chunk (the newest
version) and its ChunkVariants. Search shows a record's members as a result's variants and provenance; a record's
provenance page lists them; chat's answers name a member that says it differently; all read them here.

`record_members_sql` is the one definition, in SQL so that a statement can hold it: `record_members` joins their
chunks and documents to it, and `rag.retrieval.vectors.record_stats` counts and checks them inside its own
statement for each result. (`vectors.hydrate`'s joins answer another question, which record a chunk is in.)
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime

from django.db import connection

from rag.models import CanonicalRecord, Chunk, ChunkVariant, Document

_RECORD, _VARIANT = CanonicalRecord._meta.db_table, ChunkVariant._meta.db_table


def record_members_sql(records: str) -> str:
    """SQL rows (record_id, role, chunk_id, similarity, merged_at) of the members of the records that `records`
    keeps, a condition on `rec` (their CanonicalRecord row): each record's canonical chunk (role "canonical",
    similarity and merged_at NULL) and its variants ("variant"). The condition is written twice: give its
    parameters twice."""
    return f"""
        SELECT rec.id AS record_id, 'canonical' AS role, rec.canonical_chunk_id AS chunk_id,
               NULL::float8 AS similarity, NULL::timestamptz AS merged_at
        FROM {_RECORD} rec WHERE {records}
        UNION ALL
        SELECT var.record_id, 'variant', var.chunk_id, var.similarity, var.merged_at
        FROM {_VARIANT} var JOIN {_RECORD} rec ON rec.id = var.record_id WHERE {records}"""


@dataclass(frozen=True)
class RecordMember:
    """One chunk of a canonical record, with its document: where the record's text comes from."""

    record_id: int
    role: str  # "canonical" or "variant"
    chunk_id: int
    document_id: int
    path: str
    title: str
    doc_date: datetime | None
    indexed_at: datetime | None
    archived: bool
    heading_path: str
    chunk_index: int
    similarity: float | None  # to the canonical; None for the canonical itself
    merged_at: datetime | None


_RECORD_MEMBERS_SQL = f"""
    SELECT m.record_id, m.role, c.id, d.id, d.path, d.title, d.doc_date, d.indexed_at, d.archived,
           c.heading_path, c.chunk_index, m.similarity, m.merged_at
    FROM ({record_members_sql("rec.id = ANY(%s) AND rec.workspace_id = %s")}) m
    JOIN {Chunk._meta.db_table} c ON c.id = m.chunk_id JOIN {Document._meta.db_table} d ON d.id = c.document_id
    ORDER BY 1, 2, 7 DESC NULLS LAST, 8 DESC NULLS LAST, 3 DESC"""


def record_members(*, record_ids: Iterable[int], workspace_id: int) -> dict[int, list[RecordMember]]:
    """Every chunk of each record of the workspace: its canonical first, then its variants newest first.

    The one reader of a record's members (search results' variants and provenance, a record's provenance page,
    chat's other versions), in one statement: search calls it for every page of results.
    """
    ids = sorted(set(record_ids))
    if not ids:
        return {}
    members: dict[int, list[RecordMember]] = {}
    with connection.cursor() as cursor:
        cursor.execute(_RECORD_MEMBERS_SQL, [ids, workspace_id, ids, workspace_id])
        for row in cursor.fetchall():
            member = RecordMember(*row)
            members.setdefault(member.record_id, []).append(member)
    return members
