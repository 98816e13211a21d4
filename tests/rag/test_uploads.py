"""Browser uploads: file mtimes, folders, zips, and identity by content rather than by name."""

from __future__ import annotations

import io
import json
import struct
import zipfile
from datetime import UTC, datetime
from pathlib import Path

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from rag.jobs.run import job_item_run
from rag.models import Document, IndexingJob, IndexingJobItem
from rag.storage import stored_name
from rag.uploads import indexing_job_create, safe_upload_path

pytestmark = pytest.mark.django_db

NOTES = b"Operator notes\n\nThe gateway keeps its cache warm between restarts.\n"
OTHER = b"Other notes\n\nThe admin console listens on its own port.\n"
LAST_MODIFIED_MS = 1_700_000_000_000  # 2023-11-14 22:13:20 UTC


def _upload(client, *, files=(), folder=(), file_info=None):
    data = {"files": list(files), "folder": list(folder)}
    if file_info is not None:
        data["file_info"] = file_info if isinstance(file_info, str) else json.dumps(file_info)
    response = client.post("/documents/upload/", data)
    assert response.status_code == 302, response.content.decode()[:2000]
    return IndexingJob.objects.order_by("-pk").first()


def _run(job) -> dict[str, IndexingJobItem]:
    for item_id in job.items.filter(status=IndexingJobItem.Status.QUEUED).values_list("pk", flat=True):
        job_item_run(item_id=item_id)
    return {item.path: item for item in job.items.all()}


def _zip(*members: tuple[zipfile.ZipInfo | str, bytes], name: str = "bundle.zip") -> SimpleUploadedFile:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as bundle:
        for info, data in members:
            bundle.writestr(info, data)
    return SimpleUploadedFile(name, buffer.getvalue())


def test_last_modified_dates_the_file(logged_in_client, workspace):
    info = {"files": [{"name": "notes.txt", "lastModified": LAST_MODIFIED_MS}]}
    job = _upload(logged_in_client, files=[SimpleUploadedFile("notes.txt", NOTES)], file_info=info)
    _run(job)
    document = Document.objects.get(workspace=workspace, path="uploads/notes.txt")
    assert document.doc_date == datetime.fromtimestamp(LAST_MODIFIED_MS / 1000, tz=UTC)
    assert document.date_source == "mtime" and document.date_confidence == 1


def test_a_reindex_keeps_the_browser_mtime(logged_in_client, workspace):
    from rag.documents import documents_reindex

    info = {"files": [{"name": "notes.txt", "lastModified": LAST_MODIFIED_MS}]}
    _run(_upload(logged_in_client, files=[SimpleUploadedFile("notes.txt", NOTES)], file_info=info))
    document = Document.objects.get(workspace=workspace, path="uploads/notes.txt")
    _run(documents_reindex(documents=Document.objects.filter(pk=document.pk)))
    document.refresh_from_db()
    assert document.doc_date == datetime.fromtimestamp(LAST_MODIFIED_MS / 1000, tz=UTC)
    assert document.date_source == "mtime"


def test_without_last_modified_the_date_is_the_upload_and_says_so(logged_in_client, workspace):
    job = _upload(logged_in_client, files=[SimpleUploadedFile("notes.txt", NOTES)])
    assert job.items.get().mtime_is_upload_time
    _run(job)
    document = Document.objects.get(workspace=workspace)
    assert document.date_source == "upload_time" and document.date_confidence == 0
    day = document.doc_date.strftime("%Y-%m-%d")
    assert f"uploaded {day} (no date in the file)" in logged_in_client.get("/documents/").content.decode()
    assert "(no date in the file)" in logged_in_client.get(f"/documents/{document.pk}/").content.decode()


@pytest.mark.parametrize("file_info", [
    "{not json",
    "[1, 2]",
    {"files": "notes.txt"},
    {"files": [{"name": "notes.txt", "lastModified": "yesterday"}]},
    {"files": [{"name": "notes.txt", "lastModified": True}]},
    {"files": [{"name": "notes.txt", "lastModified": 10**400}]},
    {"files": [{"name": "notes.txt", "lastModified": -5}]},
    {"files": [{"name": "someone-else.txt", "lastModified": LAST_MODIFIED_MS}]},
])
def test_a_bad_report_from_the_browser_is_ignored(logged_in_client, workspace, file_info):
    item = _upload(logged_in_client, files=[SimpleUploadedFile("notes.txt", NOTES)], file_info=file_info).items.get()
    assert item.path == "uploads/notes.txt" and item.mtime_is_upload_time
    assert abs(item.file_mtime - item.job.created_at.timestamp()) < 60  # the upload's time, kept on the item


def test_a_folder_keeps_its_relative_paths_and_leaves_hidden_files_out(logged_in_client, workspace):
    folder = [SimpleUploadedFile("guide.txt", NOTES), SimpleUploadedFile("guide.txt", OTHER),
              SimpleUploadedFile("config.txt", b"hidden\n"), SimpleUploadedFile("x.txt", b"Escaped?\n\nNo.\n")]
    info = {"folder": [{"name": "docs/v1/guide.txt", "lastModified": LAST_MODIFIED_MS},
                       {"name": "docs/v2/guide.txt", "lastModified": LAST_MODIFIED_MS},
                       {"name": "docs/.git/config.txt", "lastModified": LAST_MODIFIED_MS},
                       {"name": "../../etc\\x.txt", "lastModified": LAST_MODIFIED_MS}]}
    job = _upload(logged_in_client, folder=folder, file_info=info)
    items = _run(job)
    assert sorted(items) == ["uploads/docs/v1/guide.txt", "uploads/docs/v2/guide.txt", "uploads/etc/x.txt"]
    assert all(item.status == "indexed" for item in items.values())
    assert "1 hidden file(s) left out" in job.description


def test_a_zip_keeps_member_paths_and_mtimes(logged_in_client, workspace):
    unix_time = struct.pack("<HHBi", 0x5455, 5, 1, 1_600_000_000)  # the "UT" extra field Info-ZIP writes
    dated = zipfile.ZipInfo("guide/intro.txt", date_time=(2024, 5, 6, 7, 8, 10))  # DOS times step by 2 s
    stamped = zipfile.ZipInfo("guide/more.txt", date_time=(2024, 5, 6, 7, 8, 10))
    stamped.extra = unix_time
    undated = zipfile.ZipInfo("guide/undated.txt", date_time=(1980, 1, 1, 0, 0, 0))
    archive = _zip((dated, NOTES), (stamped, OTHER), (undated, b"Undated\n\nText.\n"), ("guide/", b""),
                   ("__MACOSX/guide/._intro.txt", b"fork"), ("guide/.DS_Store", b"x"), ("guide/logo.gif", b"gif"))
    items = _run(_upload(logged_in_client, files=[archive]))
    assert sorted(path for path, item in items.items() if item.status != "skipped") == [
        "uploads/bundle/guide/intro.txt", "uploads/bundle/guide/more.txt", "uploads/bundle/guide/undated.txt"]
    intro = Document.objects.get(workspace=workspace, path="uploads/bundle/guide/intro.txt")
    assert intro.doc_date == datetime(2024, 5, 6, 7, 8, 10, tzinfo=UTC) and intro.date_source == "mtime"
    assert items["uploads/bundle/guide/more.txt"].file_mtime == 1_600_000_000
    assert items["uploads/bundle/guide/undated.txt"].mtime_is_upload_time


def test_zip_member_paths_are_sanitised(logged_in_client, workspace, settings):
    items = _run(_upload(logged_in_client, files=[_zip(("../evil.txt", NOTES), ("/abs/x.txt", OTHER))]))
    assert sorted(items) == ["uploads/bundle/abs/x.txt", "uploads/bundle/evil.txt"]
    for item in items.values():
        assert item.source_file.startswith("stored:uploads/") and ".." not in item.source_file
        assert (Path(settings.MEDIA_ROOT) / stored_name(item.source_file)).is_file()


def test_a_corrupt_zip_fails_alone(logged_in_client, workspace):
    broken = SimpleUploadedFile("broken.zip", b"PK\x03\x04 this is not an archive")
    items = _run(_upload(logged_in_client, files=[broken, SimpleUploadedFile("notes.txt", NOTES)]))
    assert items["uploads/broken.zip"].status == "failed"
    assert "not a readable zip archive" in items["uploads/broken.zip"].error
    assert items["uploads/notes.txt"].status == "indexed"


def test_zip_limits_fail_a_member_or_the_archive(logged_in_client, workspace, settings):
    settings.INGEST_MAX_FILE_BYTES = 100
    items = _run(_upload(logged_in_client, files=[_zip(("small.txt", NOTES), ("big.txt", b"word " * 100))]))
    assert items["uploads/bundle/small.txt"].status == "indexed"
    assert items["uploads/bundle/big.txt"].status == "failed" and "over the" in items["uploads/bundle/big.txt"].error

    settings.UPLOAD_ZIP_MAX_MEMBERS = 1
    items = _run(_upload(logged_in_client, files=[_zip(("a.txt", NOTES), ("b.txt", OTHER), name="many.zip")]))
    assert list(items) == ["uploads/many.zip"] and "archive too large" in items["uploads/many.zip"].error


def test_same_name_different_content_is_a_second_document(logged_in_client, workspace):
    _run(_upload(logged_in_client, files=[SimpleUploadedFile("guide.txt", NOTES)]))
    items = _run(_upload(logged_in_client, files=[SimpleUploadedFile("guide.txt", OTHER)]))
    assert list(items) == ["uploads/guide (2).txt"] and items["uploads/guide (2).txt"].status == "indexed"
    first = Document.objects.get(workspace=workspace, path="uploads/guide.txt")
    assert first.title == "Operator notes" and Document.objects.filter(workspace=workspace).count() == 2


def test_same_content_different_name_is_recognised_not_indexed_twice(logged_in_client, workspace):
    _run(_upload(logged_in_client, files=[SimpleUploadedFile("notes.txt", NOTES)]))
    original = Document.objects.get(workspace=workspace)
    job = _upload(logged_in_client, files=[SimpleUploadedFile("copy of notes.txt", NOTES)])
    item = job.items.get()
    assert item.status == "unchanged" and item.document_id == original.pk
    assert item.error == "identical to notes.txt" and job.finished_at is not None
    assert Document.objects.filter(workspace=workspace).count() == 1
    assert "identical to notes.txt" in logged_in_client.get(f"/jobs/{job.pk}/").content.decode()


def test_an_upload_identical_to_a_folder_document_names_it_by_its_shown_path(logged_in_client, workspace, tmp_path):
    """Issue 49: the job page said "identical to /srv/share/plan.md" to any member."""
    (tmp_path / "share").mkdir()
    (tmp_path / "share" / "plan.md").write_bytes(NOTES)
    _run(indexing_job_create(workspace=workspace, paths=[tmp_path / "share"], enqueue=False))
    job = _upload(logged_in_client, files=[SimpleUploadedFile("copy.md", NOTES)])
    assert job.items.get().error == "identical to plan.md"
    assert str(tmp_path) not in logged_in_client.get(f"/jobs/{job.pk}/").content.decode()


def test_an_empty_file_fails_alone_with_its_name(logged_in_client, workspace):
    files = [SimpleUploadedFile("empty.txt", b""), SimpleUploadedFile("notes.txt", NOTES),
             SimpleUploadedFile("other.txt", OTHER)]
    items = _run(_upload(logged_in_client, files=files))
    assert items["uploads/empty.txt"].status == "failed" and items["uploads/empty.txt"].error == "empty file"
    assert items["uploads/notes.txt"].status == items["uploads/other.txt"].status == "indexed"


def test_upload_page_offers_a_folder_and_the_script(logged_in_client, workspace):
    page = logged_in_client.get("/documents/upload/").content.decode()
    assert "webkitdirectory" in page and "js/upload.js" in page and 'name="file_info"' in page


@pytest.mark.parametrize(("name", "safe"), [
    ("guide.md", "guide.md"),
    ("../../etc/passwd", "etc/passwd"),
    ("/abs/path/x.md", "abs/path/x.md"),
    ("a\\b\\c.md", "a/b/c.md"),
    ("docs/./v1/../x.md", "docs/v1/x.md"),
    ("..", "upload"),
    ("na\x00me;rm.md", "na_me_rm.md"),
])
def test_safe_upload_path(name, safe):
    assert safe_upload_path(name) == safe


def test_zip_members_of_unsupported_types_are_counted_and_named(logged_in_client, workspace):
    archive = _zip(("guide/intro.txt", NOTES), ("tools/setup.exe", b"MZ"), ("data/dump.bin", b"\x00\x01"),
                   ("guide/.DS_Store", b"x"))
    job = _upload(logged_in_client, files=[archive])
    items = _run(job)
    assert items["uploads/bundle/guide/intro.txt"].status == "indexed"
    skipped = {path: item.error for path, item in items.items() if item.status == "skipped"}
    assert skipped == {"uploads/bundle/tools/setup.exe": "unsupported file type .exe",
                       "uploads/bundle/data/dump.bin": "unsupported file type .bin"}  # hidden files stay out
    page = logged_in_client.get(f"/jobs/{job.pk}/").content.decode()
    assert "2 skipped" in page and "tools/setup.exe" in page and "unsupported file type .bin" in page


def test_a_zip_of_unsupported_files_only_says_so_per_file(logged_in_client, workspace):
    items = _run(_upload(logged_in_client, files=[_zip(("setup.exe", b"MZ"), name="tools.zip")]))
    assert {path: (item.status, item.error) for path, item in items.items()} == {
        "uploads/tools/setup.exe": ("skipped", "unsupported file type .exe")}
