"""The files Docent keeps and hands to workers, through Django's storage API (STORAGES["default"], config/settings.py).

A job item's `source_file` is either a path on the machine that runs the worker (`ingest PATH`, folder sources)
or `stored:<name>`, a copy in the storage: DATA_DIR/uploads by default, an S3-compatible bucket with STORAGE_URL,
so web and workers on different machines read the same bytes. Copies stored before this module were absolute
paths under MEDIA_ROOT/uploads: they are read as stored copies too, and `manage.py storage migrate` rewrites them.

Parsers take bytes (rag.parsers), so a worker never needs a local path for a stored copy.
"""

from __future__ import annotations

import errno
import hashlib
import os
import tempfile
import time
import uuid
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import BinaryIO
from stat import S_ISREG

from boto3.exceptions import S3UploadFailedError
from botocore.exceptions import ClientError, HTTPClientError
from botocore.exceptions import ConnectionError as BotoConnectionError
from django.conf import settings
from django.core.files import File
from django.core.files.base import ContentFile
from django.core.files.storage import FileSystemStorage, Storage, storages
from django.db.models import Q, Value
from django.db.models.functions import Concat, Substr
from storages.backends.s3 import S3Storage
from storages.utils import clean_name

from rag.models import IndexingJobItem

STORED_PREFIX = "stored:"
_SPOOL_BYTES = 8 * 1024 * 1024  # a copy is held in memory up to this size while it is hashed, then on disk
_S3_DELETE_BATCH = 1000  # the most keys one DeleteObjects request takes
# S3 answers that mean "busy or away", not "no": worth a retry.
_RETRYABLE_CODES = {"SlowDown", "RequestTimeout", "ServiceUnavailable", "InternalError", "RequestTimeTooSkewed"}


class StorageUnavailable(Exception):
    """The storage could not be reached or was busy: a transient fault (rag.jobs retries it), never a failed file."""


def file_storage() -> Storage:
    """The one storage for uploads and staged copies."""
    return storages["default"]


def stored_name(source_file: str) -> str | None:
    """The storage name of a stored copy (`stored:<name>`, or a pre-storage absolute path under MEDIA_ROOT/uploads);
    None for a path on the worker's machine (a user's own file, which Docent never deletes)."""
    if source_file.startswith(STORED_PREFIX):
        return source_file[len(STORED_PREFIX):]
    if not source_file.startswith("/"):
        return None
    root = Path(settings.MEDIA_ROOT).resolve()
    # Its own name decides, links unresolved: a link in a user's folder pointing here is no copy of ours.
    local = Path(os.path.normpath(source_file))
    return local.relative_to(root).as_posix() if local.is_relative_to(root / "uploads") else None


@contextmanager
def _reaching(action: str) -> Iterator[None]:
    """Storage faults as our two kinds: StorageUnavailable (retry later) or OSError (this file cannot be had)."""
    try:
        yield
    except (BotoConnectionError, HTTPClientError) as exc:
        raise StorageUnavailable(f"storage unreachable while {action}: {exc}") from exc
    except S3UploadFailedError as exc:
        raise StorageUnavailable(f"storage refused {action}: {exc}") from exc
    except ClientError as exc:
        error = exc.response.get("Error", {})
        status = exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode", 0)
        if status >= 500 or error.get("Code") in _RETRYABLE_CODES:
            raise StorageUnavailable(f"storage busy while {action}: {error.get('Code')}") from exc
        raise OSError(f"storage refused {action}: {error.get('Code') or status}") from exc


@dataclass(frozen=True)
class SourceBytes:
    """A source's bytes, or only its size when it is over the limit (then nothing was read)."""

    size: int
    data: bytes | None
    mtime: float | None  # the file's own mtime; None for a stored copy whose item carries it
    stat: str = ""  # a local file's file_stat_key, taken before its bytes were read; "" for a stored copy


# A file changed this recently may change again within the same clock tick and keep its mtime (FAT and SMB
# count in 2 s steps): its stat vouches for nothing, so the next sync hashes it (git's "racily clean" entries).
STAT_SETTLE_NS = 2_000_000_000


def file_stat_key(stat: os.stat_result) -> str:
    """Size, mtime, ctime and inode: what says a local file still holds the bytes read when this was taken.

    A folder sync skips hashing a file whose key is the one recorded when its bytes were last read (rsync's
    quick check, plus ctime, which no tool can set back). "" when the file changed too recently to trust.
    """
    if time.time_ns() - stat.st_mtime_ns < STAT_SETTLE_NS:
        return ""
    return f"{stat.st_size}:{stat.st_mtime_ns}:{stat.st_ctime_ns}:{stat.st_ino}"


def source_read(source_file: str, *, max_bytes: int, want_mtime: bool = False) -> SourceBytes:
    """Read what a job item points to, from the storage or the worker's own disk.

    OSError: the file is not there (it fails, by name); StorageUnavailable: try again later.
    want_mtime: also ask the storage when the copy was written (an item that lost the file's own mtime).
    """
    name = stored_name(source_file)
    if name is None:
        return _local_read(source_file, max_bytes=max_bytes)
    storage = file_storage()
    if isinstance(storage, S3Storage):
        return _s3_read(storage, name, max_bytes=max_bytes, want_mtime=want_mtime)
    with _reaching("reading a stored copy"):
        with storage.open(name, "rb") as stored:
            size = stored.size
            data = stored.read() if size <= max_bytes else None
        mtime = storage.get_modified_time(name).timestamp() if want_mtime else None
    return SourceBytes(size, data, mtime)


def _local_read(source_file: str, *, max_bytes: int) -> SourceBytes:
    """A regular file on this machine, read through no symbolic link (local_open)."""
    with local_open(source_file) as stream:
        stat = os.fstat(stream.fileno())
        return SourceBytes(stat.st_size, stream.read() if stat.st_size <= max_bytes else None, stat.st_mtime,
                           file_stat_key(stat))


_NO_LINK = os.O_NOFOLLOW | os.O_CLOEXEC
_WALK = getattr(os, "O_PATH", os.O_RDONLY) | os.O_DIRECTORY  # O_PATH: a folder one may cross but not list is crossed


def local_open(path: str | Path) -> BinaryIO:
    """The regular file at an absolute path, opened one component at a time from `/`, each relative to its parent's
    descriptor and with O_NOFOLLOW: a link anywhere is refused, however late it was swapped in (a check of the
    whole path first, then an open, would follow a parent folder swapped for a link in between).

    Items carry resolved paths (rag.uploads), so a link on one was put there after the folder was walked. The
    last open does not block (a FIFO would wait for a writer for ever) and anything but a regular file (a FIFO,
    a device, a socket) is refused. OSError says which.
    """
    name = Path(path).name
    parts = Path(os.path.normpath(path)).parts
    if not parts or parts[0] != "/":
        raise OSError(f"{name}: not an absolute path")
    folder = os.open("/", _WALK | os.O_CLOEXEC)
    try:
        for part in parts[1:-1]:
            inner = os.open(part, _WALK | _NO_LINK, dir_fd=folder)
            os.close(folder)
            folder = inner
        descriptor = os.open(parts[-1], os.O_RDONLY | os.O_NONBLOCK | _NO_LINK, dir_fd=folder)
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENOTDIR) and os.path.islink(_first_link(parts)):
            raise OSError(f"{name}: a symbolic link is on its path; links are never followed") from None
        raise
    finally:
        os.close(folder)
    stream = os.fdopen(descriptor, "rb")
    if not S_ISREG(os.fstat(descriptor).st_mode):
        stream.close()
        raise OSError(f"{name}: not a regular file (a FIFO, device or socket is never read)")
    return stream


def _first_link(parts: tuple[str, ...]) -> str:
    """The first component of the path that is a link now (or the whole path): what an ELOOP or ENOTDIR meant."""
    for end in range(2, len(parts) + 1):
        if os.path.islink(os.path.join(*parts[:end])):
            return os.path.join(*parts[:end])
    return os.path.join(*parts)


def _s3_read(storage: S3Storage, name: str, *, max_bytes: int, want_mtime: bool) -> SourceBytes:
    """One GET, where S3Storage.open would send two HEADs before it: its headers say the size before the body
    is read, and a body over the limit is closed unread."""
    with _reaching("reading a stored copy"):
        try:
            response = storage.bucket.Object(storage._normalize_name(clean_name(name))).get()
        except ClientError as exc:
            if exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode") == 404:
                raise FileNotFoundError(f"no stored copy {name}") from exc
            raise
        size, body = response["ContentLength"], response["Body"]
        try:
            data = body.read() if size <= max_bytes else None
        finally:
            body.close()
    return SourceBytes(size, data, response["LastModified"].timestamp() if want_mtime else None)


# A file's identity, however its bytes arrive (read whole, streamed from a path, stored piece by piece):
# Document.content_hash and StoredCopy.digest are compared with each other, so one algorithm takes them all.
_CONTENT_HASH = "sha256"


def content_hash(data: bytes) -> str:
    """A document's identity: re-ingesting a file with the same digest does nothing."""
    return hashlib.new(_CONTENT_HASH, data).hexdigest()


def file_hash(path: Path) -> str:
    """content_hash of a local regular file, streamed, read through no link (local_open)."""
    with local_open(path) as stream:
        return hashlib.file_digest(stream, _CONTENT_HASH).hexdigest()


@dataclass(frozen=True)
class StoredCopy:
    source_file: str  # "stored:<name>": what a job item carries
    digest: str  # content_hash of its bytes
    size: int


def stored_copy_save(pieces: Iterable[bytes], *, folder: str, file_name: str) -> StoredCopy:
    """Store the bytes as a new copy in `folder`; an exception from `pieces` (a limit passed) stores nothing.

    StorageUnavailable: the storage could not take it now.
    """
    digest, size = hashlib.new(_CONTENT_HASH), 0
    with tempfile.SpooledTemporaryFile(max_size=_SPOOL_BYTES) as spool:
        for piece in pieces:
            digest.update(piece)
            spool.write(piece)
            size += len(piece)
        spool.seek(0)
        name = f"{folder}/{uuid.uuid4().hex[:12]}-{PurePosixPath(file_name).name}"
        with _reaching("storing a copy"):
            name = file_storage().save(name, File(spool, name=name))
    return StoredCopy(source_file=STORED_PREFIX + name, digest=digest.hexdigest(), size=size)


_BLOBS = "sources/blobs"  # content-addressed copies; uploads' copies live under uploads/


def stored_blob_save(*, blob: str, read: Callable[[], bytes]) -> str:
    """A content-addressed copy (a Git blob: the same sha always holds the same bytes), stored once, then found,
    so a worker on any machine reads it.

    Returns the item's source_file. Such copies are shared between documents and syncs: stored_copies_delete
    removes one only when no item still needs it.
    """
    storage, name = file_storage(), f"{_BLOBS}/{blob[:2]}/{blob}"
    with _reaching("storing a blob"):
        if not storage.exists(name):
            storage.save(name, ContentFile(read(), name=name))
    return STORED_PREFIX + name


def stored_copies_delete(source_files: Iterable[str]) -> int:
    """Delete the stored copies among `source_files` that no item still needs; never a user's own file.

    Needed: a copy that a queued or running item will read, or that a document still in the workspace
    came from, indexed or failed: re-indexing reads it again, and "Retry" on a failed document reads the
    copy that failed once the cause is fixed (removing the document deletes it). One query for what is
    needed, one for the sizes, the deletions in batches.
    """
    names = {source_file: name for source_file in set(source_files)
             if (name := stored_name(source_file)) and name.startswith(("uploads/", f"{_BLOBS}/"))}
    if not names:
        return 0
    Status = IndexingJobItem.Status
    needed = set(IndexingJobItem.objects.filter(source_file__in=list(names)).filter(
        Q(status__in=[Status.QUEUED, Status.RUNNING])
        | Q(status__in=[Status.INDEXED, Status.FAILED], document__isnull=False),
    ).values_list("source_file", flat=True))
    unneeded = [source_file for source_file in names if source_file not in needed]
    if not unneeded:
        return 0
    with _reaching("deleting copies"):
        _delete(file_storage(), [names[source_file] for source_file in unneeded])
    IndexingJobItem.objects.filter(source_file__in=unneeded, stored_bytes__gt=0).update(stored_bytes=0)
    return len(unneeded)


def _delete(storage: Storage, names: list[str]) -> None:
    """A bucket deletes up to a thousand keys a request; a folder, one file at a time (no request there)."""
    if not isinstance(storage, S3Storage):
        for name in names:
            storage.delete(name)  # a missing file is no error
        return
    keys = [storage._normalize_name(clean_name(name)) for name in names]  # with the location prefix, as delete() adds it
    for start in range(0, len(keys), _S3_DELETE_BATCH):
        batch = keys[start:start + _S3_DELETE_BATCH]
        storage.bucket.delete_objects(Delete={"Objects": [{"Key": key} for key in batch], "Quiet": True})


@dataclass
class MigrationSummary:
    files: int = 0  # local copies found under MEDIA_ROOT/uploads
    copied: int = 0
    already_there: int = 0  # the same name and size in the storage: a rerun copies nothing
    copied_bytes: int = 0
    items_rewritten: int = 0  # job items that pointed at a local path, now at `stored:<name>`


def local_copies() -> list[tuple[str, Path]]:
    """The copies under MEDIA_ROOT/uploads on this machine, as (storage name, path), in name order."""
    root = Path(settings.MEDIA_ROOT).resolve()
    uploads = root / "uploads"
    if not uploads.is_dir():
        return []
    return sorted((path.relative_to(root).as_posix(), path) for path in uploads.rglob("*") if path.is_file())


def stored_copies_migrate(*, copies: list[tuple[str, Path]], on_copy: Callable[[int], None] = lambda size: None,
                          ) -> MigrationSummary:
    """Copy local upload copies into the configured storage under the same names, then point the job items at them.

    Idempotent: a copy already in the storage with the same size is left alone, and the items are rewritten by
    one UPDATE whose rerun matches nothing. The local files stay until the operator deletes them.
    on_copy: hears each file's size as it is done (the command's progress bar).
    """
    storage, summary = file_storage(), MigrationSummary(files=len(copies))
    in_place = isinstance(storage, FileSystemStorage) and Path(storage.location).resolve() == Path(
        settings.MEDIA_ROOT).resolve()
    for name, path in copies:
        size = path.stat().st_size
        with _reaching("copying a local file"):
            if in_place or (storage.exists(name) and storage.size(name) == size):
                summary.already_there += 1
            else:
                with open(path, "rb") as local:
                    saved = storage.save(name, File(local, name=name))
                if saved != name:
                    raise OSError(f"the storage stored {name} as {saved}: set it to overwrite (S3Storage does)")
                summary.copied += 1
                summary.copied_bytes += size
        on_copy(size)
    root = f"{Path(settings.MEDIA_ROOT).resolve()}/"
    summary.items_rewritten = IndexingJobItem.objects.filter(source_file__startswith=f"{root}uploads/").update(
        source_file=Concat(Value(STORED_PREFIX), Substr("source_file", len(root) + 1)))
    return summary
