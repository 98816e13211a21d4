"""`manage.py lineage_releases --workspace SLUG [--dry-run]`: infer the release of every unlabelled document."""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from rag.dedup import releases_settle
from rag.models import Workspace


class Command(BaseCommand):
    help = ("Read the release calendar from the series pages again and infer the release each unlabelled document "
            "belongs to (its export's series pages, 'new in' mentions or labelled files, else its date against the "
            "calendar), and drop pending contradictions between two releases' passages; indexing does this once a job's "
            "merges are done, this runs it over documents already stored. Idempotent.")

    def add_arguments(self, parser) -> None:
        parser.add_argument("--workspace", required=True, help="workspace slug")
        parser.add_argument("--dry-run", action="store_true", help="count what would change, write nothing")

    def handle(self, *args, workspace: str, dry_run: bool, **options) -> None:
        try:
            target = Workspace.objects.get(slug=workspace)
        except Workspace.DoesNotExist:
            raise CommandError(f"no workspace with slug {workspace!r}") from None
        counts = releases_settle(workspace_id=target.pk, rebuild=True, dry_run=dry_run)  # the series pages as now
        parts = ", ".join(f"{source}: {count}" for source, count in counts.items()
                          if source not in ("documents", "changed"))
        self.stdout.write(f"{target.slug}: {counts['documents']} document(s), {counts['changed']} "
                          f"{'would change' if dry_run else 'changed'}; release from {parts}")
