"""What one sync may cost: "Sync now" only queues (one at a time), and a Git sync stops at its limits with the
reason: tree entries (a Git bomb), blob size, bytes staged in all, a remote that never answers."""

from __future__ import annotations

import os
import shutil
import socket
import threading
import time
import uuid
from pathlib import Path

import pytest
from django.conf import settings as django_settings
from dulwich.repo import Repo

import rag.sources.git_sync
from rag.models import IndexingJob, IndexingJobItem, Source
from devkit.source_faults import first_sync_taken
from rag.sources.git import blob_size
from rag.sources.git_sync import git_mirror_dir
from rag.sources.selectors import changes_text
from rag.sources.services import SourceError, source_add, source_sync
from rag.sources.tasks import sync_source
from tests.rag.source_support import GitRepo, sync_here


@pytest.fixture
def repo(tmp_path):
    repo = GitRepo(tmp_path / "docs-repo")
    run = uuid.uuid4().hex  # blobs are stored by content: each test's are its own
    repo.commit({"docs/guide.md": f"# Guide\n\nPort 8080. {run}\n", "docs/faq.md": f"# FAQ\n\nAsk. {run}\n",
                 "docs/limits.md": f"# Limits {run}\n\n" + "x" * 4000 + "\n"})
    repo.tag("v1.0")
    return repo


@pytest.fixture
def source(workspace, repo):
    added = source_add(workspace=workspace, name="docs", kind=Source.Kind.GIT, location=str(repo.path))
    first_sync_taken(added.pk)
    return added


def _blobs() -> set[Path]:
    folder = Path(django_settings.MEDIA_ROOT) / "sources" / "blobs"
    return {path for path in folder.rglob("*") if path.is_file()} if folder.is_dir() else set()


def test_sync_now_only_queues_and_presses_pile_up_nothing(logged_in_client, workspace, source, user,
                                                         django_capture_on_commit_callbacks, monkeypatch):
    sent = []
    monkeypatch.setattr("rag.sources.services.task_send", lambda name, *ids: sent.append((name, *ids)))
    with django_capture_on_commit_callbacks(execute=True):
        first = logged_in_client.post(f"/documents/sources/{source.pk}/sync/", follow=True)
        again = logged_in_client.post(f"/documents/sources/{source.pk}/sync/", follow=True)
    assert b"sync queued" in first.content and b"already queued" in again.content
    assert sent == [(sync_source.name, source.pk, user.pk)]
    assert not IndexingJob.objects.exists()  # no fetch, no tree walk in the web request

    job_id = sync_source(*sent[0][1:])  # what the worker does; it frees the button
    assert IndexingJob.objects.get(pk=job_id).created_by == user
    IndexingJob.objects.filter(pk=job_id).update(finished_at=IndexingJob.objects.get(pk=job_id).created_at)
    with django_capture_on_commit_callbacks(execute=True):
        logged_in_client.post(f"/documents/sources/{source.pk}/sync/")
    assert len(sent) == 2


def test_a_tree_past_the_entry_limit_fails_the_sync_with_the_reason(source, settings):
    settings.GIT_SOURCE_MAX_TREE_ENTRIES = 2
    with pytest.raises(SourceError, match="GIT_SOURCE_MAX_TREE_ENTRIES"):
        source_sync(source_id=source.pk, enqueue=False)
    source.refresh_from_db()
    assert "more than 2 files" in source.last_error and not IndexingJob.objects.exists()


def test_a_blob_over_the_file_limit_fails_alone_and_is_never_staged(source, settings):
    settings.INGEST_MAX_FILE_BYTES = 1000
    before = _blobs()
    job = source_sync(source_id=source.pk, enqueue=False)
    failed = job.items.get(display_path="docs/limits.md")
    assert failed.status == IndexingJobItem.Status.FAILED and "INGEST_MAX_FILE_BYTES" in failed.error
    assert failed.source_file == "" and len(_blobs() - before) == 2


def test_bytes_past_the_sync_limit_fail_it_and_what_it_staged_is_deleted(source, settings):
    settings.GIT_SOURCE_MAX_SYNC_BYTES = 3000
    before = _blobs()
    with pytest.raises(SourceError, match="GIT_SOURCE_MAX_SYNC_BYTES"):
        source_sync(source_id=source.pk, enqueue=False)
    assert _blobs() == before and not IndexingJobItem.objects.exists()


def test_a_remote_that_accepts_and_never_answers_fails_the_sync_in_time(workspace, settings):
    listener = socket.create_server(("127.0.0.1", 0))
    held = []
    threading.Thread(target=lambda: held.append(listener.accept()), daemon=True).start()
    settings.GIT_SOURCE_FETCH_TIMEOUT_SECONDS = 1
    port = listener.getsockname()[1]
    source = source_add(workspace=workspace, name="stalls", kind="git", location=f"git://127.0.0.1:{port}/docs.git")
    started = time.monotonic()
    with pytest.raises(SourceError, match="cannot fetch"):
        source_sync(source_id=source.pk, enqueue=False)
    assert time.monotonic() - started < 10
    listener.close()


def test_a_pack_past_the_fetch_limit_fails_the_sync_and_keeps_nothing(workspace, repo, tmp_path, settings):
    repo.commit({"docs/big.md": "# Big\n\n" + os.urandom(150_000).hex() + "\n"})  # hex of random bytes: no delta
    remote = tmp_path / "remote.git"
    repo.git("clone", "-q", "--bare", str(repo.path), str(remote))
    settings.GIT_SOURCE_MAX_FETCH_BYTES = 100_000
    source = source_add(workspace=workspace, name="big", kind="git", location=f"file://{remote}")
    with pytest.raises(SourceError, match="GIT_SOURCE_MAX_FETCH_BYTES"):
        source_sync(source_id=source.pk, enqueue=False)
    mirror = git_mirror_dir(source)
    assert not list((mirror / "objects" / "pack").glob("*.pack")) and not IndexingJob.objects.exists()
    shutil.rmtree(mirror, ignore_errors=True)


def test_a_blob_over_the_file_limit_is_never_read(source, repo, settings, monkeypatch):
    settings.INGEST_MAX_FILE_BYTES = 1000
    big = repo.git("rev-parse", "HEAD:docs/limits.md")
    read = []
    monkeypatch.setattr(rag.sources.git_sync, "blob_read", lambda repo, blob: read.append(blob) or b"# Page\n")
    source_sync(source_id=source.pk, enqueue=False)
    assert big not in read and len(read) == 2


def test_a_sync_queues_at_most_its_item_limit_and_the_next_sync_takes_the_rest(source, settings):
    settings.GIT_SOURCE_MAX_SYNC_ITEMS = 2
    first = sync_here(source.pk)
    source.refresh_from_db()
    assert first.items.count() == 2 and source.last_changes["left_for_next_sync"] == 1
    assert "1 file left for the next sync (GIT_SOURCE_MAX_SYNC_ITEMS: 2)" in changes_text(source.last_changes)
    second = sync_here(source.pk)
    source.refresh_from_db()
    assert second.items.count() == 1 and not source.last_changes["left_for_next_sync"]


def test_a_blob_size_comes_from_its_header_loose_packed_or_deltified(repo, tmp_path):
    text = "# Notes\n\n" + "line of notes\n" * 3000
    repo.commit({"docs/notes.md": text})
    repo.commit({"docs/notes.md": text + "one more line\n"})  # packed as a delta of the other after gc
    blobs = [repo.git("rev-parse", f"{rev}:docs/notes.md") for rev in ("HEAD~1", "HEAD")]
    blobs.append(repo.git("rev-parse", "HEAD:docs/guide.md"))
    expected = {blob: int(repo.git("cat-file", "-s", blob)) for blob in blobs}
    loose = Repo(str(repo.path))
    assert {blob: blob_size(loose, blob) for blob in blobs} == expected
    repo.git("gc", "-q", "--aggressive")
    packed = Repo(str(repo.path))
    assert not list((repo.path / ".git" / "objects").glob("??/*"))  # all packed now
    assert {blob: blob_size(packed, blob) for blob in blobs} == expected
    with pytest.raises(KeyError):
        blob_size(packed, "0" * 40)
