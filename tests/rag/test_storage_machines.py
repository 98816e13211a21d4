"""The multi-machine shape (issue 27), on this machine: a web process and a worker process in different DATA_DIRs,
one PostgreSQL, one Redis, and a real S3-compatible server (moto's server mode on loopback) as the file storage.

Select it with `-m multi_machine`. The hashing encoder keeps it short; the storage path is what is under test.
"""

from __future__ import annotations

import time

import pytest
from celery import current_app
from django.conf import settings

from rag.models import Document, IndexingJob, IndexingJobItem
from devkit.faults import PoolWorker
from devkit.machines import S3Server, WebProcess
from tests.conftest import _test_database_url
from tests.factories import UserFactory, WorkspaceFactory

pytestmark = [pytest.mark.multi_machine, pytest.mark.worker]

OUTAGE_SECONDS = 30


def _note(number: int) -> tuple[str, bytes]:
    return (f"note-{number}.md",
            f"# Runbook {number}\n\nStep {number}: restart the gateway {number} after the cache warms.\n".encode())


def _wait_finished(job_id: int, timeout: float) -> IndexingJob:
    deadline = time.monotonic() + timeout
    while True:
        job = IndexingJob.objects.get(pk=job_id)
        if job.finished_at is not None or time.monotonic() > deadline:
            return job
        time.sleep(0.5)


@pytest.fixture
def s3_server():
    server = S3Server()
    server.start()
    yield server
    server.stop()


def test_an_upload_through_the_web_is_indexed_by_a_worker_on_another_machine_through_an_outage(
        transactional_db, django_db_serialized_rollback, tmp_path, s3_server):
    user = UserFactory()
    workspace = WorkspaceFactory(members=[user])
    storage_env = {**s3_server.environ(), "STORAGE_RETRY_SECONDS": "3"}
    machines = {"web": tmp_path / "web-machine", "worker": tmp_path / "worker-machine"}
    for data_dir in machines.values():
        data_dir.mkdir()
    web = WebProcess(database_url=_test_database_url(), redis_url=settings.REDIS_URL, data_dir=machines["web"],
                     extra_env=storage_env)
    worker = PoolWorker(database_url=_test_database_url(), redis_url=settings.REDIS_URL, data_dir=machines["worker"],
                        encoder=settings.EMBEDDING_ENCODER, concurrency=1, extra_env=storage_env)
    try:
        web.wait_ready()
        worker.wait_full(timeout=120)
        web.login(user.username, "correct horse battery")

        # An upload through the web is indexed by the worker, which has never seen the web's DATA_DIR.
        first = _wait_finished(web.upload([_note(1), _note(2)]), timeout=120)
        assert first.finished_at is not None, worker.log_path.read_text()[-3000:]
        assert sorted(first.items.values_list("status", flat=True)) == ["indexed", "indexed"]
        assert all(source.startswith("stored:uploads/") for source in first.items.values_list("source_file", flat=True))
        assert len(s3_server.keys()) == 2  # the copies are in the bucket ...
        for data_dir in machines.values():  # ... and on neither machine's disk
            assert not [path for path in (data_dir / "uploads").rglob("*") if path.is_file()]

        # The store goes away with a job queued: its reads are retried, nothing fails, and it completes.
        reply = current_app.control.cancel_consumer("ingest", destination=[worker.name], reply=True)
        assert reply, "the worker did not answer"
        second_id = web.upload([_note(number) for number in range(3, 7)])
        s3_server.stop()
        down_at = time.monotonic()
        current_app.control.add_consumer("ingest", destination=[worker.name], reply=True)
        time.sleep(OUTAGE_SECONDS)
        statuses = set(IndexingJobItem.objects.filter(job_id=second_id).values_list("status", flat=True))
        assert statuses <= {"queued", "running"}, statuses  # waiting for the store, not failed
        s3_server.start()
        outage = time.monotonic() - down_at
        second = _wait_finished(second_id, timeout=180)
        log = worker.log_path.read_text()
        assert second.finished_at is not None, log[-3000:]
        assert sorted(second.items.values_list("status", flat=True)) == ["indexed"] * 4, log[-3000:]
        assert "StorageUnavailable" in log or "storage unreachable" in log  # the outage was met, not missed
        assert outage >= OUTAGE_SECONDS
        assert Document.objects.filter(workspace=workspace, status=Document.Status.INDEXED).count() == 6
    finally:
        worker.stop()
        web.stop()
