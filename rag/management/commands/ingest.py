"""`manage.py ingest PATH [PATH ...] --workspace SLUG [--sync]` with a live progress bar."""

from __future__ import annotations

from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from rag.management.following import job_follow
from rag.models import IndexingJob, Workspace
from rag.uploads import indexing_job_create
from rag.workspaces import WorkspaceError, workspace_create


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

        job_follow(job=job, run_here=sync, timeout=timeout, out=self.stdout, quiet=options["verbosity"] == 0)

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
