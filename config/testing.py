"""pytest plugin loaded before Django (`-p config.testing`): the tests' own DATA_DIR, speed knobs, their services.

Tests get their own DATA_DIR so that their embedded services, broker queues and
files never mix with a development instance's. The run starts (or finds) those
services once, as any process that uses them does; they stay up for the next run.
"""

import os
from pathlib import Path

import pytest

from config.configuration import first_start
from config.embedded import services_start

os.environ.setdefault("DATA_DIR", str(Path(__file__).resolve().parent.parent / "var" / "test"))
os.environ.setdefault("EMBEDDING_ENCODER", "hashing")
os.environ.setdefault("DEBUG", "true")
os.environ.setdefault("DB_CONN_MAX_AGE", "0")  # live-server threads must not keep the test database busy
os.environ.setdefault("PASSWORD_HASHERS", "django.contrib.auth.hashers.MD5PasswordHasher")  # hashing cost is not under test
first_start()  # before pytest-django reads the settings: the tests' DATA_DIR and its kept secret key


def pytest_configure(config: pytest.Config) -> None:
    """Before any test: settings only say where the services are."""
    services_start()
