"""Thin Celery tasks: ids in, a service call, idempotent."""

from __future__ import annotations

from celery import shared_task
from django.db import InterfaceError, OperationalError

# Worth a retry: the database or broker blinked. Bad input is never retried.
TRANSIENT_ERRORS = (OperationalError, InterfaceError)


@shared_task(
    name="rag.tasks.index_document",
    acks_late=True,
    autoretry_for=TRANSIENT_ERRORS,
    retry_backoff=True,
    retry_backoff_max=120,
    retry_jitter=True,
    max_retries=5,
    soft_time_limit=600,
    time_limit=660,
)
def index_document(item_id: int) -> str:
    from rag.services import job_item_run

    return job_item_run(item_id=item_id)


# A merge also retries when it timed out waiting for its workspace's lock (lock_timeout raises
# OperationalError) or lost a deadlock: both are a busy database, not bad input. Enough retries
# to outwait a long `merge_duplicates` rebuild of the same workspace (about an hour).
@shared_task(
    name="rag.tasks.merge_document",
    acks_late=True,
    autoretry_for=TRANSIENT_ERRORS,
    retry_backoff=2,
    retry_backoff_max=120,
    retry_jitter=True,
    max_retries=30,
    soft_time_limit=300,
    time_limit=330,
)
def merge_document(document_id: int) -> dict:
    from dataclasses import asdict

    from rag.dedup.merge import document_merge

    return asdict(document_merge(document_id=document_id))


@shared_task(
    name="rag.tasks.merge_workspace",
    acks_late=True,
    autoretry_for=TRANSIENT_ERRORS,
    retry_backoff=10,
    retry_backoff_max=600,
    retry_jitter=True,
    max_retries=3,
    soft_time_limit=3600,
    time_limit=3660,
)
def merge_workspace(workspace_id: int) -> dict:
    from dataclasses import asdict

    from rag.dedup.merge import workspace_merge

    return asdict(workspace_merge(workspace_id=workspace_id))
