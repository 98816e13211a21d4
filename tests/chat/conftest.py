"""A workspace with two versions of an API reference that disagree, indexed and merged for real."""

from __future__ import annotations

from pathlib import Path

import pytest

from chat.models import Conversation
from rag import embeddings
from rag.dedup.merge import workspace_merge
from rag.jobs.run import job_item_run
from rag.uploads import indexing_job_create
from devkit.llm_server import FakeLLM
from tests.licensing.factories import LicenseFactory

V2 = """---
title: Lumen API Reference 2.0
date: 2024-05-10
doc_type: api
---
# Lumen API Reference 2.0

## Rate limits

Each API key may send 600 requests per minute to the gateway. Requests over the limit receive HTTP 429
with a Retry-After header that says how many seconds to wait before the next attempt.

## Authentication

Send the API key in the X-Lumen-Key header of every request. Keys are created in the dashboard.
"""

V3 = V2.replace("2.0", "3.0").replace("2024-05-10", "2025-10-02").replace("600 requests", "1200 requests")

EVIL = """---
title: Notes <script>alert('t')</script>
date: 2025-01-01
---
# Escaping

The escape sequence <script>alert('x')</script> must show as text in every answer about escaping sequences.
"""


def index_folder(workspace, folder: Path) -> None:
    job = indexing_job_create(workspace=workspace, paths=[folder], enqueue=False)
    for item_id in job.items.values_list("pk", flat=True):
        job_item_run(item_id=item_id)
    workspace_merge(workspace_id=workspace.pk)


@pytest.fixture
def api_versions(workspace, tmp_path) -> Path:
    embeddings.reset_encoder()
    folder = tmp_path / "api"
    folder.mkdir()
    (folder / "api-2.0.md").write_text(V2)
    (folder / "api-3.0.md").write_text(V3)
    (folder / "notes.md").write_text(EVIL)
    index_folder(workspace, folder)
    return folder


@pytest.fixture
def licensed(workspace):
    return LicenseFactory(workspace=workspace)


@pytest.fixture
def llm(settings):
    """A loopback model server whose answer cites source 1; the settings point at it."""
    with FakeLLM("It is 1200 requests per minute [1].") as server:
        settings.LLM_BASE_URL, settings.LLM_MODEL = server.url, "m"
        yield server


@pytest.fixture
def conversation(workspace, user):
    return Conversation.objects.create(workspace=workspace, user=user)
