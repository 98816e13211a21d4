"""Thin Celery tasks for sources: ids in, one service call each; beat runs `sync_due_sources`."""

from __future__ import annotations

import logging

from celery import shared_task
from django.contrib.auth import get_user_model

from rag.jobs import SYNC_DUE_SOURCES, SYNC_SOURCE, TRANSIENT_ERRORS, task_send
from rag.sources.services import SourceError, source_sync, sources_due

logger = logging.getLogger(__name__)


@shared_task(name=SYNC_SOURCE, autoretry_for=TRANSIENT_ERRORS, retry_backoff=True,
             retry_jitter=True, max_retries=3, soft_time_limit=900, time_limit=960)
def sync_source(source_id: int, user_id: int = 0) -> int | None:
    """Start the source's sync job (a remote's fetch included); a sync that cannot start says why on the source.

    user_id: who pressed "Sync now" (0: the schedule)."""
    try:
        return source_sync(source_id=source_id, created_by=get_user_model().objects.filter(pk=user_id).first()).pk
    except SourceError as exc:
        logger.info("source not synced", extra={"source_id": source_id, "reason": str(exc)})
        return None


@shared_task(name=SYNC_DUE_SOURCES, soft_time_limit=60, time_limit=90)
def sync_due_sources() -> list[int]:
    """Celery beat runs this every SOURCE_SCHEDULE_TICK_SECONDS: one sync task per source that is due."""
    due = sources_due()
    for source_id in due:
        task_send(SYNC_SOURCE, source_id)
    return due
