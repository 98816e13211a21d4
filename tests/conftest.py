"""Fixtures shared by the suite: users, workspaces, and real Celery worker processes."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from django.conf import settings
from django.core.cache import cache
from django.db import connection

from devkit.faults import QUEUES, Beat, PoolWorker
from tests.factories import UserFactory, WorkspaceFactory
from tests.licensing.factories import TEST_DEVELOPMENT_KEY


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Tests that restart the embedded services run last: a browser test right after a PostgreSQL restart lost
    its connection mid-fixture (AdminShutdown), on every full run and never alone."""
    items.sort(key=lambda item: item.get_closest_marker("restarts_services") is not None)


@pytest.fixture(autouse=True)
def license_development_key(settings):
    """Licenses made by LicenseFactory are signed by the suite's own development key, which an instance
    serving this machine alone (the suite's) honours; no test can sign with a vendor key."""
    settings.LICENSE_DEVELOPMENT_KEY = TEST_DEVELOPMENT_KEY


@pytest.fixture(autouse=True)
def source_roots(settings, tmp_path_factory):
    """Sources read only inside SOURCE_FOLDER_ROOTS (by default `sources/` beside DATA_DIR); the suite's folders
    and repositories are pytest's temporary ones. A test about the roots sets its own."""
    settings.SOURCE_FOLDER_ROOTS = [str(tmp_path_factory.getbasetemp())]


@pytest.fixture(autouse=True)
def fresh_cache():
    """Sign-in failures and API counts live in the shared cache (Redis), which outlives a test: each starts
    without them. The cache has its own Redis database, so the broker's queues stay as they are."""
    try:
        cache.clear()
    except Exception:  # noqa: BLE001 - a test that takes Redis down starts with whatever it left
        pass


@pytest.fixture
def user(db):
    return UserFactory()


@pytest.fixture
def workspace(db, user):
    return WorkspaceFactory(members=[user])


@pytest.fixture
def staff_user(db):
    # An unusable password: pytest-django's admin_user hashes one, about a second per test.
    return UserFactory(username="reviewer", password=None, is_staff=True, is_superuser=True)


@pytest.fixture
def staff_client(client, staff_user):
    client.force_login(staff_user)
    return client


@pytest.fixture
def logged_in_client(client, user):
    client.force_login(user)
    return client


def _test_database_url() -> str:
    params = connection.settings_dict
    host = params.get("HOST") or params["OPTIONS"].get("host", "")
    user = params.get("USER") or "postgres"
    password = f":{params['PASSWORD']}" if params.get("PASSWORD") else ""
    port = f":{params['PORT']}" if params.get("PORT") else ""
    if host.startswith("/"):
        return f"postgresql://{user}{password}@/{params['NAME']}?host={host}"
    return f"postgresql://{user}{password}@{host}{port}/{params['NAME']}"


class WorkerProcess(PoolWorker):
    """A real `celery -A config worker` process against the test database."""

    def __init__(self, *, concurrency: int = 1, queues: str = QUEUES, extra_env: dict | None = None, **kwargs):
        super().__init__(database_url=_test_database_url(), redis_url=settings.REDIS_URL,
                         data_dir=Path(settings.DATA_DIR), encoder=settings.EMBEDDING_ENCODER,
                         concurrency=concurrency, queues=queues, extra_env=extra_env, **kwargs)

    def wait_ready(self, timeout: float = 60) -> None:
        """Until every pool process is up (has warmed up), not merely the worker's parent."""
        self.wait_full(timeout=timeout)


@pytest.fixture
def start_worker(transactional_db, django_db_serialized_rollback) -> Iterator[Callable[..., WorkerProcess]]:
    """Start real worker processes; they see only committed data, hence transactional_db."""
    started: list[WorkerProcess] = []

    def _start(**kwargs) -> WorkerProcess:
        worker = WorkerProcess(**kwargs)
        started.append(worker)
        worker.wait_ready()
        return worker

    yield _start
    for worker in started:
        worker.stop()


@pytest.fixture
def start_processes(transactional_db, django_db_serialized_rollback) -> Iterator[Callable]:
    """Start workers of 2 pool processes (`WorkerProcess`) without waiting: faults need them at any moment."""
    started: list[WorkerProcess] = []

    def _start(**kwargs) -> WorkerProcess:
        worker = WorkerProcess(**{"concurrency": 2, **kwargs})
        started.append(worker)
        return worker

    yield _start
    for worker in reversed(started):
        worker.stop()


# Beat as the tests run it: a tick a second (its heartbeat), and nothing due while a test runs.
BEAT_ENV = {"WORKER_HEARTBEAT_SECONDS": "1", "JOB_REAPER_INTERVAL_SECONDS": "3600",
            "SOURCE_SCHEDULE_TICK_SECONDS": "3600"}


def beat_environment(data_dir: Path) -> dict[str, str]:
    """What a real `celery -A config beat` of the tests needs: their database and Redis, its own DATA_DIR."""
    return {**os.environ, **BEAT_ENV, "DATABASE_URL": _test_database_url(), "REDIS_URL": settings.REDIS_URL,
            "DATA_DIR": str(data_dir)}


@pytest.fixture
def start_beat(db, tmp_path) -> Iterator[Callable[[], Beat]]:
    """Start a real `celery -A config beat` (devkit.faults.Beat) that ticks every second."""
    started: list[Beat] = []

    def _start() -> Beat:
        beat = Beat(database_url=_test_database_url(), redis_url=settings.REDIS_URL, data_dir=tmp_path,
                    extra_env=BEAT_ENV)
        started.append(beat)
        return beat

    yield _start
    for beat in started:
        beat.stop()
