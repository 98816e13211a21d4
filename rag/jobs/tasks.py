"""Thin Celery tasks: ids in, a service call, idempotent.

Only Celery imports this module (config/celery.py discovers it); our code sends the tasks by name through
rag.jobs.queue. Each `name=` is what queued messages and beat entries carry: it never changes.
"""

from __future__ import annotations

from dataclasses import asdict

from celery import Task, shared_task
from celery.exceptions import TimeLimitExceeded
from django.conf import settings
from django.db import connections

from rag.dedup import workspace_merge
from rag.jobs.lifecycle import job_item_fail, job_items_merged
from rag.jobs.merging import document_merge_settle, workspace_indexed_merge
from rag.jobs.queue import (
    INDEX_DOCUMENT, MERGE_DOCUMENT, MERGE_INDEXED, MERGE_WORKSPACE, REAP_JOB_ITEMS, SETTLE_RELEASES, TRANSIENT_ERRORS,
)
from rag.jobs.releases import releases_settle_run
from rag.jobs.reaper import job_items_reap
from rag.storage import StorageUnavailable
from rag.jobs.run import job_item_run

# Every task that may run twice safely: acknowledged once it ran, retried on a transient error only.
RUNS_TWICE_SAFELY = {"acks_late": True, "autoretry_for": TRANSIENT_ERRORS, "retry_jitter": True}


class IndexTask(Task):
    """An indexing task whose item fails with the reason when the task gives up, never stays QUEUED/RUNNING."""

    def on_failure(self, exc, task_id, args, kwargs, einfo) -> None:
        item_id = args[0] if args else kwargs["item_id"]
        if isinstance(exc, TimeLimitExceeded):
            # Called in the worker's parent, which killed the pool process running the item.
            reason = f"stopped at the hard time limit: indexing took longer than {self.time_limit} s"
        else:
            reason = f"gave up after {self.request.retries} retries: {type(exc).__name__}: {exc}"
        try:
            job_item_fail(item_id=item_id, reason=reason)
        finally:
            if isinstance(exc, TimeLimitExceeded):
                connections.close_all()  # the parent forks new pool processes: it keeps no database socket


@shared_task(base=IndexTask, bind=True, name=INDEX_DOCUMENT, retry_backoff=True, retry_backoff_max=120, max_retries=5,
             soft_time_limit=600, time_limit=660, **RUNS_TWICE_SAFELY)
def index_document(self, item_id: int) -> str:
    try:
        return job_item_run(item_id=item_id, task_id=self.request.id or "")
    except StorageUnavailable as exc:
        # An unreachable store is outwaited at a steady pace (minutes), not given up after the backoff's ~30 s.
        raise self.retry(exc=exc, countdown=settings.STORAGE_RETRY_SECONDS,
                         max_retries=settings.STORAGE_RETRY_MAX) from exc


@shared_task(name=REAP_JOB_ITEMS, soft_time_limit=120, time_limit=150)
def reap_job_items() -> dict:
    """Celery beat runs this every JOB_REAPER_INTERVAL_SECONDS: items whose worker died go back to the queue."""
    return asdict(job_items_reap())


# A merge also retries when it timed out waiting for its workspace's lock (lock_timeout raises
# OperationalError) or lost a deadlock: both are a busy database, not bad input. Enough retries
# to outwait a long `merge_duplicates` rebuild of the same workspace (about an hour).
class MergeTask(Task):
    """A merge that gives up is settled too: the reaper does not send it again; `merge_duplicates` catches up."""

    def on_failure(self, exc, task_id, args, kwargs, einfo) -> None:
        job_items_merged(document_ids=[args[0] if args else kwargs["document_id"]])
        if isinstance(exc, TimeLimitExceeded):
            connections.close_all()  # see IndexTask


@shared_task(base=MergeTask, bind=True, name=MERGE_DOCUMENT, retry_backoff=2, retry_backoff_max=120, max_retries=30,
             soft_time_limit=300, time_limit=330, **RUNS_TWICE_SAFELY)
def merge_document(self, document_id: int) -> dict:
    return asdict(document_merge_settle(document_id=document_id))


# What the workspace's jobs indexed, in batches (rag.jobs.merging). A run that gives up leaves the items unmerged:
# the reaper sends the merge again.
@shared_task(name=MERGE_INDEXED, retry_backoff=2, retry_backoff_max=120, max_retries=30, soft_time_limit=900,
             time_limit=960, **RUNS_TWICE_SAFELY)
def merge_indexed(workspace_id: int) -> dict:
    return asdict(workspace_indexed_merge(workspace_id=workspace_id))


@shared_task(name=MERGE_WORKSPACE, retry_backoff=10, retry_backoff_max=600, max_retries=3, soft_time_limit=3600,
             time_limit=3660, **RUNS_TWICE_SAFELY)
def merge_workspace(workspace_id: int) -> dict:
    return asdict(workspace_merge(workspace_id=workspace_id))


@shared_task(name=SETTLE_RELEASES, retry_backoff=10, retry_backoff_max=300, max_retries=5, soft_time_limit=600,
             time_limit=660, **RUNS_TWICE_SAFELY)
def settle_releases(workspace_id: int) -> dict:
    """After a staff edit of the calendar (rag.jobs.releases)."""
    return releases_settle_run(workspace_id=workspace_id)
