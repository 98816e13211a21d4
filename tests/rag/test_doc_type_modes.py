"""A chosen document type boosts or filters, the user's choice, the same way on the CLI and the API."""

from __future__ import annotations

import json
from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from tests.rag.retrieval_helpers import add_document
from tests.rag.retrieval_helpers import retrieval_isolation  # noqa: F401 (an autouse fixture)

pytestmark = pytest.mark.django_db


@pytest.fixture
def typed(workspace):
    add_document(workspace, "/d/ops.md", ["Exports run nightly; a failed export is retried at 04:00."],
                 doc_date=None, doc_type="operations")
    add_document(workspace, "/d/api.md", ["The export endpoint returns a signed download URL for each export."],
                 doc_date=None, doc_type="api")
    return workspace


def _search(*args: str) -> dict:
    out = StringIO()
    call_command("search", "export", "--json", "--mode", "lexical", *args, stdout=out)
    return json.loads(out.getvalue())


def test_cli_boost_keeps_other_types_and_filter_keeps_only_the_type(typed):
    boosted = _search("--workspace", typed.slug, "--doc-type", "operations")
    assert {r["doc_type"] for r in boosted["results"]} == {"api", "operations"}
    assert boosted["results"][0]["doc_type"] == "operations"
    only = _search("--workspace", typed.slug, "--doc-type", "api", "--doc-type-mode", "filter")
    assert [r["doc_type"] for r in only["results"]] == ["api"]
    assert only["filters"]["doc_types"] == ["api"] and only["stats"]["doc_types_boosted"] == []
    with pytest.raises(CommandError):
        call_command("search", "export", "--workspace", typed.slug, "--doc-type-mode", "sometimes")


def test_api_takes_the_same_choice(typed, logged_in_client):
    params = {"q": "export", "workspace": typed.slug, "mode": "lexical", "doc_type": "api"}
    only = logged_in_client.get("/api/v1/search", {**params, "doc_type_mode": "filter"}).json()
    assert [r["doc_type"] for r in only["results"]] == ["api"]
    boosted = logged_in_client.get("/api/v1/search", params).json()
    assert {r["doc_type"] for r in boosted["results"]} == {"api", "operations"}
    bad = logged_in_client.get("/api/v1/search", {**params, "doc_type_mode": "maybe"})
    assert bad.status_code == 400 and "doc_type_mode" in bad.json()["error"]
