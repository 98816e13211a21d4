"""Sending tasks by name, the one way every task is sent: no module of ours imports task code to queue it,
so nothing circles back to it, and eager mode (evaluation, a test) runs any of them in process alike.

The names are what queued messages and beat entries carry (config/settings.py routes and schedules them):
the indexing ones stay as they were when the tasks lived in rag/tasks.py. Chat names its own task
(chat.services) and sends it through `task_send` too.
"""

from __future__ import annotations

from celery import current_app
from celery.result import AsyncResult
from django.db import InterfaceError, OperationalError

from rag.storage import StorageUnavailable

# Worth a retry: the database, broker or file storage blinked. Bad input is never retried.
TRANSIENT_ERRORS = (OperationalError, InterfaceError, StorageUnavailable)

INDEX_DOCUMENT = "rag.tasks.index_document"
MERGE_DOCUMENT = "rag.tasks.merge_document"
MERGE_INDEXED = "rag.tasks.merge_indexed"
MERGE_WORKSPACE = "rag.tasks.merge_workspace"
REAP_JOB_ITEMS = "rag.tasks.reap_job_items"
SETTLE_RELEASES = "rag.tasks.settle_releases"
SYNC_SOURCE = "rag.sources.tasks.sync_source"
SYNC_DUE_SOURCES = "rag.sources.tasks.sync_due_sources"


def task_send(name: str, *args: int) -> AsyncResult:
    """Queue the task `name` with positional ids; in eager mode (evaluation, one test) run it here instead."""
    app = current_app
    if app.conf.task_always_eager:
        # send_task ignores eager mode; the task must be registered in this process to run here,
        # so the loader imports the tasks modules Celery discovers, as a worker does at start.
        app.loader.import_default_modules()
        return app.tasks[name].apply_async(args)
    return app.send_task(name, args=args)


def index_send(item_ids: list[int]) -> None:
    for item_id in item_ids:
        task_send(INDEX_DOCUMENT, item_id)


def merge_send(document_id: int) -> None:
    task_send(MERGE_DOCUMENT, document_id)


def indexed_merge_send(workspace_id: int) -> None:
    task_send(MERGE_INDEXED, workspace_id)


def workspace_merge_send(workspace_id: int) -> AsyncResult:
    return task_send(MERGE_WORKSPACE, workspace_id)
