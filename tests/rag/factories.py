"""Typed factories for documents and chunks; embeddings come from the hashing encoder."""

from __future__ import annotations

import hashlib
from datetime import datetime, UTC

import factory

from rag.models import Chunk, Document
from rag.retrieval.identifiers import chunk_identifiers
from tests.factories import WorkspaceFactory


def hashing_vector(text: str) -> list[float]:
    from rag.embeddings import HashingEncoder

    return HashingEncoder().encode([text])[0]


class DocumentFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Document

    workspace = factory.SubFactory(WorkspaceFactory)
    path = factory.Sequence(lambda n: f"/docs/file-{n}.md")
    title = factory.Sequence(lambda n: f"Document {n}")
    format = "markdown"
    doc_date = datetime(2025, 1, 1, tzinfo=UTC)
    date_source = "frontmatter"
    doc_type = "user"
    status = Document.Status.INDEXED


class ChunkFactory(factory.django.DjangoModelFactory):
    """`ChunkFactory(document=doc, text="...")`; workspace follows the document."""

    class Meta:
        model = Chunk

    document = factory.SubFactory(DocumentFactory)
    workspace = factory.SelfAttribute("document.workspace")
    text = factory.Sequence(lambda n: f"Chunk number {n} says something distinct about topic {n}.")
    text_hash = factory.LazyAttribute(lambda o: hashlib.sha256(o.text.encode()).hexdigest())
    heading_path = factory.LazyAttribute(lambda o: o.document.title)
    identifiers = factory.LazyAttribute(lambda o: chunk_identifiers(text=o.text, heading_path=o.heading_path))
    chunk_index = 0
    total_chunks = 1
    chunk_position = "only"
    embedding = factory.LazyAttribute(lambda o: hashing_vector(o.text))
