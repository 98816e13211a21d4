"""Folders for tests that start their own embedded services."""

from __future__ import annotations

import shutil
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def services_folder() -> Path:
    """A fresh folder under var/, not /tmp: concurrent pytest runs tighten /tmp/pytest-of-<user> to 0700, and
    PostgreSQL runs as another user (pgserver) when the tests run as root."""
    folder = ROOT / "var" / "test-services" / uuid.uuid4().hex[:8]
    folder.mkdir(parents=True)
    return folder


def services_folder_remove(folder: Path) -> None:
    from config.embedded import stop_embedded

    if folder.exists():
        stop_embedded(folder)
        shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture
def services_tmp_path() -> Iterator[Path]:
    folder = services_folder()
    yield folder
    services_folder_remove(folder)
