"""What ends an item whose worker died or whose message the broker lost (see rag.jobs.lifecycle).

Celery beat runs `job_items_reap` every JOB_REAPER_INTERVAL_SECONDS (the task rag.tasks.reap_job_items).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from datetime import timedelta

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from rag.jobs.broker import broker_task_args
from rag.jobs.lifecycle import UNFINISHED, item_fail_locked, job_finish_if_done, lost_reason
from rag.jobs.queue import INDEX_DOCUMENT, MERGE_INDEXED, index_send, indexed_merge_send
from rag.models import IndexingJob, IndexingJobItem

logger = logging.getLogger(__name__)

Status = IndexingJobItem.Status


@dataclass(frozen=True)
class ReapResult:
    requeued: list[int]
    failed: list[int]
    jobs_finished: int
    resent: list[int] = field(default_factory=list)  # items whose message the broker lost
    merges_resent: list[int] = field(default_factory=list)  # workspaces whose indexed files' merge message was lost


def job_items_reap() -> ReapResult:
    """Queue again the RUNNING items whose lease expired (their worker died), or fail them past the limit.

    Safe to run anywhere and twice at once: rows are locked and skipped if another reaper holds them.
    """
    now = timezone.now()
    requeued, failed = [], []
    with transaction.atomic():
        for item in IndexingJobItem.objects.select_for_update(skip_locked=True).filter(
            status=Status.RUNNING, lease_expires_at__lt=now,
        ):
            item.lost_runs += 1
            if item.lost_runs > settings.JOB_ITEM_MAX_LOST_RUNS:
                item_fail_locked(item, lost_reason(item.lost_runs), now)
                failed.append(item.pk)
                continue
            item.status, item.task_id, item.lease_expires_at = Status.QUEUED, "", None
            item.save(update_fields=["status", "task_id", "lease_expires_at", "lost_runs"])
            requeued.append(item.pk)
        transaction.on_commit(lambda: index_send(requeued))
    # A job whose last item ended without finishing it (a crash between the two writes) finishes here.
    stuck = IndexingJob.objects.filter(finished_at__isnull=True).exclude(items__status__in=UNFINISHED)
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
    waiting = IndexingJobItem.objects.filter(status=Status.QUEUED, job__created_at__lt=before)
    unmerged = IndexingJobItem.objects.filter(status=Status.INDEXED, merged_at__isnull=True, document__isnull=False,
                                              finished_at__lt=before)
    if not waiting.exists() and not unmerged.exists():
        return [], []  # the usual case: no broker scan
    queued = {args[0] for args in broker_task_args(INDEX_DOCUMENT) if args}
    resent = sorted(set(waiting.values_list("pk", flat=True)) - queued)
    merging = {args[0] for args in broker_task_args(MERGE_INDEXED) if args}
    merges_resent = sorted(set(unmerged.values_list("job__workspace_id", flat=True)) - merging)
    index_send(resent)
    for workspace_id in merges_resent:
        indexed_merge_send(workspace_id)
    if resent or merges_resent:
        logger.warning("resent lost tasks", extra={"items": len(resent), "merges": len(merges_resent)})
    return resent, merges_resent
