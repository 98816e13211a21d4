"""Folder sources that sync on file-system events: a burst of changes is one sync, a busy source waits its turn."""

from __future__ import annotations

import threading
import time
from pathlib import Path

from django.utils import timezone

from rag.models import IndexingJob, Source
from rag.sources import watch
from rag.sources.services import SourceError, source_add, source_sync
from rag.sources.watch import sources_touched, sources_watch, watched_folders
from devkit.faults import broker_purge
from tests.factories import WorkspaceFactory


def _until(condition, timeout: float = 30) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.2)
    return False


def test_changes_map_to_the_sources_whose_folder_holds_them(tmp_path):
    folders = {1: tmp_path / "a", 2: tmp_path / "b"}
    changes = {(None, str(tmp_path / "a" / "x.md")), (None, str(tmp_path / "a" / "sub" / "y.md"))}
    assert sources_touched(changes, folders) == {1}


def test_a_burst_of_edits_in_a_watched_folder_makes_one_sync(transactional_db, django_db_serialized_rollback,
                                                            tmp_path, settings, monkeypatch):
    # Serialized rollback, as every test with committed data here: a plain flush would leave the next one
    # content types it cannot restore.
    settings.SOURCE_WATCH_DEBOUNCE_SECONDS = 0.5
    folder = tmp_path / "watched"
    folder.mkdir()
    workspace = WorkspaceFactory()
    source = source_add(workspace=workspace, name="watched", kind=Source.Kind.FOLDER, location=str(folder),
                        watch=True, every_minutes=0)
    source_add(workspace=workspace, name="unwatched", kind=Source.Kind.FOLDER, location=str(tmp_path), every_minutes=0)
    assert list(watched_folders()) == [source.pk]
    refused = threading.Event()  # the watcher found the source still syncing: the change is kept, not lost

    def sync_seen(*, source_id: int):
        try:
            return source_sync(source_id=source_id)
        except SourceError as exc:
            if "still syncing" in str(exc):
                refused.set()
            raise

    monkeypatch.setattr(watch, "source_sync", sync_seen)
    stop = threading.Event()
    watcher = threading.Thread(target=sources_watch, kwargs={"stop": stop, "refresh_seconds": 2}, daemon=True)
    watcher.start()
    try:
        def burst() -> None:  # written again until seen: files written before the watch is set up raise no event
            for number in range(5):
                Path(folder, f"page-{number}.md").write_text(f"# Page {number}\n\nText of page {number}.\n")

        assert _until(lambda: burst() or IndexingJob.objects.filter(sync_source=source).exists())
        # Writes after the first sync find it still running: they wait for it, so there is one job, and the
        # folder was read whole by then.
        jobs = IndexingJob.objects.filter(sync_source=source)
        assert jobs.count() == 1 and jobs.get().items.count() == 5
        assert not IndexingJob.objects.filter(sync_source__name="unwatched").exists()

        refused.clear()
        Path(folder, "late.md").write_text("# Late\n\nWritten while the first sync is still running.\n")
        assert refused.wait(timeout=30)
        assert jobs.count() == 1  # the first job is not done: the change waits, it is not lost
        jobs.update(finished_at=timezone.now())
        assert _until(lambda: IndexingJob.objects.filter(sync_source=source).count() == 2)
        assert jobs.latest("pk").items.filter(path__endswith="late.md").exists()
    finally:
        stop.set()
        watcher.join(timeout=15)
        broker_purge()
    assert not watcher.is_alive()
