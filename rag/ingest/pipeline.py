"""`document_index`: the whole indexing flow for one file, readable top to bottom.

read -> hash (unchanged? stop) -> parse -> date -> chunk -> doc type -> version label -> embed
(cache first) -> one transaction that replaces the document's chunks.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from rag.dedup import merge as dedup
from rag.documents import documents_unarchive
from rag.embeddings.cache import embed_with_cache, text_hash
from rag.ingest.chunking import ChunkDraft, chunk_document
from rag.ingest.dates import resolve_doc_date
from rag.ingest.doctypes import DocTypeRule, classify_doc_type, section_headings
from rag.ingest.parsers import ParseError, UnsupportedFormat, detect_format, parse_document
from rag.lineage.labels import extract_version_label
from rag.models import Chunk, DocType, Document
from rag.retrieval.identifiers import chunk_identifiers

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class IndexOutcome:
    status: str  # "indexed" | "unchanged" | "skipped" | "failed"
    document_id: int | None = None
    chunk_count: int = 0
    encoded_count: int = 0
    error: str = ""


def content_hash(data: bytes) -> str:
    """A document's identity: re-ingesting a file with the same digest does nothing."""
    return hashlib.sha256(data).hexdigest()


def file_hash(path: Path) -> str:
    """content_hash of a file, streamed."""
    with path.open("rb") as stream:
        return hashlib.file_digest(stream, "sha256").hexdigest()


def doc_type_rules() -> list[DocTypeRule]:
    return [
        DocTypeRule(slug=row.slug, keywords=tuple(row.keywords), path_patterns=tuple(row.path_patterns))
        for row in DocType.objects.all()
    ]


def _fail(workspace_id: int, path: str, reason: str, *, size: int = 0) -> IndexOutcome:
    """Record the failure on the document; an earlier good version keeps its chunks."""
    with transaction.atomic():
        document, created = Document.objects.select_for_update().get_or_create(
            workspace_id=workspace_id,
            path=path,
            defaults={"title": Path(path).name, "format": "", "status": Document.Status.FAILED, "error": reason,
                      "size_bytes": size, "content_hash": ""},
        )
        if not created:
            document.error = reason
            if document.chunk_count == 0:
                document.status = Document.Status.FAILED
            document.save(update_fields=["error", "status", "updated_at"])
    logger.warning("document failed", extra={"workspace_id": workspace_id, "path": path, "reason": reason})
    return IndexOutcome(status="failed", document_id=document.pk, error=reason)


def _json_metadata(metadata: dict[str, Any]) -> dict[str, Any]:
    """Frontmatter as written (lists, numbers), with anything JSON cannot hold as text."""
    try:
        return json.loads(json.dumps(metadata, default=str, allow_nan=False))
    except (TypeError, ValueError):
        return {key: str(value)[:500] for key, value in metadata.items()}


def document_index(
    *, workspace_id: int, path: str, source_file: Path, file_mtime: float | None = None,
    mtime_is_upload_time: bool = False, display_path: str = "",
) -> IndexOutcome:
    """Index one file; a bad file fails alone with a reason a person can act on.

    file_mtime: the file's own mtime when the stored copy lost it (browser upload, zip member);
    mtime_is_upload_time: nothing told us when the file was written, so its date is the upload's;
    display_path: the path inside the ingested folder, which the type's path patterns read (the
    server's own folders say nothing about the document).
    """
    try:
        detect_format(Path(path))
    except UnsupportedFormat as exc:
        return IndexOutcome(status="skipped", error=str(exc))
    try:
        size = source_file.stat().st_size
        if size > settings.INGEST_MAX_FILE_BYTES:
            limit_mb = settings.INGEST_MAX_FILE_BYTES / 1024 / 1024
            return _fail(workspace_id, path, f"file is {size / 1024 / 1024:.1f} MB, over the {limit_mb:.0f} MB limit", size=size)
        data = source_file.read_bytes()
        mtime = file_mtime if file_mtime is not None else source_file.stat().st_mtime
    except OSError as exc:
        return _fail(workspace_id, path, f"cannot read the file: {exc.strerror or exc}")

    digest = content_hash(data)
    existing = Document.objects.filter(workspace_id=workspace_id, path=path).first()
    if existing and existing.content_hash == digest and existing.status == Document.Status.INDEXED:
        if existing.archived:  # back unchanged since the job was created
            documents_unarchive(documents=Document.objects.filter(pk=existing.pk))
        return IndexOutcome(status="unchanged", document_id=existing.pk, chunk_count=existing.chunk_count)

    try:
        parsed = parse_document(Path(path), data)
    except ParseError as exc:
        return _fail(workspace_id, path, str(exc), size=len(data))
    except UnsupportedFormat as exc:
        return IndexOutcome(status="skipped", error=str(exc))

    doc_date = resolve_doc_date(parsed, mtime, mtime_source="upload_time" if mtime_is_upload_time else "mtime")
    drafts: list[ChunkDraft] = chunk_document(
        parsed,
        target_words=settings.CHUNK_TARGET_WORDS,
        max_words=settings.CHUNK_MAX_WORDS,
        overlap_words=settings.CHUNK_OVERLAP_WORDS,
    )
    if not drafts:
        return _fail(workspace_id, path, "no text to index", size=len(data))
    doc_type = classify_doc_type(
        path=display_path or path, title=parsed.title, text=parsed.text, frontmatter_type=parsed.doc_type,
        rules=doc_type_rules(), headings=section_headings(parsed.sections),
    )
    version = extract_version_label(path=path, title=parsed.title, metadata=parsed.metadata, doc_format=parsed.format)
    vectors, encoded = embed_with_cache([draft.text for draft in drafts])

    # One transaction per document: readers see the old version or the new one, never a mix.
    with transaction.atomic():
        document, _ = Document.objects.select_for_update().get_or_create(
            workspace_id=workspace_id, path=path, defaults={"title": parsed.title, "format": parsed.format}
        )
        document.title = parsed.title[:500]
        document.format = parsed.format
        document.content_hash = digest
        document.size_bytes = len(data)
        if document.date_set_by_id is None:  # a date set by hand outlives a re-index
            document.doc_date = doc_date.value
            document.date_source = doc_date.source
        if document.version_set_by_id is None:
            document.version_label = version.label if version else ""
            document.version_key = version.key if version else ""
            document.version_source = version.source if version else ""
        document.doc_type = doc_type
        document.source_type = parsed.source_type or ""
        document.tags = parsed.tags
        document.entities = parsed.entities
        document.metadata = _json_metadata(parsed.metadata)
        document.status = Document.Status.INDEXED
        document.error = ""
        document.archived = False
        document.chunk_count = len(drafts)
        document.indexed_at = timezone.now()
        document.save()
        old_chunk_ids = list(document.chunks.values_list("pk", flat=True))
        dedup.chunks_detach(chunk_ids=old_chunk_ids)
        chunks = Chunk.objects.bulk_create(
            Chunk(
                workspace_id=workspace_id,
                document=document,
                text=draft.text,
                text_hash=text_hash(draft.text),
                heading_path=draft.heading_path[:1000],
                identifiers=chunk_identifiers(text=draft.text, heading_path=draft.heading_path),
                chunk_index=draft.chunk_index,
                total_chunks=draft.total_chunks,
                chunk_position=draft.chunk_position,
                embedding=vector,
            )
            for draft, vector in zip(drafts, vectors)
        )
        if old_chunk_ids:
            dedup.reviews_carry_over(old_chunk_ids=old_chunk_ids, new_chunks=chunks)
            Chunk.objects.filter(pk__in=old_chunk_ids).delete()
    logger.info(
        "document indexed",
        extra={"workspace_id": workspace_id, "document_id": document.pk, "path": path, "chunks": len(drafts),
               "encoded": encoded, "doc_type": doc_type, "date_source": doc_date.source, "pid": os.getpid()},
    )
    return IndexOutcome(status="indexed", document_id=document.pk, chunk_count=len(drafts), encoded_count=encoded)
