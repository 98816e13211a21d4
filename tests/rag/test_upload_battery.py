"""Fault test 4 (issue 13): the upload battery, through the real view and the real pipeline.

Same name with different content, same content under different names, bad files among good
ones, and 200 files in one request: every file ends as exactly one outcome, by name, and
nothing is replaced or indexed twice.
"""

from __future__ import annotations

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from rag.jobs.run import job_item_run
from rag.models import Document, IndexingJob, IndexingJobItem

pytestmark = pytest.mark.django_db


def _note(number: int, version: str = "a") -> bytes:
    return f"Note {number}\n\nThe gateway note number {number}, revision {version}, says nothing else.\n".encode()


def _upload(client, files: list[SimpleUploadedFile]) -> IndexingJob:
    response = client.post("/documents/upload/", {"files": files})
    assert response.status_code == 302, response.content.decode()[:500]
    job = IndexingJob.objects.order_by("-pk").first()
    for item_id in job.items.filter(status=IndexingJobItem.Status.QUEUED).values_list("pk", flat=True):
        job_item_run(item_id=item_id)
    job.refresh_from_db()
    return job


def test_one_batch_with_every_awkward_case_ends_each_file_once_by_name(logged_in_client, workspace):
    first = _upload(logged_in_client, [SimpleUploadedFile("guide.txt", _note(1))])
    assert first.items.get().status == "indexed"
    files = [
        SimpleUploadedFile("guide.txt", _note(1, "b")),  # an earlier upload's name, other content
        SimpleUploadedFile("guide.txt", _note(1, "c")),  # ... twice in one batch
        SimpleUploadedFile("copy.txt", _note(1)),  # the earlier upload's content, another name
        SimpleUploadedFile("twin-1.txt", _note(2)),  # one content under two names in one batch
        SimpleUploadedFile("twin-2.txt", _note(2)),
        SimpleUploadedFile("empty.txt", b""),  # an empty file among good ones
        SimpleUploadedFile("broken.pdf", b"this is no PDF"),  # an unreadable one
        SimpleUploadedFile("fine.txt", _note(3)),
    ]
    job = _upload(logged_in_client, files)
    outcomes = {item.path: (item.status, item.error) for item in job.items.all()}
    assert outcomes == {
        "uploads/guide (2).txt": ("indexed", ""),
        "uploads/guide (3).txt": ("indexed", ""),
        "uploads/copy.txt": ("unchanged", "identical to guide.txt"),  # the path a member is shown
        "uploads/twin-1.txt": ("indexed", ""),
        "uploads/twin-2.txt": ("unchanged", "identical to uploads/twin-1.txt in this upload"),
        "uploads/empty.txt": ("failed", "empty file"),
        "uploads/broken.pdf": ("failed", outcomes["uploads/broken.pdf"][1]),
        "uploads/fine.txt": ("indexed", ""),
    }
    assert "not a PDF at all" in outcomes["uploads/broken.pdf"][1]
    assert job.finished_at is not None
    # The first guide.txt is untouched; nothing indexed twice; the failures left no half documents.
    assert Document.objects.get(workspace=workspace, path="uploads/guide.txt").content_hash == \
        first.items.get().document.content_hash
    indexed = Document.objects.filter(workspace=workspace, status=Document.Status.INDEXED)
    assert sorted(indexed.values_list("path", flat=True)) == [
        "uploads/fine.txt", "uploads/guide (2).txt", "uploads/guide (3).txt", "uploads/guide.txt",
        "uploads/twin-1.txt"]
    page = logged_in_client.get(f"/jobs/{job.pk}/").content.decode()
    for name in ("empty.txt", "broken.pdf", "guide (3).txt", "identical to uploads/twin-1.txt in this upload"):
        assert name in page, name


def test_two_hundred_files_at_once_are_each_indexed_once_and_again_recognised(logged_in_client, workspace):
    files = [SimpleUploadedFile(f"note-{number:03}.txt", _note(number)) for number in range(200)]
    job = _upload(logged_in_client, files)
    assert job.items.count() == 200 and set(job.items.values_list("status", flat=True)) == {"indexed"}
    assert Document.objects.filter(workspace=workspace).count() == 200
    assert job.finished_at is not None
    assert "200 of 200" in logged_in_client.get(f"/jobs/{job.pk}/").content.decode()
    again = _upload(logged_in_client, [SimpleUploadedFile(f"note-{number:03}.txt", _note(number))
                                       for number in range(200)])
    assert set(again.items.values_list("status", flat=True)) == {"unchanged"}
    assert Document.objects.filter(workspace=workspace).count() == 200
