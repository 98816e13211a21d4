"""Customer side: print this installation's ID, which license keys must be issued for."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand

from licensing.services import installation_id


class Command(BaseCommand):
    help = "Print this installation's ID (made once per database); give it to your vendor with the workspace slug."

    def handle(self, *args: Any, **options: Any) -> None:
        self.stdout.write(installation_id())
