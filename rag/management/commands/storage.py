"""`manage.py storage migrate`: copy the uploads kept in DATA_DIR/uploads into the configured file storage."""

from __future__ import annotations

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError
from tqdm import tqdm

from rag.storage import StorageUnavailable, local_copies, stored_copies_migrate
from rag.uploads import size_text


class Command(BaseCommand):
    help = "Copy the upload copies under DATA_DIR/uploads into the storage STORAGE_URL names (idempotent)."

    def add_arguments(self, parser) -> None:
        actions = parser.add_subparsers(dest="action", required=True, metavar="migrate")
        actions.add_parser("migrate", help="copy local upload copies to the configured storage; rerun safely")

    def handle(self, *args, action: str, **options) -> None:
        copies = local_copies()
        target = settings.STORAGE_URL or f"{settings.MEDIA_ROOT} (local; set STORAGE_URL to move them)"
        self.stdout.write(f"{len(copies)} local file(s) to {target}")
        bar = tqdm(total=sum(path.stat().st_size for _, path in copies), unit="B", unit_scale=True,
                   desc="copying", disable=not copies)
        try:
            summary = stored_copies_migrate(copies=copies, on_copy=bar.update)
        except (StorageUnavailable, OSError) as exc:
            raise CommandError(f"stopped: {exc}; run it again: what was copied is not copied twice") from None
        finally:
            bar.close()
        self.stdout.write(
            f"storage migrate: {summary.files} file(s), {summary.copied} copied"
            + (f" ({size_text(summary.copied_bytes)})" if summary.copied_bytes else "")
            + f", {summary.already_there} already there, {summary.items_rewritten} job item(s) pointed at the storage")
