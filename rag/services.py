"""Writes: indexing jobs, document state changes. Views, tasks and commands call these."""

from __future__ import annotations

import logging
import re
import uuid
from collections.abc import Iterable
from pathlib import Path

from django.conf import settings
from django.core.files.uploadedfile import UploadedFile
from django.db import transaction
from django.db.models import Count, Q
from django.utils import timezone

from rag.models import Document, IndexingJob, IndexingJobItem, Workspace

logger = logging.getLogger(__name__)


def _enqueue_items(item_ids: list[int]) -> None:
    from rag.tasks import index_document

    for item_id in item_ids:
        index_document.delay(item_id)


def _files_under(root: Path) -> Iterable[Path]:
    for path in sorted(root.rglob("*")):
        if path.is_file() and not any(part.startswith(".") for part in path.relative_to(root).parts):
            yield path


def indexing_job_create(
    *,
    workspace: Workspace,
    paths: list[Path],
    source: str = IndexingJob.Source.CLI,
    created_by=None,
    enqueue: bool = True,
) -> IndexingJob:
    """Queue every file under `paths`; documents missing from an ingested folder are archived."""
    files: list[Path] = []
    folders: list[Path] = []
    for given in paths:
        resolved = given.expanduser().resolve()
        if resolved.is_dir():
            folders.append(resolved)
            files.extend(_files_under(resolved))
        elif resolved.is_file():
            files.append(resolved)
        else:
            raise FileNotFoundError(f"no such file or folder: {given}")
    seen = {str(path) for path in files}
    unchanged = _unchanged_documents(workspace, files)
    with transaction.atomic():
        job = IndexingJob.objects.create(
            workspace=workspace, source=source, created_by=created_by,
            description=", ".join(str(p) for p in paths)[:500],
        )
        now = timezone.now()
        items = IndexingJobItem.objects.bulk_create(
            IndexingJobItem(job=job, path=str(path), source_file=str(path))
            if (document := unchanged.get(str(path))) is None else
            IndexingJobItem(job=job, path=str(path), source_file=str(path), status=IndexingJobItem.Status.UNCHANGED,
                            document=document, chunk_count=document.chunk_count, started_at=now, finished_at=now)
            for path in files
        )
        archived = 0
        for folder in folders:
            gone = (
                Document.objects.filter(workspace=workspace, archived=False, path__startswith=f"{folder}/")
                .exclude(path__in=seen)
            )
            archived += documents_archive(documents=gone)
        # An archived file that is back unchanged returns as it was, and merges again.
        documents_unarchive(documents=Document.objects.filter(pk__in=[d.pk for d in unchanged.values() if d.archived]))
        job.archived_count = archived
        job.save(update_fields=["archived_count"])
        _job_finish_if_done(job.pk)  # every file unchanged: nothing to wait for
        job.refresh_from_db(fields=["finished_at"])
        if enqueue:
            ids = [item.pk for item in items if item.status == IndexingJobItem.Status.QUEUED]
            transaction.on_commit(lambda: _enqueue_items(ids))
    logger.info("indexing job created", extra={"job_id": job.pk, "workspace": workspace.slug, "files": len(files),
                                                "unchanged": len(unchanged), "archived": archived})
    return job


def _unchanged_documents(workspace: Workspace, files: list[Path]) -> dict[str, Document]:
    """Indexed documents whose file still has the same bytes, by path: their items need no worker.

    The same size first, then the same SHA-256 (what the pipeline compares): a re-ingested
    folder of thousands of files queues only what changed.
    """
    from rag.ingest.pipeline import file_hash

    documents = {
        document.path: document
        for document in Document.objects.filter(
            workspace=workspace, path__in=[str(path) for path in files], status=Document.Status.INDEXED,
        ).exclude(content_hash="").only("pk", "path", "content_hash", "size_bytes", "chunk_count", "archived")
    }
    unchanged = {}
    for path in files:
        document = documents.get(str(path))
        try:
            if document and path.stat().st_size == document.size_bytes and file_hash(path) == document.content_hash:
                unchanged[str(path)] = document
        except OSError:
            pass  # the worker reports an unreadable file properly
    return unchanged


_UNSAFE = re.compile(r"[^A-Za-z0-9._ ()+-]+")


def safe_upload_name(name: str) -> str:
    """A bare file name: no folders, no traversal, no control characters."""
    base = name.replace("\\", "/").split("/")[-1]
    base = _UNSAFE.sub("_", base).strip(" .")
    return base[:200] or "upload"


def upload_job_create(*, workspace: Workspace, files: list[UploadedFile], created_by) -> IndexingJob:
    """Store uploads under DATA_DIR and queue them; the stored name never leaves the job folder."""
    batch_dir = Path(settings.MEDIA_ROOT) / "uploads" / workspace.slug / uuid.uuid4().hex
    batch_dir.mkdir(parents=True, exist_ok=True)
    stored: list[tuple[str, Path]] = []
    used: set[str] = set()
    for upload in files:
        name = safe_upload_name(upload.name or "")
        while name in used:
            name = f"_{name}"
        used.add(name)
        target = batch_dir / name
        with open(target, "wb") as out:
            for piece in upload.chunks():
                out.write(piece)
        stored.append((f"uploads/{name}", target))
    with transaction.atomic():
        job = IndexingJob.objects.create(
            workspace=workspace, source=IndexingJob.Source.UPLOAD, created_by=created_by,
            description=f"{len(stored)} uploaded file(s)",
        )
        items = IndexingJobItem.objects.bulk_create(
            IndexingJobItem(job=job, path=path, source_file=str(target)) for path, target in stored
        )
        ids = [item.pk for item in items]
        transaction.on_commit(lambda: _enqueue_items(ids))
    return job


def job_item_run(*, item_id: int, merge_inline: bool = False) -> str:
    """Run one queued item; running it again after it finished changes nothing.

    merge_inline: merge the new chunks in this process instead of queueing the merge (no worker).
    """
    from rag.ingest.pipeline import document_index

    item = IndexingJobItem.objects.select_related("job").filter(pk=item_id).first()
    if item is None:
        logger.info("job item gone", extra={"item_id": item_id})
        return "gone"
    if item.status in IndexingJobItem.FINISHED:
        return item.status
    IndexingJobItem.objects.filter(pk=item_id).update(status=IndexingJobItem.Status.RUNNING, started_at=timezone.now())
    try:
        outcome = document_index(
            workspace_id=item.job.workspace_id, path=item.path, source_file=Path(item.source_file),
            file_mtime=item.file_mtime, mtime_is_upload_time=item.mtime_is_upload_time,
        )
    except Exception as exc:
        # Transient errors are retried by the task; anything else must still end the item.
        from rag.tasks import TRANSIENT_ERRORS

        if isinstance(exc, TRANSIENT_ERRORS):
            IndexingJobItem.objects.filter(pk=item_id).update(status=IndexingJobItem.Status.QUEUED)
            raise
        logger.exception("document crashed", extra={"item_id": item_id, "path": item.path})
        outcome_status, error, document_id, chunks, encoded = "failed", f"internal error: {type(exc).__name__}: {exc}", None, 0, 0
    else:
        outcome_status, error = outcome.status, outcome.error
        document_id, chunks, encoded = outcome.document_id, outcome.chunk_count, outcome.encoded_count
    IndexingJobItem.objects.filter(pk=item_id).update(
        status=outcome_status, error=error[:2000], document_id=document_id, chunk_count=chunks,
        encoded_count=encoded, finished_at=timezone.now(),
    )
    _job_finish_if_done(item.job_id)
    if outcome_status == "indexed" and document_id is not None:
        from rag.hooks import after_document_indexed

        after_document_indexed(document_id=document_id, inline=merge_inline)
    return outcome_status


def _job_finish_if_done(job_id: int) -> None:
    pending = IndexingJobItem.objects.filter(job_id=job_id).exclude(status__in=IndexingJobItem.FINISHED).exists()
    if not pending:
        IndexingJob.objects.filter(pk=job_id, finished_at__isnull=True).update(finished_at=timezone.now())


def job_progress(*, job: IndexingJob) -> dict:
    counts = job.items.aggregate(
        total=Count("id"),
        **{status: Count("id", filter=Q(status=status)) for status in IndexingJobItem.Status.values},
    )
    finished = sum(counts[s] for s in IndexingJobItem.FINISHED)
    counts["finished"] = finished
    counts["percent"] = round(100 * finished / counts["total"]) if counts["total"] else 100
    counts["done"] = finished == counts["total"]
    return counts


def documents_archive(*, documents) -> int:
    """Archived documents stay stored but leave search; returns how many changed."""
    ids = list(documents.filter(archived=False).values_list("pk", flat=True))
    if not ids:
        return 0
    Document.objects.filter(pk__in=ids).update(archived=True, updated_at=timezone.now())
    from rag.hooks import after_documents_archived

    after_documents_archived(document_ids=ids)
    return len(ids)


def documents_unarchive(*, documents) -> int:
    ids = list(documents.filter(archived=True).values_list("pk", flat=True))
    Document.objects.filter(pk__in=ids).update(archived=False, updated_at=timezone.now())
    from rag.hooks import after_document_indexed

    for document_id in ids:
        after_document_indexed(document_id=document_id)
    return len(ids)


def documents_reindex(*, documents, created_by=None) -> IndexingJob | None:
    """Queue the documents' source files again, parsed afresh even if unchanged."""
    docs = list(documents.select_related("workspace"))
    if not docs:
        return None
    workspace = docs[0].workspace
    with transaction.atomic():
        Document.objects.filter(pk__in=[d.pk for d in docs]).update(content_hash="")
        job = IndexingJob.objects.create(workspace=workspace, source=IndexingJob.Source.REINDEX, created_by=created_by,
                                         description=f"re-index {len(docs)} document(s)")
        sources = {
            item.document_id: item.source_file
            for item in IndexingJobItem.objects.filter(document__in=docs).order_by("id")
        }
        items = IndexingJobItem.objects.bulk_create(
            IndexingJobItem(job=job, path=d.path, source_file=sources.get(d.pk, d.path)) for d in docs
            if d.workspace_id == workspace.pk
        )
        ids = [item.pk for item in items]
        transaction.on_commit(lambda: _enqueue_items(ids))
    return job
