"""Small builders for the retrieval tests: documents with chunks, records, licenses."""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import contextmanager
from datetime import datetime, UTC

import numpy as np
import pytest
from django.db import connection

from rag.models import CanonicalRecord, Chunk, ChunkVariant, Document, Workspace
from rag.retrieval import SearchOptions
from tests.licensing.factories import LicenseFactory
from tests.rag.factories import ChunkFactory, DocumentFactory

JAN_2025 = datetime(2025, 1, 1, tzinfo=UTC)


def add_document(
    workspace: Workspace,
    path: str,
    texts: Sequence[str],
    *,
    doc_date: datetime | None = JAN_2025,
    vectors: Sequence[Sequence[float]] | None = None,
    **fields,
) -> Document:
    """A document with one chunk per text (hashing-encoder vectors unless given), chunk_count kept true."""
    document = DocumentFactory(workspace=workspace, path=path, title=fields.pop("title", path.rsplit("/", 1)[-1]),
                               doc_date=doc_date, chunk_count=len(texts), **fields)
    for index, text in enumerate(texts):
        extra = {"embedding": list(vectors[index])} if vectors is not None else {}
        ChunkFactory(document=document, text=text, chunk_index=index, total_chunks=len(texts),
                     heading_path=f"{document.title} > part {index}", **extra)
    return document


def chunk_of(document: Document, index: int = 0) -> Chunk:
    return document.chunks.get(chunk_index=index)


def make_record(canonical: Chunk, *variants: Chunk) -> CanonicalRecord:
    record = CanonicalRecord.objects.create(workspace_id=canonical.workspace_id, canonical_chunk=canonical,
                                            merge_count=len(variants))
    for variant in variants:
        ChunkVariant.objects.create(record=record, chunk=variant, similarity=0.97)
    return record


def license_workspace(workspace: Workspace) -> None:
    LicenseFactory(workspace=workspace)


def options(workspace: Workspace, **changes) -> SearchOptions:
    return SearchOptions(workspace=workspace, **changes)


def random_chunks(document: Document, count: int, *, start: int = 0, seed: float = 0.42) -> np.ndarray:
    """`count` chunks with seeded random vectors, made by PostgreSQL itself; returns their unit vectors.

    Fast because nothing is formatted in Python; texts are distinct ("filler
    passage N") and say nothing.
    """
    with connection.cursor() as cursor:
        cursor.execute("SELECT setseed(%s)", [seed])
        cursor.execute(
            f"""INSERT INTO {Chunk._meta.db_table} (workspace_id, document_id, text, text_hash, heading_path,
                    chunk_index, total_chunks, chunk_position, embedding, created_at)
                SELECT %s, %s, 'filler passage ' || i, md5(i::text), '', i - %s, %s, 'middle',
                       (SELECT array_agg(random() - 0.5) FROM generate_series(1, 384) WHERE i IS NOT NULL)::vector,
                       now()
                FROM generate_series(%s, %s) AS i""",
            [document.workspace_id, document.pk, start, count, start, start + count - 1],
        )
        cursor.execute(
            f"SELECT embedding::text FROM {Chunk._meta.db_table} WHERE document_id = %s ORDER BY chunk_index",
            [document.pk],
        )
        vectors = np.array([np.array(row[0].strip("[]").split(","), dtype=np.float32) for row in cursor.fetchall()])
    Document.objects.filter(pk=document.pk).update(chunk_count=count)
    return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


@contextmanager
def hnsw_built_after():
    """Drop the HNSW index, let the block insert, then build it again: far faster than row-by-row inserts.

    Inside the test's transaction, so the rollback at its end restores everything.
    """
    index = next(i for i in Chunk._meta.indexes if i.name == "chunk_embedding_hnsw")
    with connection.schema_editor() as editor:
        editor.remove_index(Chunk, index)
    yield
    with connection.cursor() as cursor:
        cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")  # CREATE INDEX refuses pending FK checks
    with connection.schema_editor() as editor:
        editor.add_index(Chunk, index)
    with connection.cursor() as cursor:
        cursor.execute(f"ANALYZE {Chunk._meta.db_table}")


@pytest.fixture(autouse=True)
def retrieval_isolation(settings):
    """Imported by every retrieval test module (autouse).

    The shared fixtures' users hash a password, and the default hasher takes a
    second: no part of retrieval. The doc-type keyword and scope count caches
    must not carry a test's rows (rolled back) into the next test.
    """
    from rag.retrieval import filters, ranking

    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    ranking.reset_doc_type_keywords()
    filters.reset_scope_counts()
    yield
    ranking.reset_doc_type_keywords()
    filters.reset_scope_counts()


@pytest.fixture(scope="module")
def minilm():
    from rag import embeddings

    return embeddings.SentenceTransformerEncoder()


@pytest.fixture
def encoder(settings, minilm, monkeypatch):
    """The real encoder as the process's encoder; loaded once per module (a load takes seconds)."""
    from rag import embeddings
    from rag.encoders import choice

    settings.EMBEDDING_ENCODER = "minilm"
    monkeypatch.setitem(choice._ENCODER_FACTORIES, "minilm", lambda batch_size, threads: minilm)
    embeddings.reset_encoder()
    yield embeddings.get_encoder()
    embeddings.reset_encoder()
