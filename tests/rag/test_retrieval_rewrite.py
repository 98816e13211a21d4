"""The LLM query rewrite, through a real OpenAI-compatible server on loopback, and the search without it."""

from __future__ import annotations

import json

import pytest
from django.test import override_settings

from rag.retrieval import search
from devkit.llm_server import FakeLLM
from tests.rag.factories import ChunkFactory, DocumentFactory
from tests.rag.retrieval_helpers import options
from tests.rag.retrieval_helpers import retrieval_isolation  # noqa: F401 (an autouse fixture)

pytestmark = pytest.mark.django_db


def _corpus(workspace):
    document = DocumentFactory(workspace=workspace, path="/ref/limits.md", title="limits.md", chunk_count=1)
    target = ChunkFactory(document=document, text="The gateway rejects request bodies above 25 MB with HTTP 413.",
                          heading_path="Limits > max_body_size")
    other = DocumentFactory(workspace=workspace, path="/guide/uploads.md", title="uploads.md", chunk_count=1)
    ChunkFactory(document=other, text="Uploading files from the dashboard is described in the user guide.",
                 heading_path="Guide > Uploading")
    return target


def test_the_rewrite_joins_the_fusion(workspace):
    target = _corpus(workspace)
    with FakeLLM("gateway rejects request bodies above size limit HTTP 413") as llm, \
            override_settings(SEARCH_LLM_REWRITE=True, LLM_BASE_URL=llm.url, LLM_MODEL="rewriter",
                              RRF_WEIGHTS={"semantic": 1.0, "lexical": 1.0, "identifiers": 1.0, "rewrite": 2.0}):
        results = search("what is the biggest thing I can send", options(workspace, top_k=2, rerank=False))
    assert results.stats["rewrite"] == {"query": "gateway rejects request bodies above size limit HTTP 413",
                                        "error": None}
    assert llm.requests[0]["path"] == "/v1/chat/completions"
    assert llm.requests[0]["body"]["model"] == "rewriter"
    assert llm.requests[0]["body"]["messages"][-1]["content"] == "what is the biggest thing I can send"
    assert results[0].chunk_id == target.pk
    assert results[0].ranks.get("rewrite") == 1


@pytest.mark.parametrize(("status", "delay", "body", "reason"), [
    (500, 0.0, None, "HTTP 500"),
    (200, 2.0, None, "too slow"),
    (200, 0.0, b"not json", "no completion"),
    (200, 0.0, json.dumps({"choices": [{"message": {"content": "  "}}]}).encode(), "empty"),
])
def test_a_failing_server_leaves_the_search_to_the_question_alone(workspace, status, delay, body, reason):
    target = _corpus(workspace)
    with FakeLLM("unused", status=status, delay=delay, body=body) as llm, \
            override_settings(SEARCH_LLM_REWRITE=True, LLM_BASE_URL=llm.url, SEARCH_LLM_REWRITE_TIMEOUT_SECONDS=0.5):
        results = search("request bodies above 25 MB", options(workspace, top_k=2))
    assert results.stats["rewrite"]["query"] is None
    assert reason in results.stats["rewrite"]["error"]
    assert results[0].chunk_id == target.pk
    assert "rewrite" not in results[0].ranks


def test_an_unreachable_server_or_the_setting_off_costs_nothing(workspace):
    target = _corpus(workspace)
    with override_settings(SEARCH_LLM_REWRITE=True, LLM_BASE_URL="http://127.0.0.1:9/v1"):
        results = search("request bodies above 25 MB", options(workspace, top_k=2))
    assert "unreachable" in results.stats["rewrite"]["error"]
    assert results[0].chunk_id == target.pk
    with FakeLLM("anything") as llm, override_settings(SEARCH_LLM_REWRITE=False, LLM_BASE_URL=llm.url):
        results = search("request bodies above 25 MB", options(workspace, top_k=2))
    assert llm.requests == [] and "rewrite" not in results.stats
