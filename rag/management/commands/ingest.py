"""`manage.py ingest PATH [PATH ...] --workspace SLUG [--sync]` with a live progress bar."""

from __future__ import annotations

import time
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError
from tqdm import tqdm

from config.celery import live_workers
from rag.jobs.run import job_item_run
from rag.models import IndexingJob, IndexingJobItem, Workspace
from rag.progress import job_progress, job_summary
from rag.uploads import indexing_job_create
from rag.workspaces import WorkspaceError, workspace_create


# Without a worker heartbeat this long, waiting is pointless: say so instead of waiting forever.
NO_WORKER_GRACE_SECONDS = 30


class Command(BaseCommand):
    help = "Index files and folders into a workspace (queued to workers, or in-process with --sync)."

    def add_arguments(self, parser) -> None:
        parser.add_argument("paths", nargs="+", type=Path)
        parser.add_argument("--workspace", required=True, help="workspace slug")
        parser.add_argument("--create-workspace", action="store_true", help="create the workspace if it does not exist")
        parser.add_argument("--sync", action="store_true", help="index and merge in this process, without a worker")
        parser.add_argument("--timeout", type=float, default=0, help="give up waiting after N seconds (0: never)")

    def handle(self, *args, paths: list[Path], workspace: str, sync: bool, timeout: float, **options) -> None:
        target = self._workspace(workspace, create=options["create_workspace"])
        try:
            job = indexing_job_create(workspace=target, paths=paths, source=IndexingJob.Source.CLI, enqueue=not sync)
        except FileNotFoundError as exc:
            raise CommandError(str(exc)) from None

        total = job.items.count()
        bar = tqdm(total=total, unit="file", desc=f"job {job.pk}", disable=options["verbosity"] == 0)
        if sync:
            for item_id in job.items.values_list("pk", flat=True):
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
        self._summary(job)

    def _workspace(self, slug: str, *, create: bool) -> Workspace:
        workspace = Workspace.objects.filter(slug=slug).first()
        if workspace is None and not create:
            raise CommandError(f"no workspace with slug {slug!r}; add --create-workspace, "
                               f"or see `python manage.py workspace list`")
        if workspace is None:
            try:
                workspace = workspace_create(slug=slug)
            except WorkspaceError as exc:
                raise CommandError(str(exc)) from None
            self.stderr.write(f"created workspace {workspace.slug}; "
                              f"`python manage.py workspace add-member {workspace.slug} USER` lets a user see it")
        return workspace

    def _summary(self, job: IndexingJob) -> None:
        job.refresh_from_db(fields=["finished_at", "archived_count"])
        progress = job_progress(job=job)
        self.stdout.write(job_summary(job=job))
        for item in job.items.filter(status__in=[IndexingJobItem.Status.FAILED, IndexingJobItem.Status.SKIPPED]):
            self.stdout.write(f"  {item.status}: {item.path}: {item.error}")
        if progress["failed"]:
            raise CommandError(f"{progress['failed']} document(s) failed")


def _show_rate(bar: tqdm, progress: dict) -> None:
    """Files on the bar; chunks, their rate and the time left (from the job's measured rate) beside it."""
    bar.update(progress["finished"] - bar.n)
    if progress["chunks_per_second"] is not None:
        bar.set_postfix_str(f"{progress['chunks']} chunks, {progress['chunks_per_second']:.1f} chunks/s"
                            + (f", {progress['eta_text']} left" if progress["eta_text"] else ""))
