"""`manage.py ingest PATH [PATH ...] --workspace SLUG [--sync]` with a live progress bar."""

from __future__ import annotations

import time
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError
from tqdm import tqdm

from config.celery import live_workers
from rag.models import IndexingJob, IndexingJobItem, Workspace
from rag.services import indexing_job_create, job_item_run, job_progress


# Without a worker heartbeat this long, waiting is pointless: say so instead of waiting forever.
NO_WORKER_GRACE_SECONDS = 30


class Command(BaseCommand):
    help = "Index files and folders into a workspace (queued to workers, or in-process with --sync)."

    def add_arguments(self, parser) -> None:
        parser.add_argument("paths", nargs="+", type=Path)
        parser.add_argument("--workspace", required=True, help="workspace slug")
        parser.add_argument("--sync", action="store_true", help="index and merge in this process, without a worker")
        parser.add_argument("--timeout", type=float, default=0, help="give up waiting after N seconds (0: never)")

    def handle(self, *args, paths: list[Path], workspace: str, sync: bool, timeout: float, **options) -> None:
        try:
            target = Workspace.objects.get(slug=workspace)
        except Workspace.DoesNotExist:
            raise CommandError(f"no workspace with slug {workspace!r}") from None
        try:
            job = indexing_job_create(workspace=target, paths=paths, source=IndexingJob.Source.CLI, enqueue=not sync)
        except FileNotFoundError as exc:
            raise CommandError(str(exc)) from None

        total = job.items.count()
        bar = tqdm(total=total, unit="file", desc=f"job {job.pk}", disable=options["verbosity"] == 0)
        if sync:
            for item_id in job.items.values_list("pk", flat=True):
                job_item_run(item_id=item_id, merge_inline=True)
                bar.update(1)
        else:
            started = last_worker_seen = time.monotonic()
            while True:
                progress = job_progress(job=job)
                bar.update(progress["finished"] - bar.n)
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
        self._summary(job)

    def _summary(self, job: IndexingJob) -> None:
        progress = job_progress(job=job)
        parts = [f"{progress[s]} {s}" for s in ("indexed", "unchanged", "skipped", "failed") if progress[s]]
        if job.archived_count:
            parts.append(f"{job.archived_count} archived")
        self.stdout.write(f"job {job.pk}: {progress['total']} file(s): " + (", ".join(parts) or "nothing to do"))
        for item in job.items.filter(status__in=[IndexingJobItem.Status.FAILED, IndexingJobItem.Status.SKIPPED]):
            self.stdout.write(f"  {item.status}: {item.path}: {item.error}")
        if progress["failed"]:
            raise CommandError(f"{progress['failed']} document(s) failed")
