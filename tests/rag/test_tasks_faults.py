"""Faults with real processes, PostgreSQL and Redis: every item ends, nothing is lost or indexed twice.

The long versions (500 files, real encoder timing, PostgreSQL restarts) are benchmarks/fault_*.py.
"""

from __future__ import annotations

import os
import random
from pathlib import Path

import pytest
from django.conf import settings
from django.core.management import CommandError, call_command

from rag.jobs.tasks import index_document
from rag.models import IndexingJob, IndexingJobItem, Workspace
from rag.uploads import indexing_job_create
from devkit.faults import compare, snapshot, wait_job, write_corpus

pytestmark = [pytest.mark.worker, pytest.mark.usefixtures("transactional_db")]


def _run(folder: Path, slug: str, *, on_tick=None) -> tuple[dict, IndexingJob]:
    workspace = Workspace.objects.create(slug=slug, name=slug)
    job = indexing_job_create(workspace=workspace, paths=[folder], source=IndexingJob.Source.CLI)
    wait_job(job.pk, timeout=240, on_tick=on_tick)
    return snapshot(workspace.pk, job.pk), job


def test_given_up_and_timed_out_items_fail_with_their_reasons_and_the_job_ends(start_processes, tmp_path, capsys, monkeypatch):
    from devkit.fault_app import TIME_LIMITS

    # The sender writes the time limits into each message, so this process must know them too.
    monkeypatch.setattr(index_document, "soft_time_limit", TIME_LIMITS[0])
    monkeypatch.setattr(index_document, "time_limit", TIME_LIMITS[1])
    monkeypatch.setattr(index_document, "_exec_options", None)  # Celery caches the options of the first send
    worker = start_processes(app="devkit.fault_app")
    worker.wait_full()
    folder = tmp_path / "docs"
    folder.mkdir()
    for name in ("transient.md", "slow.md", "stuck.md", "good.md"):
        (folder / name).write_text(f"# {name}\n\nThe gateway listens on port 8443 and forwards to the pool.\n")
    workspace = Workspace.objects.create(slug="faults", name="faults")

    with pytest.raises(CommandError, match="3 document"):
        call_command("ingest", str(folder), workspace=workspace.slug, timeout=120, verbosity=0)
    out = capsys.readouterr().out
    assert "1 indexed, 3 failed" in out
    errors = dict(IndexingJobItem.objects.filter(job__workspace=workspace).values_list("path", "error"))
    errors = {Path(path).name: error for path, error in errors.items()}
    assert errors["transient.md"].startswith("gave up after 2 retries: OperationalError: the database blinked")
    assert errors["slow.md"] == "stopped at the soft time limit: indexing this file took too long"
    assert errors["stuck.md"] == "stopped at the hard time limit: indexing took longer than 4 s"
    assert errors["good.md"] == ""
    assert IndexingJob.objects.get(workspace=workspace).finished_at is not None
    worker.wait_full(timeout=30)  # the process killed at the hard limit was replaced


def test_killed_pool_processes_are_replaced_within_30s_and_every_file_is_indexed_once(start_processes, tmp_path):
    folder = write_corpus(tmp_path / "docs", files=30)
    worker = start_processes()
    worker.wait_full()
    reference, _ = _run(folder, "reference")
    rng, recoveries = random.Random(3), []

    def kill_on_time(elapsed: float) -> None:
        # Both kills while the job's tasks are queued or running: on a quiet machine the whole job can
        # end within a second, so a kill scheduled later might never happen.
        while len(recoveries) < 2:
            recoveries.append(worker.kill_pool_process(rng))

    faulted, _ = _run(folder, "killed", on_tick=kill_on_time)
    assert len(recoveries) == 2 and max(recoveries) < 30, recoveries
    assert compare(reference, faulted) == []
    assert reference["items"] == {"indexed": 30}


def test_an_item_left_running_by_a_dead_worker_is_requeued_by_the_reaper(start_processes, workspace, tmp_path):
    source = tmp_path / "guide.md"
    source.write_text("# Guide\n\nThe gateway listens on port 8443 and forwards to the pool.\n")
    job = IndexingJob.objects.create(workspace=workspace, source=IndexingJob.Source.CLI)
    # What a worker killed whole leaves behind: RUNNING, its lease over, its message gone with it.
    item = IndexingJobItem.objects.create(job=job, path=str(source), source_file=str(source), task_id="dead",
                                          status=IndexingJobItem.Status.RUNNING, lease_expires_at="2020-01-01T00:00Z")
    start_processes(beat=True, extra_env={"JOB_REAPER_INTERVAL_SECONDS": "1"}).wait_full()  # as `make run` starts it
    wait_job(job.pk, timeout=60)
    item.refresh_from_db()
    assert (item.status, item.lost_runs) == ("indexed", 1)
    assert item.document.chunk_count > 0


def _restart_redis() -> None:
    from config.embedded import embedded_redis_start, stop_embedded

    stop_embedded(Path(settings.DATA_DIR), database=False, redis_server=True)
    embedded_redis_start(Path(settings.DATA_DIR))


def _restart_postgres() -> None:
    from django.db import connection

    from config.embedded import _pg_ctl

    connection.close()
    pgdata = Path(settings.DATA_DIR) / "pg"
    _pg_ctl(pgdata, ["-m", "fast", "-w", "-l", str(pgdata / "log"), "restart"])


@pytest.mark.restarts_services
@pytest.mark.parametrize("restart", [_restart_redis, _restart_postgres], ids=["redis", "postgres"])
def test_a_service_restarted_mid_job_loses_and_doubles_nothing(start_processes, tmp_path, restart):
    if restart is _restart_redis and os.environ.get("REDIS_URL") or restart is _restart_postgres and os.environ.get("DATABASE_URL"):
        pytest.skip("only the embedded services are restarted here")
    folder = write_corpus(tmp_path / "docs", files=24)
    # Beat inside the worker, as `make run` runs it, with the reaper every second: the embedded
    # Redis keeps no data, so its restart loses every queued message and the reaper sends them again.
    worker = start_processes(beat=True, extra_env={"JOB_REAPER_INTERVAL_SECONDS": "1"})
    worker.wait_full()
    reference, _ = _run(folder, "reference")
    restarted = []

    def restart_once(elapsed: float) -> None:
        # At the first tick: the job's messages are queued or running then, however fast the machine; a
        # restart scheduled later could find the job already done.
        if not restarted:
            restart()
            restarted.append(elapsed)

    try:
        faulted, _ = _run(folder, "restarted", on_tick=restart_once)
    except TimeoutError as exc:  # the worker's own account of what it was doing is the diagnosis
        raise AssertionError(f"{exc}\nworker log:\n{worker.log_path.read_text()[-4000:]}") from exc
    assert restarted
    assert compare(reference, faulted) == []
