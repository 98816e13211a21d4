"""Indexing jobs: every file a source hands over becomes a job item that ends indexed, unchanged, skipped or failed.

- `queue`: sending the tasks by name (callers never import the task code) and the transient errors;
- `broker`: what Redis holds of the work (queued and unacknowledged messages, worker and beat heartbeats);
- `lifecycle`: the states of an item (claim with a lease, requeue, fail, finish the job);
- `reaper`: what ends an item whose worker died or whose message the broker lost;
- `run`: running one item through the pipeline;
- `merging`: the dedup merge that follows indexing, queued or inline;
- `releases`: the documents placed again after a calendar edit, queued, with its state;
- `tasks`: the thin Celery tasks (ids in, a call to the above); only Celery loads them.

The face everyone outside the package uses. Importing it loads Django's models: a script sets Django up first.
"""

from __future__ import annotations

from rag.jobs.broker import (
    broker_client,
    broker_task_count,
    live_workers,
    scheduler_heartbeat,
    scheduler_heartbeat_end,
    scheduler_last_tick,
    worker_heartbeat,
    worker_heartbeat_end,
    worker_pools,
)
from rag.jobs.lifecycle import documents_show_paths, job_finish_if_done
from rag.jobs.merging import merge_after_commit
from rag.jobs.queue import (
    SYNC_DUE_SOURCES,
    SYNC_SOURCE,
    TRANSIENT_ERRORS,
    index_send,
    task_send,
    workspace_merge_send,
)
from rag.jobs.releases import releases_settle_request, releases_settle_state
from rag.jobs.run import job_item_run

__all__ = ["SYNC_DUE_SOURCES", "SYNC_SOURCE", "TRANSIENT_ERRORS", "broker_client", "broker_task_count",
           "documents_show_paths", "index_send", "job_finish_if_done", "job_item_run", "live_workers",
           "releases_settle_request", "releases_settle_state",
           "merge_after_commit", "scheduler_heartbeat", "scheduler_heartbeat_end", "scheduler_last_tick",
           "task_send", "worker_heartbeat", "worker_heartbeat_end", "worker_pools", "workspace_merge_send"]
