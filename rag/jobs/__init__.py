"""Indexing jobs: every file a source hands over becomes a job item that ends indexed, unchanged, skipped or failed.

- `queue`: sending the tasks by name (callers never import the task code) and the transient errors;
- `broker`: what Redis holds of the work (queued and unacknowledged messages, worker and beat heartbeats);
- `lifecycle`: the states of an item (claim with a lease, requeue, fail, finish the job);
- `reaper`: what ends an item whose worker died or whose message the broker lost;
- `run`: running one item through the pipeline;
- `merging`: the dedup merge that follows indexing, queued or inline;
- `tasks`: the thin Celery tasks (ids in, a call to the above); only Celery loads them.

The face everyone outside the package uses. The broker's reads load with it (a worker's heartbeat runs
before Django's apps are ready); the rest loads on first use, because it needs Django's models.
"""

from __future__ import annotations

from typing import Any

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

_DJANGO_BOUND = {
    "SYNC_DUE_SOURCES": "queue", "SYNC_SOURCE": "queue", "TRANSIENT_ERRORS": "queue", "index_send": "queue",
    "task_send": "queue", "workspace_merge_send": "queue",
    "documents_show_paths": "lifecycle", "job_finish_if_done": "lifecycle",
    "merge_after_commit": "merging", "job_item_run": "run",
}

__all__ = ["broker_client", "broker_task_count", "live_workers", "scheduler_heartbeat", "scheduler_heartbeat_end",
           "scheduler_last_tick", "worker_heartbeat", "worker_heartbeat_end", "worker_pools", *sorted(_DJANGO_BOUND)]


def __getattr__(name: str) -> Any:  # noqa: ANN401 - a name of one of the modules below
    if name not in _DJANGO_BOUND:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    # import here: these modules read Django's models; the broker's reads must work before the apps are ready.
    from rag.jobs import lifecycle, merging, queue, run

    return getattr({"queue": queue, "lifecycle": lifecycle, "merging": merging, "run": run}[_DJANGO_BOUND[name]], name)
