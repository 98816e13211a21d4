"""Reads of sources, scoped by workspace membership, and the one row shape the page, the CLI and the API share."""

from __future__ import annotations

import re
from urllib.parse import urlsplit

from django.core.cache import cache
from django.db.models import QuerySet
from django.http import Http404

from rag.models import Source, Workspace
from rag.progress import job_summary
from rag.sources.git import location_shown


def source_list(*, workspace: Workspace) -> QuerySet[Source]:
    """A workspace's sources; the caller's workspace comes from membership (request.workspace)."""
    return Source.objects.filter(workspace=workspace).select_related("last_job").order_by("name")


def source_get(*, user, pk: int) -> Source:
    """404 for a source outside the user's workspaces: existence is not leaked."""
    try:
        return Source.objects.select_related("workspace", "last_job").get(pk=pk, workspace__members=user)
    except Source.DoesNotExist:
        raise Http404("No such source") from None


# How long a queued sync holds the button: the sync task's hard time limit, so a lost message frees it then.
SYNC_QUEUED_SECONDS = 960


def sync_queued_key(source_id: int) -> str:
    """The cache key that marks a sync queued and not yet started by a worker (rag.sources.services)."""
    return f"source-sync-queued:{source_id}"


def source_row(source: Source, *, staff: bool = True) -> dict:
    """What `source list --json` prints for one source; the page shows the same, its reasons without server paths
    or Git hosts unless the reader is staff."""
    job = source.last_job
    shown = (lambda reason: reason) if staff else (lambda reason: reason_for_members(reason, source))
    return {
        "name": source.name,
        "kind": source.kind,
        "location": location_shown(source.location),
        "branch": source.branch,
        "tags": source.tags_pattern,
        "include": source.include,
        "exclude": source.exclude,
        "every_minutes": source.every_minutes,
        "schedule": f"every {source.every_minutes} min" if source.every_minutes else "on demand",
        "watch": source.watch,
        "paused": source.paused,
        "paused_reason": shown(source.paused_reason),
        "last_sync_at": source.last_sync_at.isoformat() if source.last_sync_at else None,
        "last_sync": job_summary(job=job) if job else "never synced",
        "last_job_id": job.pk if job else None,
        "last_job_finished": bool(job and job.finished_at),
        "sync_queued": cache.get(sync_queued_key(source.pk)) is not None,
        "last_changes": source.last_changes,
        "last_changes_text": changes_text(source.last_changes),
        "last_error": shown(source.last_error),
        "tags_read": (source.state or {}).get("order", []),
    }


# A URL, an scp-like Git location (git@host:owner/repo) or an absolute path, up to the next space or separator.
_PLACES = re.compile(r"[a-z][a-z0-9+.-]*://[^\s,;]*|[\w.-]+@[\w.-]+:[^\s,;]*|(?<![\w.])/[^\s,;:()'\"]+")
WHERE_HIDDEN = "[where: staff see it]"


def reason_for_members(reason: str, source: Source) -> str:
    """Why a sync failed or paused, without where: server paths and Git hosts are for staff."""
    host = urlsplit(source.location).hostname if "://" in source.location else ""
    reason = _PLACES.sub(WHERE_HIDDEN, reason)
    return re.sub(re.escape(host), WHERE_HIDDEN, reason, flags=re.IGNORECASE) if host else reason


def changes_text(changes: dict) -> str:
    """What a sync found besides its job's counts, in words: "tags read 1.3, 1.4; branch force-pushed: re-read"."""
    parts = []
    if changes.get("tags_read"):
        parts.append("tags read " + ", ".join(changes["tags_read"]))
    if changes.get("tags_dropped"):
        parts.append("tags gone or moved " + ", ".join(changes["tags_dropped"]))
    if changes.get("force_push"):
        parts.append("branch force-pushed: re-read")
    elif changes.get("branch_moved"):
        parts.append("branch moved")
    for key, words in (("renamed", "renamed"), ("relabelled", "relabelled"), ("unarchived", "back from the archive")):
        if changes.get(key):
            parts.append(f"{changes[key]} {words}")
    if left := changes.get("left_for_next_sync"):
        parts.append(f"{left} file{'s' if left != 1 else ''} left for the next sync "
                     f"(GIT_SOURCE_MAX_SYNC_ITEMS: {changes.get('max_sync_items')})")
    return "; ".join(parts)
