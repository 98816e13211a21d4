"""`manage.py source add|sync|list|remove`: the command-line contract for sources."""

from __future__ import annotations

import io
import json
import time

import pytest
from django.conf import settings as django_settings
from django.core.management import CommandError, call_command

from rag.models import Document, Source
from tests.rag.source_support import GitRepo


def _run(*args: str) -> str:
    out = io.StringIO()
    call_command(*args, stdout=out, stderr=io.StringIO())
    return out.getvalue()


def test_add_sync_list_remove_a_folder(workspace, tmp_path):
    (tmp_path / "share").mkdir()
    (tmp_path / "share" / "guide.md").write_text("# Guide\n\nThe gateway listens on port 8443.\n")
    (tmp_path / "share" / "skip.md").write_text("# Skip\n\nLeft out by the exclude glob.\n")
    out = _run("source", "add", "share", "--workspace", workspace.slug, "--folder", str(tmp_path / "share"),
               "--exclude", "skip*", "--every", "15")
    assert "added folder source share" in out and "every 15 min" in out

    out = _run("source", "sync", "share", "--workspace", workspace.slug, "--sync", "--verbosity", "0")
    assert "1 file(s): 1 indexed" in out

    listed = json.loads(_run("source", "list", "--workspace", workspace.slug, "--json"))
    assert [(row["name"], row["kind"], row["every_minutes"], row["exclude"]) for row in listed] == \
        [("share", "folder", 15, ["skip*"])]
    assert listed[0]["last_sync"].startswith("job ") and listed[0]["last_job_finished"] and not listed[0]["paused"]
    assert "share\tfolder" in _run("source", "list", "--workspace", workspace.slug)

    out = _run("source", "remove", "share", "--workspace", workspace.slug, "--archive-documents")
    assert "1 document(s) archived" in out
    assert not Source.objects.exists() and Document.objects.get().archived


def test_git_source_from_the_command_line(workspace, tmp_path):
    repo = GitRepo(tmp_path / "repo")
    repo.commit({"docs/index.md": "# Docs\n\nVersion one of the handbook.\n"})
    repo.tag("1.0")
    _run("source", "add", "handbook", "--workspace", workspace.slug, "--git", str(repo.path), "--tags", "1.*",
         "--every", "0")
    out = _run("source", "sync", "handbook", "--workspace", workspace.slug, "--sync", "--verbosity", "0")
    assert "tags read 1.0; branch moved" in out and "1 indexed" in out
    row = json.loads(_run("source", "list", "--workspace", workspace.slug, "--json"))[0]
    assert row["tags_read"] == ["1.0"] and row["schedule"] == "on demand"
    assert Document.objects.get().version_label == "1.0"


def test_errors_are_one_clear_line(workspace, tmp_path):
    with pytest.raises(CommandError, match="no such folder"):
        _run("source", "add", "x", "--workspace", workspace.slug, "--folder", str(tmp_path / "missing"))
    with pytest.raises(CommandError, match="no source 'x'"):
        _run("source", "sync", "x", "--workspace", workspace.slug)
    with pytest.raises(CommandError, match="no workspace"):
        _run("source", "list", "--workspace", "nope")
    (tmp_path / "gone").mkdir()
    _run("source", "add", "gone", "--workspace", workspace.slug, "--folder", str(tmp_path / "gone"))
    (tmp_path / "gone").rmdir()
    with pytest.raises(CommandError, match="source gone: the folder .* is gone"):
        _run("source", "sync", "gone", "--workspace", workspace.slug, "--sync")
    assert "paused: the folder" in _run("source", "list", "--workspace", workspace.slug)


@pytest.mark.worker
def test_a_git_sync_is_an_indexing_job_that_real_workers_run(start_worker, tmp_path):
    from tests.factories import UserFactory, WorkspaceFactory

    workspace = WorkspaceFactory(members=[UserFactory()])
    repo = GitRepo(tmp_path / "repo")
    repo.commit({"docs/index.md": "# Docs\n\nThe first release of the handbook.\n",
                 "docs/setup.md": "# Setup\n\nInstall the agent on every node.\n"})
    repo.tag("2.0")
    out = _run("source", "add", "handbook", "--workspace", workspace.slug, "--git", str(repo.path), "--every", "0")
    assert "its first sync is queued" in out  # on demand, and read once on adding all the same (issue 54)
    # The worker runs the first sync: it may read the suite's folders (tests/conftest.py's `source_roots`).
    start_worker(queues="ingest,merge,default",
                 extra_env={"SOURCE_FOLDER_ROOTS": ",".join(django_settings.SOURCE_FOLDER_ROOTS)})
    source = Source.objects.get(workspace=workspace, name="handbook")
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and not (source.last_job and source.last_job.finished_at):
        time.sleep(0.5)
        source.refresh_from_db()
    assert source.last_job and source.last_job.finished_at and source.last_job.created_by is None  # the worker's
    assert set(Document.objects.filter(workspace=workspace).values_list("version_label", "date_source")) == \
        {("2.0", "git_commit")}
    repo.commit({"docs/upgrade.md": "# Upgrade\n\nStop the agent before you upgrade it.\n"})
    out = _run("source", "sync", "handbook", "--workspace", workspace.slug, "--timeout", "120", "--verbosity", "0")
    assert "1 indexed" in out  # a sync asked for runs on a worker too
