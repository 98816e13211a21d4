"""`document_index`: the whole indexing flow for one file, readable top to bottom.

read -> hash (unchanged? stop) -> parse -> date -> chunk -> doc type -> version label -> embed
(cache first) -> one transaction that replaces the document's chunks.
"""

from __future__ import annotations

import json
import logging
import os
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from rag.dedup import chunks_detach, reviews_carry_over
from rag.embeddings import embed_with_cache, encoder_model, get_encoder, text_hash
from rag.chunking import ChunkDraft, chunk_document
from rag.ingest.dates import DocDate, resolve_doc_date
from rag.ingest.doctypes import DocTypeRule, classify_doc_type, section_headings
from rag.parsers import (
    Attachment,
    ParseError,
    ParseLimits,
    Progress,
    UnsupportedFormat,
    detect_format,
    no_progress,
    parse_document,
)
from rag.releases import VersionLabel, extract_version_label, parse_version, series_metadata, version_key
from rag.models import Chunk, DocType, Document
from rag.retrieval import chunk_identifiers
from rag.storage import content_hash, source_read

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class IndexOutcome:
    status: str  # "indexed" | "unchanged" | "skipped" | "failed"
    document_id: int | None = None
    chunk_count: int = 0
    encoded_count: int = 0
    error: str = ""
    note: str = ""  # what was left out (cells past the bound, unread pages, unsupported attachments)
    unarchived: bool = False  # an archived document back unchanged: in search again, and owed a merge


def doc_type_rules() -> list[DocTypeRule]:
    return [
        DocTypeRule(slug=row.slug, keywords=tuple(row.keywords), path_patterns=tuple(row.path_patterns))
        for row in DocType.objects.all()
    ]


def parse_limits() -> ParseLimits:
    return ParseLimits(max_unpacked_bytes=settings.OFFICE_MAX_UNPACKED_BYTES,
                       max_cells_per_sheet=settings.XLSX_MAX_CELLS_PER_SHEET, max_ocr_pages=settings.OCR_MAX_PAGES)


def _fail(workspace_id: int, path: str, reason: str, *, size: int = 0, parent_id: int | None = None) -> IndexOutcome:
    """Record the failure on the document; an earlier good version keeps its chunks."""
    with transaction.atomic():
        document, created = Document.objects.select_for_update().get_or_create(
            workspace_id=workspace_id,
            path=path,
            defaults={"title": Path(path).name, "format": "", "status": Document.Status.FAILED, "error": reason,
                      "size_bytes": size, "content_hash": "", "parent_id": parent_id},
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


def _apply_hints(hints: dict[str, str], version: VersionLabel | None, doc_date: DocDate) -> tuple:
    """The source's label and date in place of the file's, each only when the source has one."""
    label = hints.get("version_label", "")
    if label and (key := version_key(label)):
        version = VersionLabel(label=str(parse_version(label)), key=key, source=hints.get("version_source", "git_tag"))
    if hints.get("doc_date"):
        doc_date = DocDate(datetime.fromisoformat(hints["doc_date"]), hints.get("date_source", "git_commit"))
    return version, doc_date


def document_index(
    *, workspace_id: int, path: str, source_file: str, file_mtime: float | None = None,
    mtime_is_upload_time: bool = False, display_path: str = "", hints: dict[str, str] | None = None,
    progress: Progress = no_progress,
) -> IndexOutcome:
    """Index one file; a bad file fails alone with a reason a person can act on.

    source_file: where the bytes are (rag.storage): a stored copy, or a path on this machine; a storage
    that cannot be reached raises StorageUnavailable, for the task to retry.

    file_mtime: the file's own mtime when the stored copy lost it (browser upload, zip member);
    mtime_is_upload_time: nothing told us when the file was written, so its date is the upload's;
    display_path: the path inside the ingested folder, which the type's path patterns read (the
    server's own folders say nothing about the document);
    hints: what the source knows better than the file (rag.sources): a Git tag's version label and
    its commit's date, trusted above anything written in the file;
    progress: hears how far a slow file is ("OCR page 3 of 12").
    """
    try:
        detect_format(Path(path))
    except UnsupportedFormat as exc:
        return IndexOutcome(status="skipped", error=str(exc))
    try:
        source = source_read(source_file, max_bytes=settings.INGEST_MAX_FILE_BYTES, want_mtime=file_mtime is None)
    except OSError as exc:
        return _fail(workspace_id, path, f"cannot read the file: {exc.strerror or exc}")
    if source.data is None:
        limit_mb, size = settings.INGEST_MAX_FILE_BYTES / 1024 / 1024, source.size
        return _fail(workspace_id, path, f"file is {size / 1024 / 1024:.1f} MB, over the {limit_mb:.0f} MB limit", size=size)
    data, mtime = source.data, file_mtime if file_mtime is not None else source.mtime
    return _index_bytes(
        workspace_id=workspace_id, path=path, data=data, mtime=mtime, mtime_source="upload_time" if mtime_is_upload_time
        else "mtime", display_path=display_path, hints=hints, progress=progress, file_stat=source.stat,
    )


def _index_bytes(
    *, workspace_id: int, path: str, data: bytes, mtime: float | None, mtime_source: str, display_path: str = "",
    hints: dict[str, str] | None = None, progress: Progress = no_progress, parent_id: int | None = None,
    depth: int = 0, file_stat: str = "",
) -> IndexOutcome:
    """document_index once the bytes are read; attachments come back here with their message as parent.

    file_stat: the local file's rag.storage.file_stat_key, taken before its bytes were read: kept with the
    hash it vouches for, so that the next sync of its folder need not read it.
    """
    digest = content_hash(data)
    existing = Document.objects.filter(workspace_id=workspace_id, path=path).first()
    if existing and existing.content_hash == digest and existing.status == Document.Status.INDEXED:
        # Back unchanged since the job was created: searchable again; the caller merges it (rag.jobs.run).
        unarchived = bool(existing.archived and Document.objects.filter(pk=existing.pk, archived=True).update(
            archived=False, updated_at=timezone.now()))
        if file_stat and file_stat != existing.file_stat:
            Document.objects.filter(pk=existing.pk, content_hash=digest).update(file_stat=file_stat)
        return IndexOutcome(status="unchanged", document_id=existing.pk, chunk_count=existing.chunk_count,
                            unarchived=unarchived)

    try:
        parsed = parse_document(Path(path), data, limits=parse_limits(), progress=progress)
    except ParseError as exc:
        return _fail(workspace_id, path, str(exc), size=len(data), parent_id=parent_id)
    except UnsupportedFormat as exc:
        return IndexOutcome(status="skipped", error=str(exc))

    doc_date = resolve_doc_date(parsed, mtime, mtime_source=mtime_source)
    drafts: list[ChunkDraft] = chunk_document(
        parsed,
        target_words=settings.CHUNK_TARGET_WORDS,
        max_words=settings.CHUNK_MAX_WORDS,
        overlap_words=settings.CHUNK_OVERLAP_WORDS,
    )
    if not drafts and (elsewhere := parsed.metadata.get("elsewhere")):
        # A Sphinx index page or an autodoc stub: its text is in other files (indexed on their own) or in code.
        return IndexOutcome(status="skipped", error=f"only {' and '.join(elsewhere)}: nothing to index here")
    if not drafts and not parsed.attachments:
        return _fail(workspace_id, path, "no text to index", size=len(data), parent_id=parent_id)
    doc_type = classify_doc_type(
        path=display_path or path, title=parsed.title, text=parsed.text, frontmatter_type=parsed.doc_type,
        rules=doc_type_rules(), headings=section_headings(parsed.sections),
    )
    version = extract_version_label(path=path, title=parsed.title, metadata=parsed.metadata, doc_format=parsed.format)
    if hints:
        version, doc_date = _apply_hints(hints, version, doc_date)
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
        document.file_stat = file_stat
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
        document.metadata = {**_json_metadata(parsed.metadata), **series_metadata(parsed)}
        document.inferred_release_forget()  # placed again after the merge, from what the file says now
        document.parent_id = parent_id
        document.status = Document.Status.INDEXED
        document.error = ""
        document.archived = False
        document.chunk_count = len(drafts)
        document.embedding_model = encoder_model(get_encoder().name)  # the vectors below are this model's
        document.indexed_at = timezone.now()
        document.save()
        old_chunk_ids = list(document.chunks.values_list("pk", flat=True))
        chunks_detach(chunk_ids=old_chunk_ids)
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
                page=draft.page,
                embedding=vector,
            )
            for draft, vector in zip(drafts, vectors)
        )
        if old_chunk_ids:
            reviews_carry_over(old_chunk_ids=old_chunk_ids, new_chunks=chunks)
            Chunk.objects.filter(pk__in=old_chunk_ids).delete()
    logger.info(
        "document indexed",
        extra={"workspace_id": workspace_id, "document_id": document.pk, "path": path, "chunks": len(drafts),
               "encoded": encoded, "doc_type": doc_type, "date_source": doc_date.source, "pid": os.getpid()},
    )
    notes = list(parsed.notices)
    if parsed.attachments:
        # The message's date dates an attachment that carries none of its own.
        sent = doc_date.value.timestamp() if doc_date.value and doc_date.source == "mail_date" else mtime
        notes.extend(_index_attachments(
            workspace_id=workspace_id, message_path=path, message_id=document.pk, attachments=parsed.attachments,
            mtime=sent, mtime_source="mail_date" if sent != mtime else mtime_source, depth=depth,
        ))
    return IndexOutcome(status="indexed", document_id=document.pk, chunk_count=len(drafts), encoded_count=encoded,
                        note="; ".join(notes))


def attachment_path(message_path: str, name: str) -> str:
    """"uploads/mail.eml::report.docx": unique per message, ending in the attachment's own extension."""
    return f"{message_path}::{Path(name.replace(chr(92), '/')).name or 'attachment'}"


def _index_attachments(
    *, workspace_id: int, message_path: str, message_id: int, attachments: list[Attachment], mtime: float | None,
    mtime_source: str, depth: int,
) -> list[str]:
    """Each attachment of a supported type as a document of its own whose parent is the message (merged with it:
    rag.jobs.merging finds a message's attachments by their parent); returns the notes."""
    indexed: list[str] = []
    notes: list[str] = []
    used: set[str] = set()
    for attachment in attachments:
        path = attachment_path(message_path, attachment.name)
        stem, suffix, number = path[: -len(Path(path).suffix) or None], Path(path).suffix, 1
        while path in used:  # two attachments of one name
            number += 1
            path = f"{stem} ({number}){suffix}"
        used.add(path)
        try:
            detect_format(Path(path))
        except UnsupportedFormat as exc:
            notes.append(f"attachment {attachment.name} not indexed: {exc}")
            continue
        if depth >= settings.MAIL_ATTACHMENT_MAX_DEPTH:
            notes.append(f"attachment {attachment.name} not indexed: nested deeper than MAIL_ATTACHMENT_MAX_DEPTH")
            continue
        outcome = _index_bytes(workspace_id=workspace_id, path=path, data=attachment.data, mtime=mtime,
                               mtime_source=mtime_source, parent_id=message_id, depth=depth + 1)
        if outcome.document_id is not None and outcome.status in ("indexed", "unchanged"):
            Document.objects.filter(pk=outcome.document_id).exclude(parent_id=message_id).update(parent_id=message_id)
            indexed.append(attachment.name)
        elif outcome.status == "failed":
            notes.append(f"attachment {attachment.name} failed: {outcome.error}")
        if outcome.note:
            notes.append(f"{attachment.name}: {outcome.note}")
    if indexed:
        notes.insert(0, f"{len(indexed)} attachment(s) indexed as their own documents: {', '.join(indexed)}")
    return notes
