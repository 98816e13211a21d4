"""The merge that follows indexing (rag.jobs.merging): what jobs indexed is merged in batches, none left, none twice."""

from __future__ import annotations

import pytest
from django.db import connections

from rag.jobs import merging
from rag.jobs.merging import workspace_indexed_merge
from rag.jobs.run import job_item_run
from rag.models import CanonicalRecord, Document, IndexingJobItem
from rag.uploads import indexing_job_create
from tests.rag.factories import DocumentFactory

pytestmark = pytest.mark.django_db

Status = IndexingJobItem.Status
SECTION = ("The gateway listens on port {port} and forwards each request to the upstream pool; a request that "
           "waits longer than thirty seconds is answered with a timeout and logged with its request id.")


@pytest.fixture
def indexed(workspace, tmp_path, monkeypatch) -> list[int]:
    """Five indexed files, near-duplicates of one another, whose merge nobody ran (its message is recorded)."""
    for number in range(5):
        (tmp_path / f"gateway-{number}.md").write_text(f"# Gateway {number}\n\n{SECTION.format(port=8443 + number)}\n")
    job = indexing_job_create(workspace=workspace, paths=[tmp_path], enqueue=False)
    for item_id in job.items.order_by("pk").values_list("pk", flat=True):
        assert job_item_run(item_id=item_id) == "indexed"  # its merge waits for a commit that never comes
    return list(job.items.order_by("pk").values_list("document_id", flat=True))


@pytest.fixture
def sent(monkeypatch) -> list[int]:
    sent: list[int] = []
    monkeypatch.setattr(merging, "indexed_merge_send", sent.append)
    return sent


def _unmerged(workspace) -> int:
    return IndexingJobItem.objects.filter(job__workspace=workspace, status=Status.INDEXED, merged_at__isnull=True).count()


def test_an_indexed_item_sends_the_merge_of_its_workspace_once_committed(workspace, tmp_path, sent,
                                                                          django_capture_on_commit_callbacks):
    (tmp_path / "guide.md").write_text("# Guide\n\nThe gateway listens on port 8443.\n")
    job = indexing_job_create(workspace=workspace, paths=[tmp_path], enqueue=False)
    with django_capture_on_commit_callbacks(execute=True):
        assert job_item_run(item_id=job.items.get().pk) == "indexed"
    assert sent == [workspace.pk]


def test_what_jobs_indexed_is_merged_in_batches_until_none_is_left(workspace, indexed, sent, settings, monkeypatch):
    settings.MERGE_BATCH_DOCUMENTS = 2
    batches: list[list[int]] = []
    settle = merging.documents_merge_settle
    monkeypatch.setattr(merging, "documents_merge_settle",
                        lambda *, document_ids: batches.append(document_ids) or settle(document_ids=document_ids))

    workspace_indexed_merge(workspace_id=workspace.pk)

    assert batches == [indexed[:2], indexed[2:4], indexed[4:]]  # the first indexed first
    assert _unmerged(workspace) == 0 and sent == []
    assert CanonicalRecord.objects.filter(workspace=workspace).exists()  # merged for real
    assert workspace_indexed_merge(workspace_id=workspace.pk).chunks == 0  # a message behind it finds nothing left


def test_a_run_merges_a_bounded_number_of_batches_and_queues_the_rest(workspace, indexed, sent, settings,
                                                                       monkeypatch):
    settings.MERGE_BATCH_DOCUMENTS = 2
    monkeypatch.setattr(merging, "_BATCHES_PER_RUN", 1)
    workspace_indexed_merge(workspace_id=workspace.pk)
    assert _unmerged(workspace) == 3 and sent == [workspace.pk]


def test_a_second_merger_of_the_workspace_leaves_the_work_to_the_first(workspace, indexed, sent):
    other = connections.create_connection("default")  # another worker process's session
    key = [merging._MERGER_NAMESPACE, workspace.pk]
    try:
        with other.cursor() as cursor:
            cursor.execute("SELECT pg_try_advisory_lock(%s, %s)", key)
            assert cursor.fetchone()[0]
            assert workspace_indexed_merge(workspace_id=workspace.pk).chunks == 0
            assert _unmerged(workspace) == 5 and sent == []  # the first one takes them, and looks again as it ends
            cursor.execute("SELECT pg_advisory_unlock(%s, %s)", key)  # it is done
    finally:
        other.close()
    workspace_indexed_merge(workspace_id=workspace.pk)
    assert _unmerged(workspace) == 0


def test_a_batch_that_fails_is_merged_one_document_at_a_time(workspace, indexed, sent, monkeypatch, caplog):
    merge = merging.documents_merge

    def fragile(*, document_ids):
        if len(document_ids) > 1 or document_ids == indexed[1:2]:
            raise ValueError("a bug")
        return merge(document_ids=document_ids)

    monkeypatch.setattr(merging, "documents_merge", fragile)
    workspace_indexed_merge(workspace_id=workspace.pk)
    assert _unmerged(workspace) == 0 and sent == []  # the one that fails alone gave up: merge_duplicates catches up
    assert [record.message for record in caplog.records if record.levelname == "ERROR"] == [
        "merge: batch failed, merging its documents one by one", "merge: document failed"]


def test_a_message_and_its_attachments_are_merged_together(workspace):
    message = DocumentFactory(workspace=workspace)
    attachment = DocumentFactory(workspace=workspace, parent=message)
    nested = DocumentFactory(workspace=workspace, parent=attachment)
    DocumentFactory(workspace=workspace)  # not an attachment
    assert merging._with_attachments([message.pk]) == [message.pk, attachment.pk, nested.pk]
    assert Document.objects.count() == 4
