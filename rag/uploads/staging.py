"""Staging files as indexing jobs: paths on this machine (`ingest PATH`, `make run`'s demo) and browser uploads
(files, folders, zip archives). Each file becomes one job item; rag.jobs runs them."""

from __future__ import annotations

import logging
import lzma
import os
import re
import struct
import uuid
import zipfile
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path, PurePosixPath

from django.conf import settings
from django.core.files.uploadedfile import UploadedFile
from django.db import connection, transaction
from django.utils import timezone

from rag.documents import documents_archive, documents_unarchive
from rag.parsers import UnsupportedFormat, detect_format, zip_entry_count
from rag.jobs import documents_show_paths, index_send, job_finish_if_done
from rag.models import Document, IndexingJob, IndexingJobItem, Workspace
from rag.storage import file_hash, file_stat_key, stored_copies_delete, stored_copy_save
from rag.uploads.limits import UploadBudget, UploadTooLarge, bounded, quota_hold, size_text, upload_refusal

logger = logging.getLogger(__name__)


LINK_SKIPPED = "a symbolic link: links are never followed (only the folder's own files are read)"


@dataclass(frozen=True)
class FolderContents:
    files: dict[str, Path]  # relative POSIX path -> regular file, in path order
    links: list[str]  # relative paths of symbolic links (to files or folders), left unread


def folder_walk(root: Path, select: Callable[[str], bool] | None = None) -> FolderContents:
    """The regular files under `root` that `select` takes; hidden files and folders are not even entered.

    A link is listed, never followed: whoever may write into a folder could otherwise point a link at
    anything the worker can read (/proc/self/environ, DATA_DIR/secret_key, another workspace's upload).
    A link to a file inside the folder loses nothing, as that file is read under its own name. A hard
    link is the file itself and is read (the kernel's protected_hardlinks lets nobody link a file they
    cannot already read and write).
    """
    files, links = {}, []
    for folder, subfolders, names in os.walk(root):  # followlinks=False: a linked folder is never entered
        linked = [name for name in subfolders if Path(folder, name).is_symlink()]
        subfolders[:] = [name for name in subfolders if not name.startswith(".") and name not in linked]
        for name in [*linked, *names]:
            path = Path(folder, name)
            relative = path.relative_to(root).as_posix()
            if name.startswith(".") or (select is not None and not select(relative)):
                continue
            if path.is_symlink():
                links.append(relative)
            elif path.is_file():  # not a link: a regular file, never a pipe or a device
                files[relative] = path
    return FolderContents(files=dict(sorted(files.items())), links=sorted(links))


def indexing_job_create(
    *,
    workspace: Workspace,
    paths: list[Path],
    source: str = IndexingJob.Source.CLI,
    created_by=None,
    enqueue: bool = True,
    select: Callable[[str], bool] | None = None,
    sync_source=None,
) -> IndexingJob:
    """Queue every file under `paths`; documents missing from an ingested folder are archived.

    select: which paths inside a folder to take (a source's include/exclude globs); sync_source: the Source synced,
    whose unchanged files are counted on the job (unchanged_count), not listed as items: most of a folder, each sync.
    """
    files: list[Path] = []
    folders: list[Path] = []
    links: list[Path] = []  # inside a folder given: skipped, by name
    shown: dict[Path, str] = {}  # what pages show: the path inside the folder given, a lone file's name
    for given in paths:
        resolved = given.expanduser().resolve()  # a path named by the operator is followed; links inside, never
        if resolved.is_dir():
            folders.append(resolved)
            contents = folder_walk(resolved, select)
            files.extend(contents.files.values())
            shown.update({path: relative for relative, path in contents.files.items()})
            for relative in contents.links:
                links.append(resolved / relative)
                shown[resolved / relative] = relative
        elif resolved.is_file():
            files.append(resolved)
            shown[resolved] = resolved.name
        else:
            raise FileNotFoundError(f"no such file or folder: {given}")
    seen = {str(path) for path in files}
    unchanged = _unchanged_documents(workspace, files)
    listed = [path for path in files if sync_source is None or str(path) not in unchanged]
    with transaction.atomic():
        job = IndexingJob.objects.create(
            workspace=workspace, source=source, created_by=created_by, sync_source=sync_source,
            # A source's job is named as the source is; else folder names only: the server's own layout is for
            # staff (the admin shows items' paths).
            description=(f"{sync_source.name} (folder)" if sync_source is not None else
                         ", ".join(given.expanduser().resolve().name or str(given) for given in paths))[:500],
        )
        now = timezone.now()
        items = IndexingJobItem.objects.bulk_create(
            IndexingJobItem(job=job, path=str(path), display_path=shown[path], source_file=str(path))
            if (document := unchanged.get(str(path))) is None else
            IndexingJobItem(job=job, path=str(path), display_path=shown[path], source_file=str(path),
                            status=IndexingJobItem.Status.UNCHANGED, document=document,
                            chunk_count=document.chunk_count, started_at=now, finished_at=now)
            for path in listed
        ) + IndexingJobItem.objects.bulk_create(
            IndexingJobItem(job=job, path=str(link), display_path=shown[link], source_file=str(link),
                            status=IndexingJobItem.Status.SKIPPED, error=LINK_SKIPPED, started_at=now, finished_at=now)
            for link in links
        )
        documents_show_paths({document.pk: shown[Path(path)] for path, document in unchanged.items()})
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
        job.unchanged_count = len(files) - len(listed)
        job.save(update_fields=["archived_count", "unchanged_count"])
        job_finish_if_done(job.pk)  # every file unchanged: nothing to wait for
        job.refresh_from_db(fields=["finished_at"])
        if enqueue:
            ids = [item.pk for item in items if item.status == IndexingJobItem.Status.QUEUED]
            transaction.on_commit(lambda: index_send(ids))
    logger.info("indexing job created", extra={"job_id": job.pk, "workspace": workspace.slug, "files": len(files),
                                                "unchanged": len(unchanged), "archived": archived})
    return job


def _unchanged_documents(workspace: Workspace, files: list[Path]) -> dict[str, Document]:
    """Indexed documents whose file still has the same bytes, by path: their items need no worker.

    The same size first, then the same SHA-256 (what the pipeline compares): a re-ingested
    folder of thousands of files queues only what changed. A file whose stat (rag.storage.file_stat_key) is
    the one kept with its document's hash is not read at all; one hashed equal gets its stat kept, so the
    next sync reads it no more. Bytes rewritten with size and mtime put back go unseen (as with rsync).
    """
    documents = {
        document.path: document
        for document in Document.objects.filter(
            workspace=workspace, path__in=[str(path) for path in files], status=Document.Status.INDEXED,
        ).exclude(content_hash="").only("pk", "path", "content_hash", "size_bytes", "chunk_count", "archived",
                                        "file_stat")
    }
    unchanged, vouched = {}, []
    for path in files:
        if (document := documents.get(str(path))) is None:
            continue
        try:
            stat = path.lstat()  # taken before the bytes are read: a write after it changes the next one
            if stat.st_size != document.size_bytes:
                continue
            key = file_stat_key(stat)
            if key and key == document.file_stat:
                unchanged[str(path)] = document
            elif file_hash(path) == document.content_hash:
                unchanged[str(path)] = document
                if key:
                    document.file_stat = key
                    vouched.append(document)
        except OSError:
            pass  # the worker reports an unreadable file properly
    Document.objects.bulk_update(vouched, ["file_stat"], batch_size=1000)
    return unchanged


_UNSAFE = re.compile(r"[^A-Za-z0-9._ ()+-]+")
# Folder names are cut shorter than file names so that a deep path still fits Document.path.
_MAX_FOLDERS, _FOLDER_CHARS, _NAME_CHARS = 8, 60, 200
_MB = 1024 * 1024
_NAMED_SKIPS = 100  # zip members of unsupported types named one by one; the rest are counted


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
    stored: str = ""  # the item's source_file: "stored:<name>" (rag.storage)
    digest: str = ""
    size: int = 0
    mtime: float | None = None
    error: str = ""
    skipped: bool = False  # not a document (a zip member of an unsupported type): `error` says why


def _stage(incoming: IncomingFile, batch: str, budget: UploadBudget) -> list[_Staged]:
    relative = safe_upload_path(incoming.relative_path)
    refused = upload_refusal(incoming.upload)  # refused as it arrived (rag.uploads.limits)
    if refused:
        return [_Staged(path=f"uploads/{relative}", error=refused)]
    if relative.lower().endswith(".zip"):
        return _stage_zip(incoming.upload, relative, batch, budget)
    if not incoming.upload.size:
        return [_Staged(path=f"uploads/{relative}", error="empty file")]
    refused = budget.refusal(incoming.upload.size)
    if refused:
        return [_Staged(path=f"uploads/{relative}", error=f"not stored: {refused}")]
    copy = stored_copy_save(incoming.upload.chunks(), folder=batch, file_name=relative)
    budget.spend(incoming.upload.size)
    return [_Staged(path=f"uploads/{relative}", stored=copy.source_file, digest=copy.digest, size=copy.size,
                    mtime=incoming.mtime)]


def _stage_zip(archive: UploadedFile, relative: str, batch: str, budget: UploadBudget) -> list[_Staged]:
    """A zip's supported members, each under uploads/<zip path without .zip>/ with its own mtime;
    the others skipped by name, so the job says how many and which.

    The limits apply to the sizes the archive declares, before anything is unpacked: zipfile
    never yields more bytes than declared and checks the CRC, so a lying header fails its member.
    Its entries are counted first, from its end record and directory bytes: zipfile would parse
    the whole directory (an object per entry, millions in a 1 GB zip) before any cap applied.
    """
    try:
        if (entries := zip_entry_count(archive)) > settings.UPLOAD_ZIP_MAX_ENTRIES:
            return [_Staged(path=f"uploads/{relative}", error=f"archive too large: {entries} entries (limit "
                                                                f"{settings.UPLOAD_ZIP_MAX_ENTRIES}); nothing unpacked")]
        with zipfile.ZipFile(archive) as bundle:
            members, unsupported = [], []
            for info in bundle.infolist():
                if not info.is_dir() and not _hidden(info.filename):
                    (unsupported if _unsupported_reason(info.filename) else members).append(info)
            unpacked = sum(info.file_size for info in members if info.file_size <= settings.INGEST_MAX_FILE_BYTES)
            if len(members) > settings.UPLOAD_ZIP_MAX_MEMBERS or unpacked > settings.UPLOAD_ZIP_MAX_BYTES:
                reason = (f"archive too large: {len(members)} files, {unpacked / _MB:.0f} MB unpacked (limits "
                          f"{settings.UPLOAD_ZIP_MAX_MEMBERS} files, {settings.UPLOAD_ZIP_MAX_BYTES / _MB:.0f} MB)")
                return [_Staged(path=f"uploads/{relative}", error=reason)]
            refused = budget.refusal(unpacked)  # what the archive declares, before anything is unpacked
            if refused:
                return [_Staged(path=f"uploads/{relative}", error=f"archive not unpacked: {refused}")]
            if not members and not unsupported:
                return [_Staged(path=f"uploads/{relative}", error="no file in the archive")]
            folder = f"uploads/{relative[:-len('.zip')]}"
            staged = [_stage_member(bundle, info, f"{folder}/{safe_upload_path(info.filename)}", batch, budget)
                      for info in members]
            return staged + _unsupported_members(unsupported, relative, folder)
    except (zipfile.BadZipFile, OSError, EOFError, ValueError) as exc:
        return [_Staged(path=f"uploads/{relative}", error=f"not a readable zip archive: {exc}")]


def _unsupported_members(infos: list[zipfile.ZipInfo], relative: str, folder: str) -> list[_Staged]:
    """Members of unsupported types, each skipped by name as `ingest FOLDER` skips them; past a
    hundred, the rest are counted on one line (an archive of images must not flood the job)."""
    named = [_Staged(path=f"{folder}/{safe_upload_path(info.filename)}", skipped=True,
                     error=_unsupported_reason(info.filename)) for info in infos[:_NAMED_SKIPS]]
    rest = len(infos) - len(named)
    if rest > 0:
        named.append(_Staged(path=f"uploads/{relative}", skipped=True,
                             error=f"{rest} more file(s) of unsupported types in the archive skipped"))
    return named


def _unsupported_reason(name: str) -> str:
    """Why a file of this name is no document ("unsupported file type .exe"); "" when it is one."""
    try:
        detect_format(Path(name))
    except UnsupportedFormat as exc:
        return str(exc)
    return ""


def _stage_member(bundle: zipfile.ZipFile, info: zipfile.ZipInfo, path: str, batch: str,
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
            copy = stored_copy_save(pieces, folder=batch, file_name=path)
    except UploadTooLarge as exc:
        return _Staged(path=path, error=f"not unpacked: {exc}")
    except (zipfile.BadZipFile, OSError, EOFError, RuntimeError, NotImplementedError, zlib.error, lzma.LZMAError) as exc:
        return _Staged(path=path, error=f"cannot unpack this member: {exc}")
    budget.spend(info.file_size)
    return _Staged(path=path, stored=copy.source_file, digest=copy.digest, size=copy.size, mtime=_zip_mtime(info))


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
    ).only("pk", "path", "display_path", "content_hash", "chunk_count").order_by("pk"):
        twins.setdefault(document.content_hash, []).append(document)
    now = timezone.now()
    placed: dict[str, str] = {}  # digest -> the path it is indexed under in this batch
    items = []
    for entry in staged:
        # No mtime from the browser: the upload's time, kept on the item (a stored copy has no mtime of its own).
        item = IndexingJobItem(path=entry.path, source_file=entry.stored, stored_bytes=entry.size,
                               file_mtime=entry.mtime if entry.mtime is not None else now.timestamp(),
                               mtime_is_upload_time=entry.mtime is None)
        same = twins.get(entry.digest, [])
        twin = next((document for document in same if document.path == entry.path), same[0] if same else None)
        if entry.skipped:
            item.status, item.error = IndexingJobItem.Status.SKIPPED, entry.error
        elif entry.error:
            item.status, item.error = IndexingJobItem.Status.FAILED, entry.error
        elif twin is not None:
            item.status, item.document, item.chunk_count = IndexingJobItem.Status.UNCHANGED, twin, twin.chunk_count
            item.error = "" if twin.path == entry.path else f"identical to {twin.shown_path}"  # never server folders
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
    """Store uploads in the file storage (rag.storage) and queue them; a stored file never leaves the batch folder.

    A file keeps the mtime its browser sent (else its date is the upload's, and says so), a
    folder its relative paths, a .zip its members' paths and mtimes. A bad file fails alone,
    by name; the rest of the batch goes on.
    """
    batch = f"uploads/{workspace.slug}/{uuid.uuid4().hex}"
    wanted = [incoming for incoming in files if not _hidden(incoming.relative_path)]
    budget = UploadBudget(workspace=workspace)
    staged = [entry for incoming in wanted for entry in _stage(incoming, batch, budget)]
    hidden = len(files) - len(wanted)
    with transaction.atomic():
        with connection.cursor() as cursor:
            # Paths are chosen, the quota counted and the items stored as one step: two uploads of one name at
            # once get two paths, and two that each fit the quota alone cannot both take its last room.
            cursor.execute("SELECT pg_advisory_xact_lock(%s, %s)", [_UPLOAD_PATHS_LOCK, workspace.pk])
        items = _upload_items(workspace, staged)
        quota_hold(workspace=workspace, items=items)
        job = IndexingJob.objects.create(
            workspace=workspace, source=IndexingJob.Source.UPLOAD, created_by=created_by,
            description=f"{len(items)} uploaded file(s)" + (f", {hidden} hidden file(s) left out" if hidden else ""),
        )
        for item in items:
            item.job = job
        IndexingJobItem.objects.bulk_create(items)
        job_finish_if_done(job.pk)  # every file identical or failed: nothing to wait for
        ids = [item.pk for item in items if item.status == IndexingJobItem.Status.QUEUED]
        transaction.on_commit(lambda: index_send(ids))
    # Identical to a document or to another file of this upload: the copy is not needed.
    stored_copies_delete(item.source_file for item in items if item.status != IndexingJobItem.Status.QUEUED)
    return job


def job_retry_create(*, job: IndexingJob, created_by=None) -> IndexingJob | None:
    """A new job for a finished job's failed and skipped files, read from where they were staged:
    a file fixed in place, or of a type supported since, is indexed this time. None when there are none."""
    retried = list(job.items.filter(status__in=(IndexingJobItem.Status.FAILED, IndexingJobItem.Status.SKIPPED)))
    if not retried:
        return None
    with transaction.atomic():
        # A failed document's hash would make the same bytes count as "unchanged": parse them afresh.
        Document.objects.filter(workspace_id=job.workspace_id, path__in=[item.path for item in retried],
                                status=Document.Status.FAILED).update(content_hash="")
        again = IndexingJob.objects.create(workspace_id=job.workspace_id, source=job.source, created_by=created_by,
                                           description=f"{len(retried)} failed or skipped file(s) of job {job.pk} again")
        items = IndexingJobItem.objects.bulk_create(
            IndexingJobItem(job=again, path=item.path, display_path=item.display_path, source_file=item.source_file,
                            stored_bytes=item.stored_bytes, file_mtime=item.file_mtime,
                            mtime_is_upload_time=item.mtime_is_upload_time)
            for item in retried
        )
        ids = [item.pk for item in items]
        transaction.on_commit(lambda: index_send(ids))
    return again
