"""Fixtures shared by the suite: users, workspaces, and real Celery worker processes."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from django.conf import settings
from django.db import connection

from tests.factories import UserFactory, WorkspaceFactory
from tests.licensing.factories import TEST_PUBLIC_KEY

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(autouse=True)
def license_public_key(settings):
    """Licenses made by LicenseFactory are signed by the suite's own vendor key; this installation trusts it."""
    settings.LICENSE_PUBLIC_KEY = TEST_PUBLIC_KEY


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


class WorkerProcess:
    """A real `celery -A config worker` process against the test database."""

    def __init__(self, *, concurrency: int = 1, queues: str = "default,ingest,merge", extra_env: dict | None = None):
        self.name = f"test-{uuid.uuid4().hex[:8]}@localhost"
        env = {
            **os.environ,
            "DATABASE_URL": _test_database_url(),
            "REDIS_URL": settings.REDIS_URL,
            "DATA_DIR": str(settings.DATA_DIR),
            "EMBEDDING_ENCODER": settings.EMBEDDING_ENCODER,
            **(extra_env or {}),
        }
        self.log_path = Path(settings.DATA_DIR) / f"{self.name.split('@')[0]}.log"
        self._log = open(self.log_path, "w")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "celery", "-A", "config", "worker", "-n", self.name, "-Q", queues,
             "--concurrency", str(concurrency), "--loglevel", "INFO", "--without-gossip", "--without-mingle"],
            cwd=ROOT, env=env, stdout=self._log, stderr=subprocess.STDOUT,
        )

    def wait_ready(self, timeout: float = 60) -> None:
        from config.celery import live_workers

        deadline = time.monotonic() + timeout
        while self.name not in live_workers():
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"worker {self.name} did not start:\n{self.log_path.read_text()[-3000:]}")
            time.sleep(0.2)

    def stop(self, timeout: float = 30) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self._log.close()


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
