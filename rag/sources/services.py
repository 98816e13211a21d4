"""Writes on sources: add, remove, sync (one indexing job per sync), and the schedule's due list."""

from __future__ import annotations

import logging
import re
import shutil
from datetime import timedelta
from pathlib import Path

from django.core.cache import cache
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from rag.models import Document, IndexingJob, Source, Workspace
from rag.documents import documents_archive
from rag.jobs import SYNC_SOURCE, task_send
from rag.sources.folder import SourcePaused, folder_sync_job
from rag.sources.git import GitSourceError, is_remote, location_check, location_shown
from rag.sources.git_sync import git_mirror_dir, git_sync_job, source_document_prefix
from rag.sources.locations import LocationRefused, local_folder, place_check
from rag.sources.selectors import SYNC_QUEUED_SECONDS, sync_queued_key

logger = logging.getLogger(__name__)

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,99}$")


class SourceError(Exception):
    """Bad input or a sync that could not start; the message is meant for the person who asked."""


def source_check(
    *, name: str, kind: str, location: str, branch: str = "", tags_pattern: str = "", every_minutes: int = 60,
    watch: bool = False,
) -> str:
    """The one check of a source's settings (the page, the admin's add and edit, `source add`): SourceError says
    what is wrong; returns the location as stored (a local path resolved)."""
    if not _NAME.match(name):
        raise SourceError(f"bad source name {name!r}: letters, digits, '-' and '_' only")
    if every_minutes < 0:
        raise SourceError("--every must be 0 (on demand only) or more minutes")
    if kind == Source.Kind.FOLDER:
        if not Path(location).expanduser().is_dir():
            raise SourceError(f"no such folder: {location}")
        if branch or tags_pattern:
            raise SourceError("--branch and --tags apply to Git sources only")
    elif kind == Source.Kind.GIT:
        try:
            location_check(location)
        except GitSourceError as exc:
            raise SourceError(str(exc)) from None
        if watch:
            raise SourceError("watching applies to folder sources only")
    else:
        raise SourceError(f"unknown kind {kind!r}: folder or git")
    try:
        place_check(kind=kind, location=location)
    except LocationRefused as exc:
        raise SourceError(str(exc)) from None
    local = local_folder(kind=kind, location=location)
    return str(local) if local is not None and not is_remote(location) else location


def source_add(
    *, workspace: Workspace, name: str, kind: str, location: str, branch: str = "", tags_pattern: str = "",
    include: list[str] | None = None, exclude: list[str] | None = None, every_minutes: int = 60, watch: bool = False,
    user=None,  # noqa: ANN001 - who added it, the first sync's job says so
) -> Source:
    """A new source, checked, its first sync queued for a worker once the row is committed: whatever its schedule,
    a source is read when it is added (an on-demand one sat "never synced" until someone pressed Sync now)."""
    location = source_check(name=name, kind=kind, location=location, branch=branch, tags_pattern=tags_pattern,
                            every_minutes=every_minutes, watch=watch)
    if Source.objects.filter(workspace=workspace, name=name).exists():
        raise SourceError(f"workspace {workspace.slug} already has a source named {name!r}")
    source = Source.objects.create(
        workspace=workspace, name=name, kind=kind, location=location, branch=branch, tags_pattern=tags_pattern,
        include=list(include or []), exclude=list(exclude or []), every_minutes=every_minutes, watch=watch,
    )
    logger.info("source added", extra={"source_id": source.pk, "kind": kind, "location": location_shown(location)})
    _sync_queue(source.pk, user_id=getattr(user, "pk", None) or 0)
    return source


def source_documents(source: Source):
    """The documents a source brought in (found by path: the folder's, or the Git source's own prefix)."""
    prefix = source_document_prefix(source) if source.kind == Source.Kind.GIT else source.location.rstrip("/")
    return Document.objects.filter(workspace=source.workspace, path__startswith=prefix + "/")


def source_remove(*, source: Source, archive_documents: bool = False) -> int:
    """Forget the source; its documents stay searchable unless archived here. Returns how many were archived."""
    mirror = git_mirror_dir(source) if source.kind == Source.Kind.GIT else None
    with transaction.atomic():
        archived = documents_archive(documents=source_documents(source)) if archive_documents else 0
        source.delete()
        if mirror is not None:  # a remote's copy is ours to delete; a local repository is left alone
            transaction.on_commit(lambda: shutil.rmtree(mirror, ignore_errors=True))
    return archived


def source_sync_request(*, source: Source, user) -> None:
    """Queue one sync for a worker ("Sync now" on the page and in the admin): a fetch and a tree walk never run in a
    web request. SourceError when one is already queued or running: presses pile up nothing."""
    if source.last_job is not None and source.last_job.finished_at is None:
        raise SourceError(f"source {source.name} is still syncing (job {source.last_job.pk})")
    if not _sync_queue(source.pk, user_id=user.pk or 0):
        raise SourceError(f"a sync of {source.name} is already queued")


def _sync_queue(source_id: int, *, user_id: int) -> bool:
    """Queue one sync on commit, marked queued (the page shows it and polls) until a worker starts it; False when
    one is queued already."""
    if not cache.add(sync_queued_key(source_id), user_id, timeout=SYNC_QUEUED_SECONDS):
        return False
    transaction.on_commit(lambda: task_send(SYNC_SOURCE, source_id, user_id))
    return True


def source_sync(*, source_id: int, enqueue: bool = True, created_by=None) -> IndexingJob:
    """Start one sync of the source as an indexing job; SourceError says why none could start.

    The source's row is locked while the job is made, so two syncs of one source never interleave;
    a sync is not started while the previous one's job is still running.
    """
    failure = ""
    try:
        with transaction.atomic():
            source = Source.objects.select_for_update(of=("self",)).select_related("workspace", "last_job") \
                .filter(pk=source_id).first()
            if source is None:
                raise SourceError(f"no source {source_id}")
            if source.last_job is not None and source.last_job.finished_at is None:
                raise SourceError(f"source {source.name} is still syncing (job {source.last_job.pk})")
            now = timezone.now()
            try:
                with transaction.atomic():  # a savepoint: a sync that cannot start leaves nothing half-written
                    place_check(kind=source.kind, location=source.location)  # settings or links may have moved since
                    if source.kind == Source.Kind.GIT:
                        job, changes = git_sync_job(source=source, enqueue=enqueue, created_by=created_by)
                    else:
                        job, changes = folder_sync_job(source=source, enqueue=enqueue, created_by=created_by)
            except (SourcePaused, GitSourceError, LocationRefused) as exc:
                reason, paused = str(exc), isinstance(exc, SourcePaused)
                Source.objects.filter(pk=source.pk).update(
                    last_sync_at=now, last_error=reason[:2000], paused_reason=reason[:500] if paused else "")
                logger.warning("source sync not started", extra={"source_id": source.pk, "reason": reason})
                failure = reason
            else:
                source.last_sync_at, source.last_job, source.last_changes = now, job, changes
                source.last_error = source.paused_reason = ""
                source.save(update_fields=["last_sync_at", "last_job", "last_changes", "last_error", "paused_reason"])
    finally:
        # Whoever asked is served by this sync. Cleared once its job (or its reason) is committed: a page polling
        # in between sees "queued" or the job, never "never synced" (and stopped polling).
        cache.delete(sync_queued_key(source_id))
    if failure:
        raise SourceError(failure)  # outside the transaction, which keeps the reason recorded above
    logger.info("source sync started", extra={"source_id": source.pk, "job_id": job.pk, **_flat(changes)})
    return job


def _flat(changes: dict) -> dict:
    return {key: value for key, value in changes.items() if isinstance(value, (int, bool, str))}


def sources_due(*, now=None) -> list[int]:
    """Sources whose schedule has come round and whose last job is done (paused ones too: they check again)."""
    now = now or timezone.now()
    due = []
    for source in Source.objects.filter(every_minutes__gt=0).select_related("last_job") \
            .filter(Q(last_job__isnull=True) | Q(last_job__finished_at__isnull=False)):
        if source.last_sync_at is None or source.last_sync_at + timedelta(minutes=source.every_minutes) <= now:
            due.append(source.pk)
    return due
