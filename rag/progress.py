"""How far an indexing job is: counts by status, rate and time left (pages, `ingest`, `make run`'s console)."""

from __future__ import annotations

from datetime import datetime

from django.db.models import Count, Min, Q, Sum
from django.db.models.functions import Coalesce
from django.utils import timezone

from rag.models import IndexingJob, IndexingJobItem


def format_duration(seconds: float) -> str:
    """"2 h 05 min", "3 min 20 s", "45 s": as precise as a person reading a progress bar needs."""
    seconds = max(0, round(seconds))
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{hours} h {minutes:02d} min"
    if minutes:
        return f"{minutes} min {secs:02d} s"
    return f"{secs} s"


def job_rates(*, finished: int, total: int, chunks: int, first_started: datetime | None, now: datetime) -> dict:
    """files/s and chunks/s since the first item started, and the time left at that file rate.

    None until there is something to measure: no file finished yet.
    """
    elapsed = (now - first_started).total_seconds() if first_started else 0.0
    if finished == 0 or elapsed <= 0:
        return {"elapsed_seconds": elapsed, "files_per_second": None, "chunks_per_second": None,
                "eta_seconds": None, "eta_text": ""}
    files_per_second = finished / elapsed
    eta_seconds = (total - finished) / files_per_second
    return {"elapsed_seconds": elapsed, "files_per_second": files_per_second, "chunks_per_second": chunks / elapsed,
            "eta_seconds": eta_seconds, "eta_text": format_duration(eta_seconds) if total > finished else ""}


def job_progress(*, job: IndexingJob) -> dict:
    """Counts by status, chunks done, and the measured rate and time left (below)."""
    counts = job.items.aggregate(
        total=Count("id"),
        chunks=Coalesce(Sum("chunk_count"), 0),
        first_started=Min("started_at"),
        **{status: Count("id", filter=Q(status=status)) for status in IndexingJobItem.Status.values},
    )
    finished = sum(counts[s] for s in IndexingJobItem.FINISHED)
    # A sync's unchanged files have no items (IndexingJob.unchanged_count): done at once, out of the rate.
    rates = job_rates(finished=finished, total=counts["total"], chunks=counts["chunks"],
                      first_started=counts["first_started"], now=timezone.now())
    counts["unchanged"] += job.unchanged_count
    counts["total"] += job.unchanged_count
    finished += job.unchanged_count
    counts["finished"] = finished
    counts["percent"] = round(100 * finished / counts["total"]) if counts["total"] else 100
    counts["done"] = finished == counts["total"]
    counts.update(rates)
    return counts


def job_summary(*, job: IndexingJob) -> str:
    """One line per job, for `ingest` and `make run`'s console: what happened to its files, and how long it took."""
    progress = job_progress(job=job)
    parts = [f"{progress[s]} {s}" for s in ("indexed", "unchanged", "skipped", "failed") if progress[s]]
    if job.archived_count:
        parts.append(f"{job.archived_count} archived")
    line = f"job {job.pk}: {progress['total']} file(s): " + (", ".join(parts) or "nothing to do")
    if job.finished_at:
        seconds = round((job.finished_at - job.created_at).total_seconds())
        line += f" in {seconds // 60}m{seconds % 60:02d}s" if seconds >= 60 else f" in {seconds}s"
    return line


def upload_received(*, job: IndexingJob) -> tuple[str, bool]:
    """The upload's banner and whether it warns: a file refused on arrival (a limit, the quota) is said at once, with why."""
    received = job.items.count()
    refused = job.items.filter(status=IndexingJobItem.Status.FAILED).order_by("pk")
    first = refused.first()
    if first is None:
        return f"Received {received} file(s) for indexing.", False
    return f"Received {received} file(s); {refused.count()} refused. {first.shown_path}: {first.error}.", True
