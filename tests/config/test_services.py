"""The embedded services and the broker, for real."""

from __future__ import annotations

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from config.celery import _redis, ping


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
    client = _redis()
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
