"""A calendar edit's consequence, worked out by a worker: the workspace's documents placed again by the calendar
(`releases_settle`: every unlabelled document's release, families reordered, contradictions pruned) takes as long
as a merge on a large workspace, so it never runs in the admin's web request. Like "Sync now": the edit queues
one task on commit (a second edit while one is queued rides on it), and its state, kept in the shared cache, is
what the calendar's admin page shows."""

from __future__ import annotations

from datetime import datetime

from django.core.cache import cache
from django.db import transaction
from django.utils import timezone

from rag.dedup import releases_settle
from rag.jobs.queue import SETTLE_RELEASES, task_send

# A queued settle holds its place this long: the task's hard time limit and then some, so a lost message frees it.
_QUEUED_SECONDS = 900
_STATE_SECONDS = 7 * 24 * 3600  # the last outcome is shown for a week


def _queued_key(workspace_id: int) -> str:
    return f"releases-settle-queued:{workspace_id}"


def _state_key(workspace_id: int) -> str:
    return f"releases-settle-state:{workspace_id}"


def _state_set(workspace_id: int, state: str, **details: object) -> None:
    cache.set(_state_key(workspace_id), {"state": state, "at": timezone.now().isoformat(), **details},
              timeout=_STATE_SECONDS)


def releases_settle_request(*, workspace_id: int) -> bool:
    """Queue the workspace's settle once the caller's transaction commits; False when one is queued already (it
    will read the calendar as it is when it runs, this edit included)."""
    if not cache.add(_queued_key(workspace_id), 1, timeout=_QUEUED_SECONDS):
        return False
    _state_set(workspace_id, "queued")
    transaction.on_commit(lambda: task_send(SETTLE_RELEASES, workspace_id))
    return True


def releases_settle_run(*, workspace_id: int) -> dict[str, int]:
    """The task's body: the workspace's documents placed by the calendar as it now is (the staff's rows are its
    word: no rebuild from the pages), its state recorded as it goes."""
    cache.delete(_queued_key(workspace_id))  # an edit from now on queues a settle of its own
    _state_set(workspace_id, "running")
    try:
        counts = releases_settle(workspace_id=workspace_id, rebuild=False)
    except Exception as exc:
        _state_set(workspace_id, "failed", error=f"{type(exc).__name__}: {exc}"[:500])
        raise
    _state_set(workspace_id, "done", **counts)
    return counts


def releases_settle_state(*, workspace_id: int) -> dict | None:
    """{"state": queued | running | done | failed, "at": when (datetime), and done's counts or failed's error}."""
    state = cache.get(_state_key(workspace_id))
    if state is None:
        return None
    return {**state, "at": datetime.fromisoformat(state["at"])}
