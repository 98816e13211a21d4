"""`manage.py merge_duplicates --workspace SLUG [--queue]`: rebuild a workspace's canonical records."""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from rag.dedup import workspace_merge
from rag.jobs import workspace_merge_send
from rag.models import Workspace


class Command(BaseCommand):
    help = ("Merge near-duplicate chunks of a workspace into canonical records and raise contradictions. "
            "Idempotent: a second run changes nothing.")

    def add_arguments(self, parser) -> None:
        parser.add_argument("--workspace", required=True, help="workspace slug")
        parser.add_argument("--queue", action="store_true",
                            help="hand the merge to a worker instead of running it here")

    def handle(self, *args, workspace: str, queue: bool, **options) -> None:
        try:
            target = Workspace.objects.get(slug=workspace)
        except Workspace.DoesNotExist:
            raise CommandError(f"no workspace with slug {workspace!r}") from None
        if queue:
            result = workspace_merge_send(target.pk)
            self.stdout.write(f"queued merge of {target.slug}: task {result.id}")
            return
        stats = workspace_merge(workspace_id=target.pk)
        self.stdout.write(
            f"{target.slug}: {stats.chunks} chunk(s) searched ({stats.search}), {stats.edges} merge edge(s); "
            f"records: {stats.records_created} created, {stats.records_changed} changed, "
            f"{stats.records_dissolved} dissolved; {stats.contradictions_raised} contradiction(s) raised "
            f"in {stats.seconds:.1f}s"
        )
