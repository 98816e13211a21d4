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
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from datetime import timedelta

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from rag.models import IndexingJob, IndexingJobItem
from rag.upload_limits import stored_copies_delete

logger = logging.getLogger(__name__)

Status = IndexingJobItem.Status
_UNFINISHED = (Status.QUEUED, Status.RUNNING)


def _lost_reason(lost_runs: int) -> str:
    return f"its worker died {lost_runs} times while indexing it (out of memory or a crash?); not retried again"


def job_item_claim(*, item_id: int, task_id: str) -> IndexingJobItem | None:
    """Mark the item RUNNING for this task run; None when there is nothing for this run to do.

    A RUNNING item is taken over only from a run that is surely dead: the same message
    delivered again (Celery redelivers only a message whose worker was lost) or a lease
    gone by. Each such takeover counts a lost run, and too many fail the item.
    """
    now = timezone.now()
    with transaction.atomic():
        # The row lock makes two deliveries of one item take turns: only one of them runs it.
        item = IndexingJobItem.objects.select_for_update(of=("self",)).select_related("job").filter(pk=item_id).first()
        if item is None or item.status not in _UNFINISHED:
            return None
        if item.status == Status.RUNNING:
            alive = item.task_id != task_id and item.lease_expires_at is not None and item.lease_expires_at > now
            if alive:
                logger.info("job item runs elsewhere", extra={"item_id": item_id, "task_id": item.task_id})
                return None
            item.lost_runs += 1
        failed = item.lost_runs > settings.JOB_ITEM_MAX_LOST_RUNS
        if failed:
            _fail(item, _lost_reason(item.lost_runs), now)
        else:
            item.status, item.task_id, item.started_at = Status.RUNNING, task_id, now
            item.lease_expires_at = now + timedelta(seconds=settings.JOB_ITEM_LEASE_SECONDS)
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


def _fail(item: IndexingJobItem, reason: str, now) -> None:
    item.status, item.error, item.finished_at, item.lease_expires_at = Status.FAILED, reason[:2000], now, None
    item.save(update_fields=["status", "error", "finished_at", "lease_expires_at", "lost_runs"])
    logger.warning("job item failed", extra={"item_id": item.pk, "reason": reason})


def job_item_fail(*, item_id: int, reason: str) -> bool:
    """Fail an unfinished item with a reason a person can act on; False if it had already finished."""
    failed = IndexingJobItem.objects.filter(pk=item_id, status__in=_UNFINISHED).update(
        status=Status.FAILED, error=reason[:2000], finished_at=timezone.now(), lease_expires_at=None,
    )
    if failed:
        logger.warning("job item failed", extra={"item_id": item_id, "reason": reason})
        job_id, source_file = IndexingJobItem.objects.filter(pk=item_id).values_list("job_id", "source_file").first()
        stored_copies_delete([source_file])  # an upload's copy that will never be indexed
        job_finish_if_done(job_id)
    return bool(failed)


def job_finish_if_done(job_id: int) -> None:
    pending = IndexingJobItem.objects.filter(job_id=job_id, status__in=_UNFINISHED).exists()
    if not pending:
        IndexingJob.objects.filter(pk=job_id, finished_at__isnull=True).update(finished_at=timezone.now())


def job_items_merged(*, document_id: int) -> None:
    """The merge that follows indexing ended (or gave up: `merge_duplicates` catches up): nothing to resend."""
    IndexingJobItem.objects.filter(document_id=document_id, status=Status.INDEXED, merged_at__isnull=True).update(
        merged_at=timezone.now(),
    )


@dataclass(frozen=True)
class ReapResult:
    requeued: list[int]
    failed: list[int]
    jobs_finished: int
    resent: list[int] = field(default_factory=list)  # items whose message the broker lost
    merges_resent: list[int] = field(default_factory=list)  # documents whose merge message was lost


def job_items_reap() -> ReapResult:
    """Queue again the RUNNING items whose lease expired (their worker died), or fail them past the limit.

    Safe to run anywhere and twice at once: rows are locked and skipped if another reaper holds them.
    """
    from rag.tasks import index_document

    now = timezone.now()
    requeued, failed = [], []
    with transaction.atomic():
        for item in IndexingJobItem.objects.select_for_update(skip_locked=True).filter(
            status=Status.RUNNING, lease_expires_at__lt=now,
        ):
            item.lost_runs += 1
            if item.lost_runs > settings.JOB_ITEM_MAX_LOST_RUNS:
                _fail(item, _lost_reason(item.lost_runs), now)
                failed.append(item.pk)
                continue
            item.status, item.task_id, item.lease_expires_at = Status.QUEUED, "", None
            item.save(update_fields=["status", "task_id", "lease_expires_at", "lost_runs"])
            requeued.append(item.pk)
        transaction.on_commit(lambda: [index_document.delay(item_id) for item_id in requeued])
    # A job whose last item ended without finishing it (a crash between the two writes) finishes here.
    stuck = IndexingJob.objects.filter(finished_at__isnull=True).exclude(items__status__in=_UNFINISHED)
    jobs_finished = stuck.update(finished_at=now)
    if requeued or failed or jobs_finished:
        logger.warning("reaped job items", extra={"requeued": len(requeued), "failed": len(failed),
                                                  "jobs_finished": jobs_finished})
    for job_id in set(IndexingJobItem.objects.filter(pk__in=failed).values_list("job_id", flat=True)):
        job_finish_if_done(job_id)
    resent, merges_resent = _resend_lost_messages(now - timedelta(seconds=settings.JOB_REAPER_INTERVAL_SECONDS))
    return ReapResult(requeued=requeued, failed=failed, jobs_finished=jobs_finished, resent=resent,
                      merges_resent=merges_resent)


def _resend_lost_messages(before) -> tuple[list[int], list[int]]:
    """Send again the index and merge tasks that Redis lost (a restart without persistence, a crash).

    A QUEUED item or an unmerged INDEXED one whose message is nowhere in the broker would wait
    forever. `before` leaves alone what was only just queued (its message may be on its way);
    a message sent twice is harmless: the claim and the merge are idempotent.
    """
    from config.celery import broker_task_args
    from rag.tasks import index_document, merge_document

    waiting = IndexingJobItem.objects.filter(status=Status.QUEUED, job__created_at__lt=before)
    unmerged = IndexingJobItem.objects.filter(status=Status.INDEXED, merged_at__isnull=True, document__isnull=False,
                                              finished_at__lt=before)
    if not waiting.exists() and not unmerged.exists():
        return [], []  # the usual case: no broker scan
    queued = {args[0] for args in broker_task_args(index_document.name) if args}
    resent = sorted(set(waiting.values_list("pk", flat=True)) - queued)
    merging = {args[0] for args in broker_task_args(merge_document.name) if args}
    merges_resent = sorted(set(unmerged.values_list("document_id", flat=True)) - merging)
    for item_id in resent:
        index_document.delay(item_id)
    for document_id in merges_resent:
        merge_document.delay(document_id)
    if resent or merges_resent:
        logger.warning("resent lost tasks", extra={"items": len(resent), "merges": len(merges_resent)})
    return resent, merges_resent
