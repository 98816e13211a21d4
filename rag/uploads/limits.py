"""What an upload may store: each file as it arrives, each request's unpacked total, each workspace's quota.

A browser upload is written to disk by Django before any view runs, so the per-file
limit is enforced by an upload handler while the bytes arrive: a file over
INGEST_MAX_FILE_BYTES (a .zip excepted: its members are checked when it is unpacked)
stops being written at the limit and reaches the view as an empty placeholder that
says why, so it fails alone, by name, in the job. A request larger than
UPLOAD_MAX_BYTES is stopped at its first file. Staging then spends a budget: the
lesser of UPLOAD_MAX_BYTES and what is left of the workspace's quota, checked against
declared sizes before anything is written and against the bytes actually written.
That budget is read before the upload holds any lock, so that a large upload never
blocks another while it arrives; `quota_hold` counts the quota again under the
workspace's upload lock, where two uploads at once cannot both take the last room.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from django.conf import settings
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.files.uploadhandler import FileUploadHandler, StopUpload
from django.db import connection
from django.utils import timezone

from rag.models import IndexingJob, IndexingJobItem, Workspace

_MB = 1024 * 1024
# Multipart headers and the form's own fields come on top of the files' bytes.
_FORM_OVERHEAD_BYTES = 1024 * 1024


def size_text(size: float) -> str:
    """`512 KB`, `50 MB`, `2.0 GB`: sizes as a person reads them."""
    if size >= 1024 * _MB:
        return f"{size / (1024 * _MB):.1f} GB"
    if size >= _MB:
        return f"{size / _MB:.0f} MB" if size >= 10 * _MB else f"{size / _MB:.1f} MB"
    return f"{max(1, round(size / 1024))} KB"


class UploadTooLarge(Exception):
    """More bytes than a limit allows; the message says which limit."""


class RefusedUpload(SimpleUploadedFile):
    """What the view receives instead of a file refused while it arrived: its name and the reason, no bytes."""

    def __init__(self, name: str, refusal: str) -> None:
        super().__init__(name, b"")
        self.refusal = refusal


def upload_refusal(upload: object) -> str:
    """Why this upload was refused as it arrived, or ""."""
    return getattr(upload, "refusal", "")


def _is_archive(name: str) -> bool:
    return name.lower().endswith(".zip")


class UploadLimitHandler(FileUploadHandler):
    """First of FILE_UPLOAD_HANDLERS: counts every file's bytes as they arrive and passes them on within limits.

    Past INGEST_MAX_FILE_BYTES a file's bytes are no longer passed on (the handler that
    writes them has at most the limit) and the file becomes a RefusedUpload. Past
    UPLOAD_MAX_BYTES in all, the whole upload stops: `request.upload_refused` says why.
    """

    def __init__(self, request=None) -> None:
        super().__init__(request)
        self.received = 0
        self.declared = 0
        self.refusal = ""
        if request is not None:
            request.upload_refused = ""

    def _stop(self, reason: str) -> None:
        if self.request is not None:
            self.request.upload_refused = reason
        raise StopUpload(connection_reset=True)  # the rest is never read, let alone written

    def handle_raw_input(self, input_data, META, content_length, boundary, encoding=None) -> None:
        self.declared = content_length or 0
        return None  # parsing goes on: the form's CSRF token comes before the files

    def new_file(self, field_name, file_name, content_type, content_length, charset=None,
                 content_type_extra=None) -> None:
        super().new_file(field_name, file_name, content_type, content_length, charset, content_type_extra)
        if self.declared > settings.UPLOAD_MAX_BYTES + _FORM_OVERHEAD_BYTES:
            self._stop(f"This upload is {size_text(self.declared)}, over the {size_text(settings.UPLOAD_MAX_BYTES)} "
                       "limit for one upload; nothing was stored.")
        self.refusal = ""

    def receive_data_chunk(self, raw_data: bytes, start: int) -> bytes | None:
        self.received += len(raw_data)
        if self.received > settings.UPLOAD_MAX_BYTES:
            self._stop(f"This upload passed the {size_text(settings.UPLOAD_MAX_BYTES)} limit for one upload "
                       "while it arrived; nothing was stored.")
        if self.refusal:
            return None
        if not _is_archive(self.file_name or "") and start + len(raw_data) > settings.INGEST_MAX_FILE_BYTES:
            self.refusal = (f"over the {size_text(settings.INGEST_MAX_FILE_BYTES)} limit for one file: "
                            "refused as it arrived")
            return None
        return raw_data

    def file_complete(self, file_size: int) -> RefusedUpload | None:
        if not self.refusal:
            return None  # the next handler (memory or temporary file) has the bytes
        # The handler that wrote the bytes up to the limit keeps its temporary file until the request is
        # collected; closing it now deletes it.
        for handler in getattr(self.request, "upload_handlers", []):
            partial = getattr(handler, "file", None) if handler is not self else None
            if partial is not None:
                partial.close()
        return RefusedUpload(self.file_name or "upload", self.refusal)


def bounded(pieces: Iterable[bytes], *, limit: int, reason: str) -> Iterator[bytes]:
    """The pieces, until their total passes `limit`: then UploadTooLarge(reason)."""
    total = 0
    for piece in pieces:
        total += len(piece)
        if total > limit:
            raise UploadTooLarge(reason)
        yield piece


def workspace_storage_used(*, workspace: Workspace) -> int:
    """Bytes of the stored copies this workspace's items point to, each copy once: one SQL sum over the sizes
    kept on the items (rag.storage sets them to 0 when a copy is deleted), never a request per file."""
    items, jobs = IndexingJobItem._meta.db_table, IndexingJob._meta.db_table
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT COALESCE(SUM(copy_bytes), 0) FROM (SELECT MAX(item.stored_bytes) AS copy_bytes "
            f"FROM {items} item JOIN {jobs} job ON job.id = item.job_id "
            f"WHERE job.workspace_id = %s AND item.stored_bytes > 0 GROUP BY item.source_file) copies",
            [workspace.pk],
        )
        return int(cursor.fetchone()[0])


def workspace_storage(*, workspace: Workspace) -> dict[str, object]:
    """What the documents and upload pages say about the workspace's storage and the upload limits."""
    used, quota = workspace_storage_used(workspace=workspace), settings.WORKSPACE_STORAGE_QUOTA_BYTES
    return {"used": size_text(used), "quota": size_text(quota), "full": used >= quota,
            "file": size_text(settings.INGEST_MAX_FILE_BYTES), "upload": size_text(settings.UPLOAD_MAX_BYTES)}


class UploadBudget:
    """Bytes one upload may still store: the lesser of UPLOAD_MAX_BYTES and what the workspace's quota leaves."""

    def __init__(self, *, workspace: Workspace) -> None:
        quota_left = settings.WORKSPACE_STORAGE_QUOTA_BYTES - workspace_storage_used(workspace=workspace)
        self.by_quota = quota_left < settings.UPLOAD_MAX_BYTES
        self.left = max(0, min(settings.UPLOAD_MAX_BYTES, quota_left))

    def refusal(self, size: int) -> str:
        """Why `size` more bytes may not be stored, or ""."""
        if size <= self.left:
            return ""
        if self.by_quota:
            return (f"{size_text(size)} would pass the workspace's storage quota of "
                    f"{size_text(settings.WORKSPACE_STORAGE_QUOTA_BYTES)} ({size_text(self.left)} left)")
        return (f"{size_text(size)} would pass the {size_text(settings.UPLOAD_MAX_BYTES)} limit for one upload "
                f"({size_text(self.left)} left)")

    def spend(self, size: int) -> None:
        self.left -= size


def quota_hold(*, workspace: Workspace, items: list[IndexingJobItem]) -> None:
    """Fail the queued items whose stored copies would pass the workspace's quota as it stands now.

    Called with the items of one upload under the workspace's upload lock (rag.uploads.staging): what
    another upload stored meanwhile is committed and counted, so of two uploads that each fit
    alone the second is refused, file by file, as staging refuses them.
    """
    budget, now = UploadBudget(workspace=workspace), timezone.now()
    for item in items:
        if item.status != IndexingJobItem.Status.QUEUED:
            continue  # failed, skipped or identical to a document: its copy is not kept
        if refused := budget.refusal(item.stored_bytes):
            item.status, item.error = IndexingJobItem.Status.FAILED, f"not stored: {refused}"
            item.started_at = item.finished_at = now
        else:
            budget.spend(item.stored_bytes)
