"""Following an indexing job from a command: a progress bar until the workers are done, then the summary.

Shared by `ingest` and `source sync`, whose syncs are indexing jobs like any other.
"""

from __future__ import annotations

import time

from django.core.management.base import CommandError, OutputWrapper
from tqdm import tqdm

from rag.jobs import job_item_run, live_workers
from rag.models import IndexingJob, IndexingJobItem
from rag.progress import job_progress, job_summary

# Without a worker heartbeat this long, waiting is pointless: say so instead of waiting forever.
NO_WORKER_GRACE_SECONDS = 30


def job_follow(*, job: IndexingJob, run_here: bool, timeout: float, out: OutputWrapper, quiet: bool = False) -> None:
    """Run the job's items here (run_here) or wait for the workers; print the summary; CommandError if any failed."""
    total = job.items.count()
    bar = tqdm(total=total, unit="file", desc=f"job {job.pk}", disable=quiet)
    if run_here:
        for item_id in job.items.filter(status=IndexingJobItem.Status.QUEUED).values_list("pk", flat=True):
            job_item_run(item_id=item_id, merge_inline=True)
            _show_rate(bar, job_progress(job=job))
    else:
        started = last_worker_seen = time.monotonic()
        while True:
            progress = job_progress(job=job)
            _show_rate(bar, progress)
            if progress["done"]:
                break
            now = time.monotonic()
            if timeout and now - started > timeout:
                bar.close()
                raise CommandError(f"job {job.pk} still running after {timeout:.0f}s; it goes on in the workers")
            if live_workers():
                last_worker_seen = now
            elif now - last_worker_seen > NO_WORKER_GRACE_SECONDS:
                bar.close()
                left = progress["total"] - progress["finished"]
                raise CommandError(f"no worker is running: job {job.pk} has {left} file(s) waiting in the queue; "
                                   "start one (`make run`) and they are indexed, or use --sync")
            time.sleep(0.5)
    bar.close()
    _summary(job, out)


def _summary(job: IndexingJob, out: OutputWrapper) -> None:
    job.refresh_from_db(fields=["finished_at", "archived_count"])
    progress = job_progress(job=job)
    out.write(job_summary(job=job))
    for item in job.items.filter(status__in=[IndexingJobItem.Status.FAILED, IndexingJobItem.Status.SKIPPED]):
        out.write(f"  {item.status}: {item.path}: {item.error}")
    if progress["failed"]:
        raise CommandError(f"{progress['failed']} document(s) failed")


def _show_rate(bar: tqdm, progress: dict) -> None:
    """Files on the bar; chunks, their rate and the time left (from the job's measured rate) beside it."""
    bar.update(progress["finished"] - bar.n)
    if progress["chunks_per_second"] is not None:
        bar.set_postfix_str(f"{progress['chunks']} chunks, {progress['chunks_per_second']:.1f} chunks/s"
                            + (f", {progress['eta_text']} left" if progress["eta_text"] else ""))
