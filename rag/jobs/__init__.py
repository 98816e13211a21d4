"""Indexing jobs: every file a source hands over becomes a job item that ends indexed, unchanged, skipped or failed.

- `queue`: sending the tasks by name (callers never import the task code) and the transient errors;
  `task_send` is exported here, the face other apps (chat) send their tasks through;
- `lifecycle`: the states of an item (claim with a lease, requeue, fail, finish the job);
- `reaper`: what ends an item whose worker died or whose message the broker lost;
- `run`: running one item through the pipeline;
- `merging`: the dedup merge that follows indexing, queued or inline;
- `tasks`: the thin Celery tasks (ids in, a call to the above); only Celery loads them.
"""

from rag.jobs.queue import task_send

__all__ = ["task_send"]
