"""chat.search: a conversation's options, as chat's form stores them, become rag's SearchOptions."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from chat.search import search_for_chat
from tests.rag.retrieval_helpers import add_document, license_workspace
from tests.rag.retrieval_helpers import retrieval_isolation  # noqa: F401 (an autouse fixture)

pytestmark = pytest.mark.django_db


def paths(results) -> list[str]:
    return [r.path for r in results]


def test_search_for_chat_maps_the_conversation_options(workspace):
    license_workspace(workspace)
    now = timezone.now()
    add_document(workspace, "/n/new.md", ["queue depth alert fires at 500"], doc_date=now - timedelta(days=2))
    add_document(workspace, "/n/old.md", ["queue depth alert fired at 100"], doc_date=now - timedelta(days=90))
    chat_options = {"dedup": True, "include_archived": False, "provenance": True, "date": "last_7_days",
                    "after": "", "doc_type": "operations"}

    results, used = search_for_chat("queue depth alert", workspace=workspace, options=chat_options, top_k=3)
    assert paths(results) == ["/n/new.md"]
    assert results[0].provenance is not None
    assert used["canonical_filtering"] == "applied"
    assert used["filters"]["date_phrase"] == "last 7 days"
    assert used["options"]["doc_type_override"] == ["operations"]

    after = {**chat_options, "date": "after", "after": (now - timedelta(days=30)).date().isoformat()}
    results, used = search_for_chat("queue depth alert", workspace=workspace, options=after, top_k=3)
    assert paths(results) == ["/n/new.md"] and used["filters"]["created_after"]
