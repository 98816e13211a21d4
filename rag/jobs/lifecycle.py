"""The life cycle of an indexing job item: every item reaches a final state, whatever dies on the way.

QUEUED -> RUNNING (claimed by one task run, with a lease) -> INDEXED / UNCHANGED / SKIPPED / FAILED.
Ways an item could stay unfinished, and what ends each:

- its task gave up (retries exhausted, hard time limit): the task's failure hook, `job_item_fail`;
- its pool process died (SIGKILL, out of memory): Celery redelivers the message at once
  (task_reject_on_worker_lost), and the claim counts a lost run;
- its whole worker died: the lease runs out and `job_items_reap` (Celery beat) queues it again;
- it keeps killing its worker: after JOB_ITEM_MAX_LOST_RUNS lost runs it fails with that reason;
- the broker lost its message, or the message of the merge that follows (Redis restarted without
  its data): the reaper finds no such message in Redis and sends it again.

The last two live in rag.jobs.reaper; running an item in rag.jobs.run.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from datetime import timedelta

from django.conf import settings
from django.db import connection, transaction
from django.db.models import Exists, OuterRef
from django.utils import timezone

from rag.models import Chunk, Document, IndexingJob, IndexingJobItem
from rag.storage import stored_copies_delete

logger = logging.getLogger(__name__)

Status = IndexingJobItem.Status
UNFINISHED = (Status.QUEUED, Status.RUNNING)


def lost_reason(lost_runs: int) -> str:
    return f"its worker died {lost_runs} times while indexing it (out of memory or a crash?); not retried again"


def job_item_claim(*, item_id: int, task_id: str) -> IndexingJobItem | None:
    """Mark the item RUNNING for this task run; None when there is nothing for this run to do.

    A RUNNING item is taken over only from a run that is surely dead: the same message
    delivered again (Celery redelivers only a message whose worker was lost) or a lease
    gone by. Each such takeover counts a lost run, and too many fail the item.
    """
    now = timezone.now()
    lease = now + timedelta(seconds=settings.JOB_ITEM_LEASE_SECONDS)
    # The usual case, a QUEUED item, in one conditional UPDATE (two runs cannot both match it) and
    # one read, instead of a locked transaction's four round trips for every file of a job.
    if IndexingJobItem.objects.filter(pk=item_id, status=Status.QUEUED).update(
            status=Status.RUNNING, task_id=task_id, started_at=now, lease_expires_at=lease):
        return IndexingJobItem.objects.select_related("job").get(pk=item_id)
    with transaction.atomic():
        # The row lock makes two deliveries of one item take turns: only one of them runs it.
        item = IndexingJobItem.objects.select_for_update(of=("self",)).select_related("job").filter(pk=item_id).first()
        if item is None or item.status not in UNFINISHED:
            return None
        if item.status == Status.RUNNING:
            alive = item.task_id != task_id and item.lease_expires_at is not None and item.lease_expires_at > now
            if alive:
                logger.info("job item runs elsewhere", extra={"item_id": item_id, "task_id": item.task_id})
                return None
            item.lost_runs += 1
        failed = item.lost_runs > settings.JOB_ITEM_MAX_LOST_RUNS
        if failed:
            item_fail_locked(item, lost_reason(item.lost_runs), now)
        else:
            item.status, item.task_id, item.started_at = Status.RUNNING, task_id, now
            item.lease_expires_at = lease
            item.save(update_fields=["status", "task_id", "started_at", "lease_expires_at", "lost_runs"])
    if failed:
        job_finish_if_done(item.job_id)
        return None
    return item


def job_item_requeue(*, item_id: int) -> None:
    """Back to QUEUED for a retry of the same task (a transient error): not a lost run."""
    IndexingJobItem.objects.filter(pk=item_id, status=Status.RUNNING).update(
        status=Status.QUEUED, lease_expires_at=None,
    )


def item_fail_locked(item: IndexingJobItem, reason: str, now) -> None:
    """Fail an item whose row the caller holds locked (the claim, the reaper)."""
    item.status, item.error, item.finished_at, item.lease_expires_at = Status.FAILED, reason[:2000], now, None
    item.save(update_fields=["status", "error", "finished_at", "lease_expires_at", "lost_runs"])
    logger.warning("job item failed", extra={"item_id": item.pk, "reason": reason})


def job_item_fail(*, item_id: int, reason: str) -> bool:
    """Fail an unfinished item with a reason a person can act on; False if it had already finished."""
    failed = IndexingJobItem.objects.filter(pk=item_id, status__in=UNFINISHED).update(
        status=Status.FAILED, error=reason[:2000], finished_at=timezone.now(), lease_expires_at=None,
    )
    if failed:
        logger.warning("job item failed", extra={"item_id": item_id, "reason": reason})
        job_id, source_file = IndexingJobItem.objects.filter(pk=item_id).values_list("job_id", "source_file").first()
        stored_copies_delete([source_file])  # an upload's copy that will never be indexed
        job_finish_if_done(job_id)
    return bool(failed)


def job_finish_if_done(job_id: int) -> None:
    """Stamp the job finished once none of its items is unfinished: one statement, run after each item ends.

    The item's own update is committed first, so of two items ending together at least one sees the other done.
    """
    unfinished = IndexingJobItem.objects.filter(job_id=job_id, status__in=UNFINISHED)
    finished = IndexingJob.objects.filter(pk=job_id, finished_at__isnull=True).exclude(Exists(unfinished)).update(
        finished_at=timezone.now())
    if finished and IndexingJobItem.objects.filter(job_id=job_id, status=Status.INDEXED).exists():
        search_statistics_refresh()


def search_statistics_refresh() -> None:
    """ANALYZE the chunk and document tables once a job has indexed something.

    Search reads the planner's statistics: lexical term frequencies come from pg_stats of the chunks'
    `search_vector`, and the HNSW-or-exact plan from row estimates. Left to autovacuum, they arrive at some
    moment after indexing, so the same question ranked differently before and after it (the demo's
    version accuracy read 0.857 on a fresh index and 0.786 on the same index a minute later). ANALYZE
    samples a bounded number of rows, so this costs well under a second even on large tables.
    """
    with connection.cursor() as cursor:
        cursor.execute(f"ANALYZE {Chunk._meta.db_table}, {Document._meta.db_table}")


def job_items_merged(*, document_ids: Iterable[int]) -> set[int]:
    """The merge that follows indexing ended (or gave up: `merge_duplicates` catches up): nothing to resend.

    Returns the workspaces of the jobs whose last merge this was: their files are all in, for what looks at a
    job's files together (the releases of its exports, rag.jobs.merging).
    """
    ids = list(document_ids)
    marked = IndexingJobItem.objects.filter(
        document_id__in=ids, status=Status.INDEXED, merged_at__isnull=True,
    ).update(merged_at=timezone.now())
    if not marked:
        return set()
    # The last merge of a finished job changed the chunks' lineage columns that search filters on: refresh the
    # statistics now rather than whenever autovacuum comes by (see search_statistics_refresh).
    awaiting = IndexingJobItem.objects.filter(job_id=OuterRef("pk"), status=Status.INDEXED, merged_at__isnull=True)
    jobs = IndexingJobItem.objects.filter(document_id__in=ids).values("job_id")
    done = set(IndexingJob.objects.filter(pk__in=jobs, finished_at__isnull=False).exclude(Exists(awaiting))
               .values_list("workspace_id", flat=True))
    if done:
        search_statistics_refresh()
    return done


def unmerged_documents(*, workspace_id: int, limit: int) -> list[int]:
    """Documents the workspace's jobs indexed and no merge has settled yet, the first finished first."""
    rows = (IndexingJobItem.objects.filter(job__workspace_id=workspace_id, status=Status.INDEXED,
                                           merged_at__isnull=True, document__isnull=False)
            .order_by("finished_at", "pk").values_list("document_id", flat=True))
    return list(dict.fromkeys(rows[:limit]))


def documents_show_paths(shown: dict[int, str]) -> None:
    """Record the path pages show for each document (relative to the folder it was last ingested from).

    One read for all, then a write only where the path changed: a re-sync of a large unchanged folder
    is one query here, not one per file.
    """
    current = dict(Document.objects.filter(pk__in=list(shown)).values_list("pk", "display_path"))
    for document_id, display_path in shown.items():
        if document_id in current and current[document_id] != display_path:
            Document.objects.filter(pk=document_id).update(display_path=display_path)
