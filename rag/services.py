"""Writes: indexing jobs, document state changes. Views, tasks and commands call these."""

from __future__ import annotations

import hashlib
import logging
import lzma
import re
import struct
import uuid
import zipfile
import zlib
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path, PurePosixPath

from django.conf import settings
from django.core.files.uploadedfile import UploadedFile
from django.db import connection, transaction
from django.db.models import Count, Min, Q, Sum
from django.db.models.functions import Coalesce
from django.utils import timezone

from rag.ingest.parsers import UnsupportedFormat, detect_format
from rag.jobs import job_finish_if_done
from rag.models import Document, IndexingJob, IndexingJobItem, Workspace
from rag.progress import job_rates
from rag.upload_limits import (
    UploadBudget,
    UploadTooLarge,
    bounded,
    size_text,
    stored_copies_delete,
    upload_refusal,
)

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
    shown: dict[Path, str] = {}  # what pages show: the path inside the folder given, a lone file's name
    for given in paths:
        resolved = given.expanduser().resolve()
        if resolved.is_dir():
            folders.append(resolved)
            under = list(_files_under(resolved))
            files.extend(under)
            shown.update({path: path.relative_to(resolved).as_posix() for path in under})
        elif resolved.is_file():
            files.append(resolved)
            shown[resolved] = resolved.name
        else:
            raise FileNotFoundError(f"no such file or folder: {given}")
    seen = {str(path) for path in files}
    unchanged = _unchanged_documents(workspace, files)
    with transaction.atomic():
        job = IndexingJob.objects.create(
            workspace=workspace, source=source, created_by=created_by,
            # Folder names only: the server's own layout is for staff (the admin shows items' paths).
            description=", ".join(given.expanduser().resolve().name or str(given) for given in paths)[:500],
        )
        now = timezone.now()
        items = IndexingJobItem.objects.bulk_create(
            IndexingJobItem(job=job, path=str(path), display_path=shown[path], source_file=str(path))
            if (document := unchanged.get(str(path))) is None else
            IndexingJobItem(job=job, path=str(path), display_path=shown[path], source_file=str(path),
                            status=IndexingJobItem.Status.UNCHANGED, document=document,
                            chunk_count=document.chunk_count, started_at=now, finished_at=now)
            for path in files
        )
        _documents_show_paths({item.document_id: item.display_path for item in items if item.document_id})
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
        job_finish_if_done(job.pk)  # every file unchanged: nothing to wait for
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
# Folder names are cut shorter than file names so that a deep path still fits Document.path.
_MAX_FOLDERS, _FOLDER_CHARS, _NAME_CHARS = 8, 60, 200
_MB = 1024 * 1024


def safe_upload_path(name: str) -> str:
    """A relative path made safe: no traversal, no absolute path, no backslashes, no control characters."""
    parts = [part for part in (_UNSAFE.sub("_", raw).strip(" .") for raw in name.replace("\\", "/").split("/")) if part]
    if not parts:
        return "upload"
    folders = [part[:_FOLDER_CHARS] for part in parts[:-1]][-_MAX_FOLDERS:]
    return "/".join([*folders, parts[-1][:_NAME_CHARS]])


def _hidden(name: str) -> bool:
    """Dotfiles, dot-folders (.git) and macOS resource forks in zips: never documents, as in `ingest FOLDER`."""
    parts = name.replace("\\", "/").split("/")
    return any((part.startswith(".") and part not in (".", "..")) or part == "__MACOSX" for part in parts)


@dataclass(frozen=True)
class IncomingFile:
    """One browser upload and what only the browser knew: its path in a chosen folder, its mtime."""

    upload: UploadedFile
    relative_path: str  # the bare name unless it came from a folder
    mtime: float | None = None  # seconds since the epoch; None: the browser sent no lastModified


@dataclass(frozen=True)
class _Staged:
    """A received file before we know which document it is."""

    path: str  # the wanted document path, uploads/...
    stored: str = ""
    digest: str = ""
    mtime: float | None = None
    error: str = ""


def _store(pieces: Iterable[bytes], batch_dir: Path, relative: str) -> tuple[str, str]:
    """Write the bytes into the batch folder; returns where, and their SHA-256 (the pipeline's content_hash).

    Bytes refused midway (UploadTooLarge) leave nothing behind.
    """
    target = batch_dir / f"{uuid.uuid4().hex[:12]}-{PurePosixPath(relative).name}"
    digest = hashlib.sha256()
    try:
        with open(target, "wb") as out:
            for piece in pieces:
                digest.update(piece)
                out.write(piece)
    except BaseException:
        target.unlink(missing_ok=True)
        raise
    return str(target), digest.hexdigest()


def _stage(incoming: IncomingFile, batch_dir: Path, budget: UploadBudget) -> list[_Staged]:
    relative = safe_upload_path(incoming.relative_path)
    refused = upload_refusal(incoming.upload)  # refused as it arrived (rag.upload_limits)
    if refused:
        return [_Staged(path=f"uploads/{relative}", error=refused)]
    if relative.lower().endswith(".zip"):
        return _stage_zip(incoming.upload, relative, batch_dir, budget)
    if not incoming.upload.size:
        return [_Staged(path=f"uploads/{relative}", error="empty file")]
    refused = budget.refusal(incoming.upload.size)
    if refused:
        return [_Staged(path=f"uploads/{relative}", error=f"not stored: {refused}")]
    stored, digest = _store(incoming.upload.chunks(), batch_dir, relative)
    budget.spend(incoming.upload.size)
    return [_Staged(path=f"uploads/{relative}", stored=stored, digest=digest, mtime=incoming.mtime)]


def _stage_zip(archive: UploadedFile, relative: str, batch_dir: Path, budget: UploadBudget) -> list[_Staged]:
    """A zip's supported members, each under uploads/<zip path without .zip>/ with its own mtime.

    The limits apply to the sizes the archive declares, before anything is unpacked: zipfile
    never yields more bytes than declared and checks the CRC, so a lying header fails its member.
    """
    try:
        with zipfile.ZipFile(archive) as bundle:
            members = [info for info in bundle.infolist() if _wanted_member(info)]
            unpacked = sum(info.file_size for info in members if info.file_size <= settings.INGEST_MAX_FILE_BYTES)
            if len(members) > settings.UPLOAD_ZIP_MAX_MEMBERS or unpacked > settings.UPLOAD_ZIP_MAX_BYTES:
                reason = (f"archive too large: {len(members)} files, {unpacked / _MB:.0f} MB unpacked (limits "
                          f"{settings.UPLOAD_ZIP_MAX_MEMBERS} files, {settings.UPLOAD_ZIP_MAX_BYTES / _MB:.0f} MB)")
                return [_Staged(path=f"uploads/{relative}", error=reason)]
            refused = budget.refusal(unpacked)  # what the archive declares, before anything is unpacked
            if refused:
                return [_Staged(path=f"uploads/{relative}", error=f"archive not unpacked: {refused}")]
            if not members:
                return [_Staged(path=f"uploads/{relative}", error="no file of a supported type in the archive")]
            folder = f"uploads/{relative[:-len('.zip')]}"
            return [_stage_member(bundle, info, f"{folder}/{safe_upload_path(info.filename)}", batch_dir, budget)
                    for info in members]
    except (zipfile.BadZipFile, OSError, EOFError, ValueError) as exc:
        return [_Staged(path=f"uploads/{relative}", error=f"not a readable zip archive: {exc}")]


def _wanted_member(info: zipfile.ZipInfo) -> bool:
    if info.is_dir() or _hidden(info.filename):
        return False
    try:
        detect_format(Path(info.filename))
    except UnsupportedFormat:
        return False
    return True


def _stage_member(bundle: zipfile.ZipFile, info: zipfile.ZipInfo, path: str, batch_dir: Path,
                  budget: UploadBudget) -> _Staged:
    """One zip member; a member that is too big, empty, encrypted or damaged fails alone."""
    if info.file_size > settings.INGEST_MAX_FILE_BYTES:
        limit_mb = settings.INGEST_MAX_FILE_BYTES / _MB
        return _Staged(path=path, error=f"{info.file_size / _MB:.1f} MB unpacked, over the {limit_mb:.0f} MB limit")
    if not info.file_size:
        return _Staged(path=path, error="empty file")
    try:
        with bundle.open(info) as member:
            # The declared size was counted against the budget: the bytes actually unpacked may not pass it.
            pieces = bounded(iter(lambda: member.read(_MB), b""), limit=info.file_size,
                             reason=f"unpacks to more than the {size_text(info.file_size)} it declares")
            stored, digest = _store(pieces, batch_dir, path)
    except UploadTooLarge as exc:
        return _Staged(path=path, error=f"not unpacked: {exc}")
    except (zipfile.BadZipFile, OSError, EOFError, RuntimeError, NotImplementedError, zlib.error, lzma.LZMAError) as exc:
        return _Staged(path=path, error=f"cannot unpack this member: {exc}")
    budget.spend(info.file_size)
    return _Staged(path=path, stored=stored, digest=digest, mtime=_zip_mtime(info))


_ZIP_UNIX_TIME = 0x5455  # the "UT" extra field: mtime in UTC seconds, written by Info-ZIP and most tools
_DOS_EPOCH = (1980, 1, 1, 0, 0, 0)


def _zip_mtime(info: zipfile.ZipInfo) -> float | None:
    """The member's mtime: the UTC extra field if present, else the DOS time (no zone) read as UTC.

    1980-01-01 00:00, the DOS epoch, is what reproducible-build tools write for "no date": None.
    """
    extra = info.extra  # zipfile has checked that each field's declared size is there
    while len(extra) >= 4:
        kind, size = struct.unpack("<HH", extra[:4])
        if kind == _ZIP_UNIX_TIME and size >= 5 and extra[4] & 1:
            return float(struct.unpack("<i", extra[5:9])[0])
        extra = extra[4 + size:]
    if info.date_time <= _DOS_EPOCH:
        return None
    return datetime(*info.date_time, tzinfo=UTC).timestamp()


# pg_advisory_xact_lock(namespace, workspace_id) while an upload's paths are chosen.
_UPLOAD_PATHS_LOCK = 23_002


def _free_path(*, workspace: Workspace, wanted: str, digest: str, used: set[str]) -> str:
    """`wanted`, or `name (2).ext`, `name (3).ext`, ... while a different file holds that path."""
    def held(path: str) -> bool:
        documents = Document.objects.filter(workspace=workspace, path=path).exclude(content_hash=digest)
        # An item still to be indexed holds its path too: its document does not exist yet.
        waiting = IndexingJobItem.objects.filter(job__workspace=workspace, path=path, status__in=[
            IndexingJobItem.Status.QUEUED, IndexingJobItem.Status.RUNNING])
        # A failed document with nothing indexed holds no content to lose: the new file may take its path.
        return (path in used or waiting.exists()
                or documents.exclude(status=Document.Status.FAILED, chunk_count=0).exists())

    candidate, number, wanted_path = wanted, 1, PurePosixPath(wanted)
    while held(candidate):
        number += 1
        candidate = str(wanted_path.with_name(f"{wanted_path.stem} ({number}){wanted_path.suffix}"))
    return candidate


def _upload_items(workspace: Workspace, staged: list[_Staged]) -> list[IndexingJobItem]:
    """One job item per received file, its identity decided by content, not by name.

    A file identical to an indexed document (same SHA-256, whatever its name) is that document
    and is not indexed twice; a different file whose path is taken becomes `name (2).ext`, never
    a silent replacement (version lineage then relates the two if they are versions).
    """
    twins: dict[str, list[Document]] = {}
    for document in Document.objects.filter(
        workspace=workspace, archived=False, status=Document.Status.INDEXED,
        content_hash__in={entry.digest for entry in staged if entry.digest},
    ).only("pk", "path", "content_hash", "chunk_count").order_by("pk"):
        twins.setdefault(document.content_hash, []).append(document)
    now = timezone.now()
    placed: dict[str, str] = {}  # digest -> the path it is indexed under in this batch
    items = []
    for entry in staged:
        item = IndexingJobItem(path=entry.path, source_file=entry.stored, file_mtime=entry.mtime,
                               mtime_is_upload_time=entry.mtime is None)
        same = twins.get(entry.digest, [])
        twin = next((document for document in same if document.path == entry.path), same[0] if same else None)
        if entry.error:
            item.status, item.error = IndexingJobItem.Status.FAILED, entry.error
        elif twin is not None:
            item.status, item.document, item.chunk_count = IndexingJobItem.Status.UNCHANGED, twin, twin.chunk_count
            item.error = "" if twin.path == entry.path else f"identical to {twin.path}"
        elif entry.digest in placed:
            item.status, item.error = IndexingJobItem.Status.UNCHANGED, f"identical to {placed[entry.digest]} in this upload"
        else:
            item.path = placed[entry.digest] = _free_path(
                workspace=workspace, wanted=entry.path, digest=entry.digest, used=set(placed.values()),
            )
        if item.status != IndexingJobItem.Status.QUEUED:
            item.started_at = item.finished_at = now
        items.append(item)
    return items


def upload_job_create(*, workspace: Workspace, files: list[IncomingFile], created_by) -> IndexingJob:
    """Store uploads under DATA_DIR and queue them; a stored file never leaves the batch folder.

    A file keeps the mtime its browser sent (else its date is the upload's, and says so), a
    folder its relative paths, a .zip its members' paths and mtimes. A bad file fails alone,
    by name; the rest of the batch goes on.
    """
    batch_dir = Path(settings.MEDIA_ROOT) / "uploads" / workspace.slug / uuid.uuid4().hex
    batch_dir.mkdir(parents=True, exist_ok=True)
    wanted = [incoming for incoming in files if not _hidden(incoming.relative_path)]
    budget = UploadBudget(workspace=workspace)
    staged = [entry for incoming in wanted for entry in _stage(incoming, batch_dir, budget)]
    hidden = len(files) - len(wanted)
    with transaction.atomic():
        with connection.cursor() as cursor:
            # Paths are chosen and their items stored as one step: two uploads of one name at once get two paths.
            cursor.execute("SELECT pg_advisory_xact_lock(%s, %s)", [_UPLOAD_PATHS_LOCK, workspace.pk])
        items = _upload_items(workspace, staged)
        job = IndexingJob.objects.create(
            workspace=workspace, source=IndexingJob.Source.UPLOAD, created_by=created_by,
            description=f"{len(items)} uploaded file(s)" + (f", {hidden} hidden file(s) left out" if hidden else ""),
        )
        for item in items:
            item.job = job
        IndexingJobItem.objects.bulk_create(items)
        job_finish_if_done(job.pk)  # every file identical or failed: nothing to wait for
        ids = [item.pk for item in items if item.status == IndexingJobItem.Status.QUEUED]
        transaction.on_commit(lambda: _enqueue_items(ids))
    # Identical to a document or to another file of this upload: the copy is not needed.
    stored_copies_delete(item.source_file for item in items if item.status != IndexingJobItem.Status.QUEUED)
    return job


def job_item_run(*, item_id: int, merge_inline: bool = False, task_id: str = "") -> str:
    """Run one queued item; running it again after it finished changes nothing.

    merge_inline: merge the new chunks in this process instead of queueing the merge (no worker).
    task_id: the Celery task run that claims the item (rag.jobs.job_item_claim); "" in process.
    """
    from rag.ingest.pipeline import document_index
    from rag.jobs import job_item_claim, job_item_requeue

    item = job_item_claim(item_id=item_id, task_id=task_id)
    if item is None:
        status = IndexingJobItem.objects.filter(pk=item_id).values_list("status", flat=True).first()
        logger.info("job item not run", extra={"item_id": item_id, "status": status or "gone"})
        return status or "gone"
    try:
        outcome = document_index(
            workspace_id=item.job.workspace_id, path=item.path, source_file=Path(item.source_file),
            file_mtime=item.file_mtime, mtime_is_upload_time=item.mtime_is_upload_time,
            display_path=item.display_path,
        )
    except Exception as exc:
        # Transient errors are retried by the task; anything else must still end the item.
        from celery.exceptions import SoftTimeLimitExceeded

        from rag.tasks import TRANSIENT_ERRORS

        if isinstance(exc, TRANSIENT_ERRORS):
            job_item_requeue(item_id=item_id)
            raise
        if isinstance(exc, SoftTimeLimitExceeded):
            error = "stopped at the soft time limit: indexing this file took too long"
        else:
            logger.exception("document crashed", extra={"item_id": item_id, "path": item.path})
            error = f"internal error: {type(exc).__name__}: {exc}"
        outcome_status, document_id, chunks, encoded = "failed", None, 0, 0
    else:
        outcome_status, error = outcome.status, outcome.error
        document_id, chunks, encoded = outcome.document_id, outcome.chunk_count, outcome.encoded_count
        if outcome_status == "unchanged" and _indexed_since(document_id, item.job.created_at):
            # An earlier run of this item indexed the file, then lost the database before it could
            # say so: the file is this job's work, and its merge is still owed.
            outcome_status = "indexed"
    IndexingJobItem.objects.filter(pk=item_id).update(
        status=outcome_status, error=error[:2000], document_id=document_id, chunk_count=chunks,
        encoded_count=encoded, finished_at=timezone.now(), lease_expires_at=None,
    )
    if document_id is not None and item.display_path:
        _documents_show_paths({document_id: item.display_path})
    if outcome_status != "indexed":  # failed, skipped or identical: an upload's copy is kept for nothing
        stored_copies_delete([item.source_file])
    job_finish_if_done(item.job_id)
    if outcome_status == "indexed" and document_id is not None:
        from rag.hooks import after_document_indexed

        after_document_indexed(document_id=document_id, inline=merge_inline)
    return outcome_status


def _documents_show_paths(shown: dict[int, str]) -> None:
    """Record the path pages show for each document (relative to the folder it was last ingested from)."""
    for document_id, display_path in shown.items():
        Document.objects.filter(pk=document_id).exclude(display_path=display_path).update(display_path=display_path)


def _indexed_since(document_id: int | None, moment) -> bool:
    return Document.objects.filter(pk=document_id, indexed_at__gte=moment).exists()


def job_progress(*, job: IndexingJob) -> dict:
    """Counts by status, chunks done, and the measured rate and time left (rag.progress)."""
    counts = job.items.aggregate(
        total=Count("id"),
        chunks=Coalesce(Sum("chunk_count"), 0),
        first_started=Min("started_at"),
        **{status: Count("id", filter=Q(status=status)) for status in IndexingJobItem.Status.values},
    )
    finished = sum(counts[s] for s in IndexingJobItem.FINISHED)
    counts["finished"] = finished
    counts["percent"] = round(100 * finished / counts["total"]) if counts["total"] else 100
    counts["done"] = finished == counts["total"]
    counts.update(job_rates(finished=finished, total=counts["total"], chunks=counts["chunks"],
                            first_started=counts["first_started"], now=timezone.now()))
    return counts


def job_summary(*, job: IndexingJob) -> str:
    """One line per job, for `ingest` and `make run`'s console: what happened to its files, and how long it took."""
    progress = job_progress(job=job)
    parts = [f"{progress[s]} {s}" for s in ("indexed", "unchanged", "skipped", "failed") if progress[s]]
    if job.archived_count:
        parts.append(f"{job.archived_count} archived")
    line = f"job {job.pk}: {progress['total']} file(s): " + (", ".join(parts) or "nothing to do")
    if job.finished_at:
        seconds = round((job.finished_at - job.created_at).total_seconds())
        line += f" in {seconds // 60}m{seconds % 60:02d}s" if seconds >= 60 else f" in {seconds}s"
    return line


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
        # The latest item per document knows where its bytes are and what mtime they had (an upload's copy lost it).
        # Indexed items only: a duplicate's copy was deleted (its item points at the document it duplicates).
        sources = {item.document_id: item for item in IndexingJobItem.objects.filter(
            document__in=docs, status=IndexingJobItem.Status.INDEXED).order_by("id")}
        items = IndexingJobItem.objects.bulk_create(
            IndexingJobItem(job=job, path=d.path, display_path=d.display_path, source_file=sources[d.pk].source_file,
                            file_mtime=sources[d.pk].file_mtime, mtime_is_upload_time=sources[d.pk].mtime_is_upload_time)
            if d.pk in sources else IndexingJobItem(job=job, path=d.path, display_path=d.display_path, source_file=d.path)
            for d in docs if d.workspace_id == workspace.pk
        )
        ids = [item.pk for item in items]
        transaction.on_commit(lambda: _enqueue_items(ids))
    return job
