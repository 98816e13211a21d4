"""A canonical record's members: the one reader, below both search (rag.retrieval) and the pages (rag.selectors).

Merging (rag.dedup.merge) files near-duplicate chunks under a CanonicalRecord: its canonical chunk (the newest
version) and its ChunkVariants. Search shows a record's members as a result's variants and provenance; a record's
provenance page lists them; both read them here, in one statement and in one order.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime

from django.db import connection

from rag.models import CanonicalRecord, Chunk, ChunkVariant, Document


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
    SELECT r.id, 'canonical', c.id, d.id, d.path, d.title, d.doc_date, d.indexed_at, d.archived,
           c.heading_path, c.chunk_index, NULL::float8, NULL::timestamptz
    FROM {CanonicalRecord._meta.db_table} r
    JOIN {Chunk._meta.db_table} c ON c.id = r.canonical_chunk_id JOIN {Document._meta.db_table} d ON d.id = c.document_id
    WHERE r.id = ANY(%s) AND r.workspace_id = %s
    UNION ALL
    SELECT v.record_id, 'variant', c.id, d.id, d.path, d.title, d.doc_date, d.indexed_at, d.archived,
           c.heading_path, c.chunk_index, v.similarity, v.merged_at
    FROM {ChunkVariant._meta.db_table} v JOIN {CanonicalRecord._meta.db_table} r ON r.id = v.record_id
    JOIN {Chunk._meta.db_table} c ON c.id = v.chunk_id JOIN {Document._meta.db_table} d ON d.id = c.document_id
    WHERE v.record_id = ANY(%s) AND r.workspace_id = %s
    ORDER BY 1, 2, 7 DESC NULLS LAST, 8 DESC NULLS LAST, 3 DESC"""


def record_members(*, record_ids: Iterable[int], workspace_id: int) -> dict[int, list[RecordMember]]:
    """Every chunk of each record of the workspace: its canonical first, then its variants newest first.

    The one reader of a record's members (search results' variants and provenance, a record's provenance page),
    in one statement: search calls it for every page of results.
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
