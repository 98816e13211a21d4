"""`manage.py source add|sync|list|remove`: folder and Git sources kept in sync (part of the stable CLI)."""

from __future__ import annotations

import argparse
import json

from django.core.management.base import BaseCommand, CommandError

from rag.management.following import job_follow
from rag.models import Source, Workspace
from rag.sources import SourceError, changes_text, location_shown, source_add, source_remove, source_row, source_sync


class Command(BaseCommand):
    help = "Folder and Git sources of a workspace: add, sync, list, remove."

    def add_arguments(self, parser) -> None:
        actions = parser.add_subparsers(dest="action", required=True)
        add = actions.add_parser("add", help="add a folder or Git source (synced by the schedule, or `source sync`)")
        add.add_argument("name")
        add.add_argument("--workspace", required=True)
        where = add.add_mutually_exclusive_group(required=True)
        where.add_argument("--folder", help="a folder (a mounted share is just a folder)")
        where.add_argument("--git", help="a local repository's path or a clone URL (no password in it)")
        add.add_argument("--tags", default="", help="glob of the tags read (default: tags that parse as versions)")
        add.add_argument("--branch", default="", help="the branch read (default: the default branch)")
        add.add_argument("--include", action="append", default=[], help="glob of paths to read (repeatable)")
        add.add_argument("--exclude", action="append", default=[], help="glob of paths to leave out (repeatable)")
        add.add_argument("--every", type=int, default=60, help="sync every N minutes (0: only on demand)")
        add.add_argument("--watch", action="store_true", help="folder: also sync on file-system events")
        sync = actions.add_parser("sync", help="sync a source now (queued to workers, or in-process with --sync)")
        sync.add_argument("name")
        sync.add_argument("--workspace", required=True)
        sync.add_argument("--sync", action="store_true", help="index and merge in this process, without a worker")
        sync.add_argument("--timeout", type=float, default=0, help="give up waiting after N seconds (0: never)")
        # Also after the action (`source sync NAME --verbosity 0`); SUPPRESS keeps a value given before it.
        sync.add_argument("--verbosity", "-v", type=int, choices=[0, 1, 2, 3], default=argparse.SUPPRESS)
        listing = actions.add_parser("list", help="a workspace's sources and their last sync")
        listing.add_argument("--workspace", required=True)
        listing.add_argument("--json", action="store_true", help="one JSON list")
        remove = actions.add_parser("remove", help="forget a source (its documents stay unless archived)")
        remove.add_argument("name")
        remove.add_argument("--workspace", required=True)
        remove.add_argument("--archive-documents", action="store_true", help="archive the documents it brought in")

    def handle(self, *args, action: str, workspace: str, **options) -> None:
        target = Workspace.objects.filter(slug=workspace).first()
        if target is None:
            raise CommandError(f"no workspace with slug {workspace!r}; see `python manage.py workspace list`")
        getattr(self, f"_{action}")(target, **options)

    def _add(self, workspace: Workspace, *, name: str, folder: str | None, git: str | None, **options) -> None:
        try:
            source = source_add(
                workspace=workspace, name=name, kind=Source.Kind.FOLDER if folder else Source.Kind.GIT,
                location=folder or git or "", branch=options["branch"], tags_pattern=options["tags"],
                include=options["include"], exclude=options["exclude"], every_minutes=options["every"],
                watch=options["watch"],
            )
        except SourceError as exc:
            raise CommandError(str(exc)) from None
        schedule = f"every {source.every_minutes} min" if source.every_minutes else "on demand only"
        self.stdout.write(f"added {source.kind} source {source.name} ({location_shown(source.location)}), {schedule}; "
                          "its first sync is queued for a worker (`python manage.py source sync "
                          f"{source.name} --workspace {workspace.slug} --sync` runs one here)")

    def _sync(self, workspace: Workspace, *, name: str, sync: bool, timeout: float, verbosity: int, **options) -> None:
        source = self._source(workspace, name)
        try:
            job = source_sync(source_id=source.pk, enqueue=not sync)
        except SourceError as exc:
            raise CommandError(f"source {name}: {exc}") from None
        source.refresh_from_db()
        if changes := changes_text(source.last_changes):
            self.stdout.write(f"source {name}: {changes}")
        # The job is an indexing job like any other: `ingest`'s progress and summary follow it.
        job_follow(job=job, run_here=sync, timeout=timeout, out=self.stdout, quiet=verbosity == 0)

    def _list(self, workspace: Workspace, *, json: bool = False, **options) -> None:
        rows = [source_row(source) for source in workspace.sources.select_related("last_job").order_by("name")]
        if json:
            self.stdout.write(_dumps(rows))
            return
        if not rows:
            self.stdout.write(f"workspace {workspace.slug} has no sources")
        for row in rows:
            state = row["paused_reason"] and f"paused: {row['paused_reason']}" or row["last_error"] or row["last_sync"]
            self.stdout.write(f"{row['name']}\t{row['kind']}\t{row['location']}\t{row['schedule']}\t{state}")

    def _remove(self, workspace: Workspace, *, name: str, archive_documents: bool, **options) -> None:
        source = self._source(workspace, name)
        archived = source_remove(source=source, archive_documents=archive_documents)
        self.stdout.write(f"removed source {name}" + (f"; {archived} document(s) archived" if archive_documents else
                                                      "; its documents stay (--archive-documents archives them)"))

    def _source(self, workspace: Workspace, name: str) -> Source:
        source = workspace.sources.filter(name=name).first()
        if source is None:
            raise CommandError(f"workspace {workspace.slug} has no source {name!r}; "
                               f"see `python manage.py source list --workspace {workspace.slug}`")
        return source


def _dumps(rows: list[dict]) -> str:
    return json.dumps(rows, ensure_ascii=False, default=str)
