"""`manage.py watch_sources`: sync folder sources on file-system events until stopped (`make run` runs it)."""

from __future__ import annotations

import signal
import threading

from django.core.management.base import BaseCommand

from rag.sources import sources_watch, watched_folders


class Command(BaseCommand):
    help = "Watch the folders of sources marked 'watch' and sync them when files change (until SIGTERM or Ctrl-C)."

    def handle(self, *args, **options) -> None:
        stop = threading.Event()
        for signum in (signal.SIGTERM, signal.SIGINT):
            signal.signal(signum, lambda *_: stop.set())
        self.stdout.write(f"watching {len(watched_folders())} folder source(s); new ones are picked up every minute")
        sources_watch(stop=stop)
