"""rag.storage against a real S3-compatible server (moto's server mode on loopback) and the local default."""

from __future__ import annotations

import os
from io import StringIO
from pathlib import Path

import pytest
from django.core.files.storage import storages
from django.core.management import call_command

from config.file_storage import file_storage_config
from rag.models import IndexingJob, IndexingJobItem
from rag.storage import (
    StorageUnavailable,
    source_read,
    stored_copies_delete,
    stored_copy_save,
    stored_name,
)
from rag.uploads import workspace_storage_used
from devkit.machines import BUCKET, S3Server

pytestmark = pytest.mark.django_db


@pytest.fixture(scope="module")
def s3_server():
    server = S3Server(prefix="unit")
    server.start()
    yield server
    server.stop()


def test_the_s3_server_leaves_no_credentials_behind(monkeypatch) -> None:
    monkeypatch.delenv("AWS_ACCESS_KEY_ID", raising=False)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "the user's own")
    server = S3Server(prefix="env")
    server.start()
    assert os.environ["AWS_ACCESS_KEY_ID"] == "docent-test-key"
    server.stop()

    assert "AWS_ACCESS_KEY_ID" not in os.environ and os.environ["AWS_SECRET_ACCESS_KEY"] == "the user's own"


@pytest.fixture
def s3_storage(settings, s3_server):
    """The default storage is the bucket, as STORAGE_URL=s3://docent-test/unit makes it."""
    settings.STORAGES = {**settings.STORAGES, "default": file_storage_config(
        f"s3://{BUCKET}/unit", endpoint=s3_server.endpoint, addressing_style="path")}
    for key in s3_server.keys():
        s3_server.client().delete_object(Bucket=BUCKET, Key=key)
    return s3_server


def _item(workspace, source_file: str, *, status: str = IndexingJobItem.Status.INDEXED, stored_bytes: int = 0,
          document=None) -> IndexingJobItem:
    job = IndexingJob.objects.create(workspace=workspace, source=IndexingJob.Source.UPLOAD)
    return IndexingJobItem.objects.create(job=job, path="uploads/a.md", source_file=source_file, status=status,
                                          stored_bytes=stored_bytes, document=document)


def test_storage_url_selects_s3_and_refuses_what_it_cannot_read():
    assert file_storage_config("")["BACKEND"].endswith("FileSystemStorage")
    options = file_storage_config("s3://docs/tenant-a/")["OPTIONS"]
    assert (options["bucket_name"], options["location"]) == ("docs", "tenant-a")
    assert not any("secret" in key or "access_key" in key for key in options)  # credentials: boto3's chain only
    with pytest.raises(Exception, match="s3://bucket/prefix"):
        file_storage_config("ftp://docs/x")


def test_a_copy_is_stored_in_the_bucket_and_read_back(s3_storage):
    copy = stored_copy_save(iter([b"# Notes\n\n", b"The gateway restarts at night.\n"]), folder="uploads/ws/batch",
                            file_name="sub/notes.md")
    name = stored_name(copy.source_file)
    assert copy.source_file.startswith("stored:uploads/ws/batch/") and name.endswith("-notes.md")
    assert s3_storage.keys() == [f"unit/{name}"] and copy.size == 40
    read = source_read(copy.source_file, max_bytes=1_000)
    assert read.data == b"# Notes\n\nThe gateway restarts at night.\n" and read.size == 40
    assert source_read(copy.source_file, max_bytes=10).data is None  # over the limit: not read
    with pytest.raises(OSError):
        source_read("stored:uploads/ws/batch/missing.md", max_bytes=1_000)


def test_a_limit_passed_midway_stores_nothing(s3_storage):
    def pieces():
        yield b"first"
        raise ValueError("over the limit")

    with pytest.raises(ValueError):
        stored_copy_save(pieces(), folder="uploads/ws/batch", file_name="big.txt")
    assert s3_storage.keys() == []


def test_an_unreachable_store_is_a_transient_error_not_a_missing_file(settings, s3_storage):
    copy = stored_copy_save(iter([b"text"]), folder="uploads/ws/b", file_name="a.md")
    settings.STORAGES = {**settings.STORAGES, "default": file_storage_config(
        f"s3://{BUCKET}/unit", endpoint="http://127.0.0.1:9", addressing_style="path")}  # nothing listens there
    with pytest.raises(StorageUnavailable):
        source_read(copy.source_file, max_bytes=1_000)


def test_unneeded_copies_are_deleted_in_one_batch_and_needed_ones_kept(s3_storage, workspace,
                                                                     django_assert_max_num_queries):
    copies = [stored_copy_save(iter([b"x" * 10]), folder="uploads/ws/b", file_name=f"{n}.md") for n in range(5)]
    items = [_item(workspace, copy.source_file, status=IndexingJobItem.Status.UNCHANGED, stored_bytes=10)
             for copy in copies]
    _item(workspace, copies[0].source_file, status=IndexingJobItem.Status.QUEUED)  # a retry will read it
    with django_assert_max_num_queries(2):  # what is needed, then the sizes: not a query per copy
        assert stored_copies_delete([copy.source_file for copy in copies] + ["/home/someone/own.md"]) == 4
    assert s3_storage.keys() == [f"unit/{stored_name(copies[0].source_file)}"]
    assert sorted(IndexingJobItem.objects.filter(pk__in=[i.pk for i in items]).values_list("stored_bytes", flat=True)
                  ) == [0, 0, 0, 0, 10]


def test_workspace_usage_is_one_sum_counting_each_copy_once(workspace, django_assert_num_queries):
    _item(workspace, "stored:uploads/ws/b/one.md", stored_bytes=1_000)
    _item(workspace, "stored:uploads/ws/b/one.md", stored_bytes=1_000)  # its retry: the same copy
    _item(workspace, "stored:uploads/ws/b/two.md", stored_bytes=500)
    _item(workspace, "stored:uploads/ws/b/gone.md", stored_bytes=0)  # deleted
    with django_assert_num_queries(1):
        assert workspace_storage_used(workspace=workspace) == 1_500


def test_storage_migrate_copies_local_copies_once_and_points_the_items_at_them(s3_storage, workspace, settings,
                                                                               tmp_path):
    settings.MEDIA_ROOT = str(tmp_path / "media")
    local = Path(settings.MEDIA_ROOT) / "uploads" / "ws" / "batch" / "abc-notes.md"
    local.parent.mkdir(parents=True)
    local.write_bytes(b"# Notes\n\nKept on the web machine before issue 27.\n")
    item = _item(workspace, str(local), stored_bytes=local.stat().st_size)
    own = _item(workspace, "/home/someone/notes.md")  # a user's own file: never rewritten

    first, second = StringIO(), StringIO()
    call_command("storage", "migrate", stdout=first)
    call_command("storage", "migrate", stdout=second)
    assert "1 copied" in first.getvalue() and "1 job item(s) pointed at the storage" in first.getvalue()
    assert "0 copied, 1 already there, 0 job item(s)" in second.getvalue()  # idempotent
    item.refresh_from_db()
    own.refresh_from_db()
    assert item.source_file == "stored:uploads/ws/batch/abc-notes.md" and own.source_file == "/home/someone/notes.md"
    assert source_read(item.source_file, max_bytes=1_000).data == local.read_bytes()
    assert storages["default"].exists("uploads/ws/batch/abc-notes.md")
