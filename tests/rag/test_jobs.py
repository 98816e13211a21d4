"""Job item life cycle (rag.jobs) against the real database: every item reaches a final state."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from rag.jobs.lifecycle import job_finish_if_done, job_item_claim, job_item_fail, job_item_requeue, job_items_merged
from rag.jobs.reaper import job_items_reap
from rag.jobs.run import job_item_run
from rag.models import IndexingJob, IndexingJobItem
from devkit.faults import broker_purge

pytestmark = pytest.mark.django_db

Status = IndexingJobItem.Status


@pytest.fixture
def item(workspace, tmp_path):
    source = tmp_path / "guide.md"
    source.write_text("# Guide\n\nThe gateway listens on port 8443 and forwards to the pool.\n")
    job = IndexingJob.objects.create(workspace=workspace, source=IndexingJob.Source.CLI)
    return IndexingJobItem.objects.create(job=job, path=str(source), source_file=str(source))


def _expire(item: IndexingJobItem) -> None:
    IndexingJobItem.objects.filter(pk=item.pk).update(lease_expires_at=timezone.now() - timedelta(seconds=1))


def test_claiming_a_queued_item_and_finishing_its_job_cost_a_query_or_two(item):
    """Bookkeeping paid once per file of a job: a queued item is claimed by one conditional update and
    one read, and the job's finish is one statement, whether or not items remain; a job that indexed something
    also refreshes the search statistics as it finishes (one check and one ANALYZE)."""
    with CaptureQueriesContext(connection) as claim:
        claimed = job_item_claim(item_id=item.pk, task_id="task-a")
    with CaptureQueriesContext(connection) as pending:
        job_finish_if_done(item.job_id)
    IndexingJobItem.objects.filter(pk=item.pk).update(status=Status.INDEXED)
    with CaptureQueriesContext(connection) as last:
        job_finish_if_done(item.job_id)

    assert claimed.job.pk == item.job_id and claimed.status == Status.RUNNING
    assert (len(claim), len(pending), len(last)) == (2, 1, 3)
    assert last.captured_queries[-1]["sql"].startswith("ANALYZE")
    item.job.refresh_from_db()
    assert item.job.finished_at is not None
    assert IndexingJob.objects.filter(pk=item.job_id, finished_at__isnull=True).count() == 0


def test_a_job_with_an_unfinished_item_stays_open(item):
    IndexingJobItem.objects.create(job=item.job, path="/other.md", source_file="/other.md")
    IndexingJobItem.objects.filter(pk=item.pk).update(status=Status.INDEXED)
    job_finish_if_done(item.job_id)
    item.job.refresh_from_db()
    assert item.job.finished_at is None


def test_a_claim_takes_a_lease_and_a_second_delivery_of_another_task_is_turned_away(item, settings):
    claimed = job_item_claim(item_id=item.pk, task_id="task-a")
    assert claimed.status == Status.RUNNING and claimed.task_id == "task-a"
    assert claimed.lease_expires_at > timezone.now() + timedelta(seconds=settings.JOB_ITEM_LEASE_SECONDS - 5)
    assert job_item_claim(item_id=item.pk, task_id="task-b") is None  # task-a holds a live lease
    item.refresh_from_db()
    assert (item.task_id, item.lost_runs) == ("task-a", 0)


def test_the_same_message_delivered_again_means_its_worker_died_and_counts_a_lost_run(item, settings):
    settings.JOB_ITEM_MAX_LOST_RUNS = 2
    for lost in (0, 1, 2):
        claimed = job_item_claim(item_id=item.pk, task_id="task-a")
        assert claimed is not None and claimed.lost_runs == lost
    assert job_item_claim(item_id=item.pk, task_id="task-a") is None  # the third loss is one too many
    item.refresh_from_db()
    assert item.status == Status.FAILED and item.lost_runs == 3
    assert "its worker died 3 times" in item.error
    assert IndexingJob.objects.get(pk=item.job_id).finished_at is not None


def test_a_transient_error_requeues_without_counting_a_lost_run(item):
    job_item_claim(item_id=item.pk, task_id="task-a")
    job_item_requeue(item_id=item.pk)
    item.refresh_from_db()
    assert (item.status, item.lease_expires_at, item.lost_runs) == (Status.QUEUED, None, 0)
    assert job_item_claim(item_id=item.pk, task_id="task-a").lost_runs == 0


def test_fail_ends_an_unfinished_item_and_its_job_but_never_a_finished_one(item, workspace, tmp_path):
    assert job_item_fail(item_id=item.pk, reason="gave up after 5 retries: OperationalError: gone") is True
    item.refresh_from_db()
    assert item.status == Status.FAILED and item.error.startswith("gave up after 5 retries")
    assert IndexingJob.objects.get(pk=item.job_id).finished_at is not None

    done = IndexingJobItem.objects.create(job=item.job, path="x", source_file="x", status=Status.INDEXED)
    assert job_item_fail(item_id=done.pk, reason="late") is False
    done.refresh_from_db()
    assert (done.status, done.error) == (Status.INDEXED, "")


def test_the_reaper_requeues_an_expired_lease_at_most_n_times_then_fails_it(item, settings, django_capture_on_commit_callbacks):
    settings.JOB_ITEM_MAX_LOST_RUNS = 1
    job_item_claim(item_id=item.pk, task_id="task-a")
    assert job_items_reap().requeued == []  # the lease is live: its worker may still be at it

    _expire(item)
    with django_capture_on_commit_callbacks() as callbacks:
        result = job_items_reap()
    assert result.requeued == [item.pk] and result.failed == []
    assert len(callbacks) == 1  # the new task is sent once the requeue is committed
    item.refresh_from_db()
    assert (item.status, item.task_id, item.lost_runs) == (Status.QUEUED, "", 1)

    job_item_claim(item_id=item.pk, task_id="task-b")
    _expire(item)
    result = job_items_reap()
    assert result.failed == [item.pk] and result.requeued == []
    item.refresh_from_db()
    assert item.status == Status.FAILED and "its worker died 2 times" in item.error
    assert IndexingJob.objects.get(pk=item.job_id).finished_at is not None


def test_the_reaper_finishes_a_job_whose_items_all_ended(item):
    IndexingJobItem.objects.filter(pk=item.pk).update(status=Status.INDEXED)
    assert job_items_reap().jobs_finished == 1
    assert IndexingJob.objects.get(pk=item.job_id).finished_at is not None


def test_running_a_claimed_item_indexes_it_and_clears_the_lease(item):
    assert job_item_run(item_id=item.pk, task_id="task-a") == "indexed"
    item.refresh_from_db()
    assert (item.status, item.lease_expires_at, item.task_id) == (Status.INDEXED, None, "task-a")
    assert job_item_run(item_id=item.pk, task_id="task-b") == "indexed"  # finished: nothing runs again


def test_the_reaper_resends_index_and_merge_tasks_the_broker_lost(item, workspace):
    from rag.jobs.broker import broker_task_args
    from rag.models import Document

    broker_purge()  # as after a Redis restart without its data
    long_ago = timezone.now() - timedelta(hours=1)
    IndexingJob.objects.filter(pk=item.job_id).update(created_at=long_ago)
    document = Document.objects.create(workspace=workspace, path="merged-never.md", title="t", format="md")
    indexed = IndexingJobItem.objects.create(job=item.job, path="merged-never.md", source_file="x", status=Status.INDEXED,
                                             document=document, finished_at=long_ago)
    try:
        result = job_items_reap()
        assert (result.resent, result.merges_resent) == ([item.pk], [workspace.pk])
        assert broker_task_args("rag.tasks.index_document") == {(item.pk,)}
        assert broker_task_args("rag.tasks.merge_indexed") == {(workspace.pk,)}
        result = job_items_reap()  # the messages are in the broker now: nothing is sent twice
        assert (result.resent, result.merges_resent) == ([], [])

        job_items_merged(document_ids=[document.pk])
        indexed.refresh_from_db()
        assert indexed.merged_at is not None
    finally:
        broker_purge()


def test_ingest_without_any_worker_says_so_instead_of_waiting_forever(workspace, tmp_path, monkeypatch):
    from django.core.management import CommandError, call_command

    from rag.management import following

    (tmp_path / "guide.md").write_text("# Guide\n\nThe gateway listens on port 8443.\n")
    monkeypatch.setattr(following, "NO_WORKER_GRACE_SECONDS", 0.2)
    monkeypatch.setattr(following, "live_workers", list)  # whatever runs elsewhere on this machine
    try:
        with pytest.raises(CommandError, match="no worker is running: job .* has 1 file"):
            call_command("ingest", str(tmp_path), workspace=workspace.slug, verbosity=0)
    finally:
        broker_purge()


def test_a_run_that_indexed_the_file_but_lost_the_database_before_saying_so_is_indexed_and_merged(
        item, django_capture_on_commit_callbacks):

    from rag.ingest.pipeline import document_index

    # The first run: the document is committed, then PostgreSQL goes away before the item is updated.
    job_item_claim(item_id=item.pk, task_id="task-a")
    document_index(workspace_id=item.job.workspace_id, path=item.path, source_file=item.source_file)
    with django_capture_on_commit_callbacks() as callbacks:
        assert job_item_run(item_id=item.pk, task_id="task-a") == "indexed"  # the retry finds the file unchanged
    assert len(callbacks) == 1  # and still owes its merge
    item.refresh_from_db()
    assert (item.status, item.lost_runs) == (Status.INDEXED, 1)
