"""The embedded services and the broker, for real."""

from __future__ import annotations

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from config.celery import ping
from rag.jobs.broker import broker_client


@pytest.mark.django_db
def test_embedded_postgres_has_pgvector_and_all_migrations():
    with connection.cursor() as cursor:
        cursor.execute("SHOW server_version")
        assert cursor.fetchone()[0].startswith("16.")
        cursor.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'")
        assert cursor.fetchone() is not None
    executor = MigrationExecutor(connection)
    assert executor.migration_plan(executor.loader.graph.leaf_nodes()) == []


def test_embedded_redis_answers():
    client = broker_client()
    assert client.ping()
    client.set("docent:test:key", "value", ex=10)
    assert client.get("docent:test:key") == b"value"


@pytest.mark.worker
def test_task_round_trip_through_real_broker_and_worker(start_worker):
    worker = start_worker()
    result = ping.delay("hello").get(timeout=30)
    assert result["echo"] == "hello"
    assert result["pid"] != __import__("os").getpid()
    # The worker talks to the same (test) database as this process.
    assert result["database"] == connection.settings_dict["NAME"]
    assert worker.proc.poll() is None


@pytest.mark.django_db
def test_embedded_postgres_runs_with_the_configured_cache(settings):
    with connection.cursor() as cursor:
        cursor.execute("SELECT setting::bigint * 8192, pending_restart FROM pg_settings WHERE name = 'shared_buffers'")
        size, pending = cursor.fetchone()
    number, unit = settings.EMBEDDED_PG_SHARED_BUFFERS[:-2], settings.EMBEDDED_PG_SHARED_BUFFERS[-2:]
    assert size == int(number) * {"kB": 2**10, "MB": 2**20, "GB": 2**30}[unit] and not pending


def test_a_changed_cache_size_restarts_the_embedded_server_once(services_tmp_path, monkeypatch):
    tmp_path = services_tmp_path
    import psycopg

    from config.embedded import embedded_database_start, stop_embedded

    def shared_buffers(url: str) -> str:
        with psycopg.connect(url) as conn:
            return conn.execute("SHOW shared_buffers").fetchone()[0]

    def postmaster_pid() -> str:
        return (tmp_path / "pg" / "postmaster.pid").read_text().split()[0]

    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path / "run"))  # it sets this; give it back afterwards
    try:
        url = embedded_database_start(tmp_path, tuning={"shared_buffers": "144MB"})
        assert shared_buffers(url) == "144MB"
        started = postmaster_pid()
        assert shared_buffers(embedded_database_start(tmp_path, tuning={"shared_buffers": "144MB"})) == "144MB"
        assert postmaster_pid() == started  # nothing changed, nothing restarted
        assert shared_buffers(embedded_database_start(tmp_path, tuning={"shared_buffers": "160MB"})) == "160MB"
        assert postmaster_pid() != started
    finally:
        stop_embedded(tmp_path, redis_server=False)


def test_processes_starting_together_all_find_the_data_dir_writable(tmp_path):
    from concurrent.futures import ThreadPoolExecutor

    from config.embedded import ensure_data_dir

    with ThreadPoolExecutor(8) as pool:  # `make run` starts the worker and the web server at once
        list(pool.map(lambda _: ensure_data_dir(tmp_path), range(400)))
    assert not list(tmp_path.iterdir())


def test_the_cache_lives_in_its_own_database_of_the_brokers_redis():
    """Sign-in throttling and the API's rate count there (issue 37): shared by every process, and a cache
    clear (FLUSHDB) never drops a queued task."""
    from config.embedded import redis_database_url

    assert redis_database_url("redis+socket:///srv/docent/redis/redis.sock", database=1) == \
        "unix:///srv/docent/redis/redis.sock?db=1"
    assert redis_database_url("redis://:secret@redis.internal:6379/0", database=1) == \
        "redis://:secret@redis.internal:6379/1"
    assert redis_database_url("rediss://redis.internal?ssl_cert_reqs=none", database=1) == \
        "rediss://redis.internal/1?ssl_cert_reqs=none"
