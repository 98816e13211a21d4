"""Folder sources: additions, edits, mtime-only changes, deletions, renames, globs, a folder that vanishes."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from django.core.management import call_command

from rag.jobs.run import job_item_run
from rag.models import Document, IndexingJob, IndexingJobItem, Source
from rag.progress import job_summary
from rag.sources.services import SourceError, source_add, source_sync
from rag.uploads import job_retry_create
from tests.rag.source_support import encoded, sync_here


def _write(folder, name: str, text: str) -> None:
    path = folder / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


@pytest.fixture
def folder(tmp_path):
    root = tmp_path / "share"
    _write(root, "guide.md", "# Guide\n\nThe gateway listens on port 8443.\n")
    _write(root, "ops/runbook.md", "# Runbook\n\nRestart the gateway with systemctl restart gateway.\n")
    _write(root, "ops/notes.md",
           "# Capacity notes\n\nCapacity planning notes: two gateway nodes per region, each with eight cores.\n")
    _write(root, "drafts/wip.md", "# Draft\n\nNot ready.\n")
    return root


@pytest.fixture
def source(workspace, folder):
    return source_add(workspace=workspace, name="share", kind=Source.Kind.FOLDER, location=str(folder),
                      exclude=["drafts/*"])


def _active_paths(workspace) -> set[str]:
    return set(Document.objects.filter(workspace=workspace, archived=False).values_list("display_path", flat=True))


def test_first_sync_indexes_what_the_globs_take(source, workspace):
    job = sync_here(source.pk)
    assert _active_paths(workspace) == {"guide.md", "ops/runbook.md", "ops/notes.md"}
    assert job.sync_source_id == source.pk and job.source == "sync"
    source.refresh_from_db()
    assert source.last_job_id == job.pk and source.last_sync_at and not source.last_error


def test_unchanged_and_touched_files_encode_nothing_edits_encode_only_themselves(source, workspace, folder):
    sync_here(source.pk)
    again = sync_here(source.pk)
    assert not again.items.exists() and again.unchanged_count == 3  # counted on the job, no item each
    assert encoded(again) == 0 and "3 unchanged" in job_summary(job=again)

    os.utime(folder / "guide.md", (1_000_000_000, 1_000_000_000))  # mtime only
    touched = sync_here(source.pk)
    assert encoded(touched) == 0
    assert not touched.items.exists() and touched.unchanged_count == 3

    _write(folder, "ops/runbook.md", "# Runbook\n\nRestart the gateway with `gatewayctl restart` now.\n")
    edited = sync_here(source.pk)
    reindexed = edited.items.filter(status=IndexingJobItem.Status.INDEXED)
    assert list(reindexed.values_list("display_path", flat=True)) == ["ops/runbook.md"]
    assert encoded(edited) >= 1


def test_a_rename_keeps_its_document_and_encodes_nothing(source, workspace, folder):
    sync_here(source.pk)
    before = Document.objects.get(workspace=workspace, display_path="ops/notes.md")
    (folder / "ops/notes.md").rename(folder / "capacity.md")
    job = sync_here(source.pk)
    after = Document.objects.get(pk=before.pk)
    assert after.display_path == "capacity.md" and not after.archived
    assert encoded(job) == 0 and job.archived_count == 0
    source.refresh_from_db()
    assert source.last_changes["renamed"] == 1


def test_deleted_and_newly_excluded_files_are_archived(source, workspace, folder):
    sync_here(source.pk)
    (folder / "guide.md").unlink()
    Source.objects.filter(pk=source.pk).update(exclude=["drafts/*", "ops/notes*"])
    job = sync_here(source.pk)
    assert job.archived_count == 2
    assert _active_paths(workspace) == {"ops/runbook.md"}


def test_a_vanished_folder_pauses_the_source_and_archives_nothing(source, workspace, folder, tmp_path):
    sync_here(source.pk)
    shutil.move(folder, tmp_path / "elsewhere")
    with pytest.raises(SourceError, match="gone"):
        source_sync(source_id=source.pk)
    source.refresh_from_db()
    assert source.paused and "nothing archived" in source.paused_reason
    assert len(_active_paths(workspace)) == 3

    shutil.move(tmp_path / "elsewhere", folder)
    sync_here(source.pk)
    source.refresh_from_db()
    assert not source.paused and len(_active_paths(workspace)) == 3


def test_an_emptied_mount_point_pauses_instead_of_archiving(source, workspace, folder):
    sync_here(source.pk)
    shutil.rmtree(folder)
    folder.mkdir()  # what an unmounted share looks like
    with pytest.raises(SourceError, match="empty"):
        source_sync(source_id=source.pk)
    assert len(_active_paths(workspace)) == 3


def test_a_folder_vanishing_mid_sync_fails_its_files_with_a_reason_and_the_next_sync_completes(
        source, workspace, folder, tmp_path):
    from rag.jobs.run import job_item_run

    sync_here(source.pk)
    for name in ("guide.md", "ops/runbook.md"):
        _write(folder, name, (folder / name).read_text() + "\nA new paragraph about TLS certificates.\n")
    job = source_sync(source_id=source.pk, enqueue=False)
    shutil.move(folder, tmp_path / "away")  # gone between the listing and the workers
    for item_id in job.items.filter(status=IndexingJobItem.Status.QUEUED).values_list("pk", flat=True):
        job_item_run(item_id=item_id, merge_inline=True)
    failed = job.items.filter(status=IndexingJobItem.Status.FAILED)
    assert failed.count() == 2 and all("cannot read the file" in item.error for item in failed)
    guide = Document.objects.get(workspace=workspace, display_path="guide.md")
    assert guide.chunk_count > 0 and not guide.archived  # the earlier version still answers

    shutil.move(tmp_path / "away", folder)
    again = sync_here(source.pk)
    assert again.items.filter(status=IndexingJobItem.Status.INDEXED).count() == 2
    assert not again.items.filter(status=IndexingJobItem.Status.FAILED).exists()
    assert "TLS" in Document.objects.get(pk=guide.pk).chunks.first().text


def test_a_second_sync_waits_for_the_first(source):
    source_sync(source_id=source.pk, enqueue=False)
    with pytest.raises(SourceError, match="still syncing"):
        source_sync(source_id=source.pk, enqueue=False)


def test_bad_input_is_refused_with_a_reason(workspace, folder):
    with pytest.raises(SourceError, match="no such folder"):
        source_add(workspace=workspace, name="x", kind="folder", location=str(folder / "missing"))
    with pytest.raises(SourceError, match="bad source name"):
        source_add(workspace=workspace, name="a b", kind="folder", location=str(folder))
    with pytest.raises(SourceError, match="password"):
        source_add(workspace=workspace, name="g", kind="git", location="https://bob:secret@example.com/docs.git")
    assert not Source.objects.exists()


SECRET = "Kestrel-4411 is the database password"


@pytest.fixture
def outside(tmp_path):
    """What the worker may read but no source should: a file and a folder beside the share."""
    (tmp_path / "private").mkdir()
    (tmp_path / "private" / "secret.md").write_text(f"# Secret\n\n{SECRET}.\n")
    return tmp_path / "private"


def _quoted_anywhere(workspace, text: str) -> bool:
    return any(text in chunk_text for chunk_text in Document.objects.filter(workspace=workspace)
               .values_list("chunks__text", flat=True) if chunk_text)


def test_links_are_never_followed_and_the_job_names_each_one(source, workspace, folder, outside, settings):
    uploads = Path(settings.MEDIA_ROOT) / "uploads" / "other-workspace"
    uploads.mkdir(parents=True, exist_ok=True)
    (uploads / "their-upload.md").write_text(f"# Theirs\n\n{SECRET} too.\n")
    (folder / "notes.md").symlink_to(outside / "secret.md")  # a file outside
    (folder / "linked").symlink_to(outside)  # a folder outside
    (folder / "theirs.md").symlink_to(uploads / "their-upload.md")  # another workspace's stored copy
    (folder / "guide-again.md").symlink_to(folder / "guide.md")  # inside: read under its own name anyway
    (folder / "ops" / "up.md").symlink_to("../../private/secret.md")  # relative, through ..

    job = sync_here(source.pk)
    skipped = dict(job.items.filter(status=IndexingJobItem.Status.SKIPPED).values_list("display_path", "error"))
    assert set(skipped) == {"notes.md", "linked", "theirs.md", "guide-again.md", "ops/up.md"}
    assert all("symbolic link" in reason for reason in skipped.values())
    assert not _quoted_anywhere(workspace, "Kestrel-4411")
    assert _active_paths(workspace) == {"guide.md", "ops/runbook.md", "ops/notes.md"}
    assert (uploads / "their-upload.md").is_file()  # never taken for a copy of ours, so never deleted

    retried = job_retry_create(job=job)  # a retry reads where the item points: still not through a link
    for item_id in retried.items.values_list("pk", flat=True):
        job_item_run(item_id=item_id, merge_inline=True)
    assert not _quoted_anywhere(workspace, "Kestrel-4411")
    assert set(retried.items.values_list("status", flat=True)) <= {IndexingJobItem.Status.FAILED,
                                                                    IndexingJobItem.Status.SKIPPED}


def test_a_file_swapped_for_a_link_after_the_walk_is_not_read(source, workspace, folder, outside):
    job = source_sync(source_id=source.pk, enqueue=False)
    (folder / "guide.md").unlink()
    (folder / "guide.md").symlink_to(outside / "secret.md")
    for item_id in job.items.filter(status=IndexingJobItem.Status.QUEUED).values_list("pk", flat=True):
        job_item_run(item_id=item_id, merge_inline=True)
    failed = job.items.get(display_path="guide.md")
    assert failed.status == IndexingJobItem.Status.FAILED and "symbolic link" in failed.error
    assert not _quoted_anywhere(workspace, "Kestrel-4411")


def test_a_hard_link_is_the_file_itself_and_is_read(source, workspace, folder, outside):
    """The chosen lesser case: a hard link cannot be told from the folder's own file; protected_hardlinks keeps
    anyone from linking a file they could not already read and write."""
    os.link(outside / "secret.md", folder / "hard.md")
    sync_here(source.pk)
    assert "hard.md" in _active_paths(workspace)


def test_ingest_of_a_folder_skips_its_links_too(workspace, folder, outside):
    (folder / "notes.md").symlink_to(outside / "secret.md")
    call_command("ingest", str(folder / "ops" / ".."), "--workspace", workspace.slug, "--sync", verbosity=0)
    job = IndexingJob.objects.get(workspace=workspace)
    assert job.items.get(display_path="notes.md").status == IndexingJobItem.Status.SKIPPED
    assert not _quoted_anywhere(workspace, "Kestrel-4411")
