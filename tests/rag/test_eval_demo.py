"""`manage.py eval_demo`'s measures, on a two-document corpus with the hashing encoder."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from rag import embeddings
from rag.management.commands.eval_demo import CONFIGS, Command, _states, _suffix_match
from tests.rag.retrieval_helpers import add_document, license_workspace
from tests.rag.retrieval_helpers import retrieval_isolation  # noqa: F401 (an autouse fixture)

pytestmark = pytest.mark.django_db


def test_patterns_match_as_substrings_or_regexes_all_of_them():
    text = "The   Upstream timeout is 60s (proxy.upstream_timeout)."
    assert _states(text, ["proxy.upstream_timeout", "60s"])
    assert _states(text, [r"timeout is \d+s"])
    assert not _states(text, ["proxy.upstream_timeout", "45s"])
    assert not _states(text, [])


def test_paths_match_by_suffix():
    assert _suffix_match("/srv/demo/corpus/api/api-reference-v3.adoc", "api/api-reference-v3.adoc")
    assert not _suffix_match("/srv/demo/corpus/api/old-api-reference-v3.adoc", "api-reference-v3.adoc")


def test_hit_mrr_and_stale_leakage(workspace):
    add_document(workspace, "/corpus/v3/limits.md", ["The gateway allows 1200 requests per minute per key."],
                 doc_date=datetime(2025, 9, 1, tzinfo=UTC))
    add_document(workspace, "/corpus/v2/limits.md", ["The gateway allows 600 requests per minute per key."],
                 doc_date=datetime(2024, 4, 1, tzinfo=UTC))
    license_workspace(workspace)
    question = {
        "id": "q1", "question": "How many requests per minute per key does the gateway allow?",
        "expected_path": "v3/limits.md", "answer_patterns": ["1200 requests per minute"],
        "outdated": [{"path": "v2/limits.md", "patterns": ["600 requests per minute"]}],
    }
    vectors = {"q1": tuple(embeddings.encode_query(question["question"]))}
    plain = next(c for c in CONFIGS if c.name == "plain semantic")

    figures = Command()._evaluate(workspace, [question], vectors, plain, details=False)
    assert figures["hit@5"] == 1.0 and figures["answer@5"] == 1.0
    assert figures["mrr@10"] in (1.0, 0.5)
    assert figures["stale"] == 0.5 and figures["stale_questions"] == 1  # both versions in a top 2
