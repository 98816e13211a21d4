"""A folder sync reads only what changed: a file whose size, mtime, ctime and inode are those seen when its
bytes were last read is neither hashed nor listed (issue 37, item 3)."""

from __future__ import annotations

import os
import time

import pytest

import rag.sources.folder
import rag.uploads.staging
from rag.models import Document, IndexingJobItem, Source
from rag.progress import job_summary
from rag.sources.services import source_add
from tests.rag.source_support import encoded, sync_here

HOUR_AGO = time.time() - 3600
FILES = 50


@pytest.fixture
def folder(tmp_path):
    root = tmp_path / "share"
    root.mkdir()
    for number in range(FILES):
        path = root / f"note-{number:02d}.md"
        path.write_text(f"# Note {number}\n\nThe relay in rack {number} restarts at {number:02d}:00 each night.\n")
        os.utime(path, (HOUR_AGO, HOUR_AGO))  # settled: a stat this old vouches for its bytes
    return root


@pytest.fixture
def source(workspace, folder):
    return source_add(workspace=workspace, name="notes", kind=Source.Kind.FOLDER, location=str(folder))


@pytest.fixture
def hashed(monkeypatch):
    """The paths whose bytes a sync reads to hash them."""
    paths: list[str] = []

    def spy(path):
        paths.append(path.name)
        return real(path)

    real = rag.uploads.staging.file_hash
    monkeypatch.setattr(rag.uploads.staging, "file_hash", spy)
    monkeypatch.setattr(rag.sources.folder, "file_hash", spy)
    return paths


def test_a_second_sync_of_unchanged_files_reads_none_and_lists_none(source, workspace, hashed):
    first = sync_here(source.pk)
    assert first.items.filter(status=IndexingJobItem.Status.INDEXED).count() == FILES
    assert not Document.objects.filter(workspace=workspace, file_stat="").exists()  # the worker kept each stat
    hashed.clear()

    again = sync_here(source.pk)
    assert hashed == []
    assert again.items.count() == 0 and again.unchanged_count == FILES and again.finished_at
    assert f"{FILES} file(s): {FILES} unchanged" in job_summary(job=again)


def test_new_bytes_are_read_whatever_the_stat_kept(source, workspace, folder, hashed):
    sync_here(source.pk)
    edited, restored = folder / "note-07.md", folder / "note-08.md"
    edited.write_text(edited.read_text().replace("restarts", "reboots!"))  # same size, a new mtime
    os.utime(edited, (HOUR_AGO + 60, HOUR_AGO + 60))
    # Same size and the old mtime put back: the ctime (which nobody sets back) still tells.
    restored.write_text(restored.read_text().replace("relay", "RELAY"))
    os.utime(restored, (HOUR_AGO, HOUR_AGO))
    hashed.clear()

    job = sync_here(source.pk)
    assert sorted(hashed) == ["note-07.md", "note-08.md"]
    assert sorted(job.items.values_list("display_path", "status")) == [("note-07.md", "indexed"),
                                                                       ("note-08.md", "indexed")]
    assert job.unchanged_count == FILES - 2 and encoded(job) >= 2


def test_a_file_written_just_now_is_hashed_until_its_stat_settles(source, workspace, folder, hashed):
    fresh = folder / "note-03.md"
    fresh.write_text(fresh.read_text())  # mtime now: a second write in the same tick could keep it
    sync_here(source.pk)
    assert Document.objects.get(workspace=workspace, display_path="note-03.md").file_stat == ""
    hashed.clear()

    job = sync_here(source.pk)
    assert hashed == ["note-03.md"] and job.items.count() == 0 and job.unchanged_count == FILES
