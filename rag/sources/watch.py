"""Folder sources that also sync on file-system events (watchfiles), debounced; `make run` runs this.

A burst of changes (an editor's save, a copy of a hundred files) becomes one sync per source. A source
that is still syncing stays pending and is synced again once its job is done, so no change is lost;
the list of watched sources is read again every refresh, so a source added or changed while this runs
is picked up without a restart.
"""

from __future__ import annotations

import logging
import threading
import time
from pathlib import Path

import watchfiles
from django.conf import settings
from django.db import connections

from rag.models import Source
from rag.sources.services import SourceError, source_sync

logger = logging.getLogger(__name__)

RETRY_SECONDS = 5  # how soon a source that was still syncing is tried again


def watched_folders() -> dict[int, Path]:
    """Folder sources with watching on, whose folder is there (a vanished one is the schedule's to report)."""
    folders = {}
    for pk, location in Source.objects.filter(kind=Source.Kind.FOLDER, watch=True).values_list("pk", "location"):
        folder = Path(location)
        if folder.is_dir():
            folders[pk] = folder
    return folders


def sources_touched(changes: set[tuple[object, str]], folders: dict[int, Path]) -> set[int]:
    return {pk for _change, path in changes for pk, folder in folders.items() if Path(path).is_relative_to(folder)}


def sources_watch(*, stop: threading.Event, refresh_seconds: float = 60) -> None:
    """Until `stop` is set: sync each watched source whose folder changed, at most once per debounce window."""
    pending: set[int] = set()
    while not stop.is_set():
        folders = watched_folders()
        connections.close_all()  # idle between events: hold no database connection for hours
        if not folders:
            stop.wait(refresh_seconds)
            continue
        refresh_at = time.monotonic() + refresh_seconds
        for changes in watchfiles.watch(
            *folders.values(), debounce=int(settings.SOURCE_WATCH_DEBOUNCE_SECONDS * 1000), stop_event=stop,
            rust_timeout=RETRY_SECONDS * 1000, yield_on_timeout=True, raise_interrupt=False,
        ):
            pending |= sources_touched(changes, folders)
            pending = _sync_pending(pending)
            if time.monotonic() >= refresh_at:
                break


def _sync_pending(pending: set[int]) -> set[int]:
    """Start a sync of each pending source; those still busy with the last one stay pending."""
    still = set()
    for source_id in sorted(pending):
        try:
            job = source_sync(source_id=source_id)
        except SourceError as exc:
            if "still syncing" in str(exc):
                still.add(source_id)
            else:
                logger.warning("watched source not synced", extra={"source_id": source_id, "reason": str(exc)})
        else:
            logger.info("watched source changed: synced", extra={"source_id": source_id, "job_id": job.pk})
    if pending:
        connections.close_all()
    return still
