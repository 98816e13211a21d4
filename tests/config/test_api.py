"""The API's schema and docs page (config/api.py): a valid OpenAPI document, a page served from our own static
files under the site's Content-Security-Policy, readable without signing in; and a script against a live server."""

from __future__ import annotations

import json
import re
import urllib.request

import pytest
from django.contrib.staticfiles import finders
from openapi_spec_validator import validate

from rag.tokens import api_token_create
from tests.factories import UserFactory, WorkspaceFactory
from tests.rag.retrieval_helpers import add_document

pytestmark = pytest.mark.django_db

ROUTES = {
    "/api/v1/search": {"get"},
    "/api/v1/answers": {"post"},
    "/api/v1/conversations": {"get", "post"},
    "/api/v1/conversations/{conversation_id}": {"get"},
    "/api/v1/conversations/{conversation_id}/messages": {"post"},
}


def test_the_schema_is_valid_openapi_and_lists_every_route_with_its_refusals(client):
    response = client.get("/api/v1/openapi.json")
    assert response.status_code == 200
    schema = response.json()
    validate(schema)
    assert {path: set(operations) for path, operations in schema["paths"].items()} == ROUTES
    for path, operations in schema["paths"].items():
        for method, operation in operations.items():
            assert {"400", "401", "404", "429"} <= set(operation["responses"]), (method, path)
            assert operation["security"] == [{"TokenOrSession": []}]
    assert schema["components"]["securitySchemes"]["TokenOrSession"] == {"type": "http", "scheme": "bearer"}


def test_the_docs_page_loads_its_own_files_under_the_strict_policy(client):
    response = client.get("/api/v1/docs")
    assert response.status_code == 200
    policy = response["Content-Security-Policy"]
    assert "default-src 'self'" in policy and "unsafe-inline" not in policy
    html = response.content.decode()
    assert "/api/v1/openapi.json" in html
    assets = re.findall(r'(?:src|href)="([^"]+)"', html)
    assert assets and all(asset.startswith("/static/") for asset in assets), assets  # no CDN: no network at run time
    for asset in assets:
        assert finders.find(asset.removeprefix("/static/")), asset
    # Nothing inline runs: the one <script> without src is the settings' JSON, which the page's own file reads.
    inline = re.findall(r"<script(?![^>]*\bsrc=)([^>]*)>", html)
    assert inline == [' type="application/json" id="swagger-settings"']


def test_an_integrators_script_against_a_running_server(live_server, transactional_db,
                                                          django_db_serialized_rollback):
    """docs/api.md's example, nearly word for word: a token, a question, a citation's link, the conversation."""
    user = UserFactory()
    workspace = WorkspaceFactory(slug="demo", members=[user])
    add_document(workspace, "/w/limits.md", ["Each API key is limited to 1200 requests per minute by default."])
    _, token = api_token_create(user=user, name="bot")

    def call(method: str, path: str, body: dict | None = None) -> dict:
        request = urllib.request.Request(
            live_server.url + path, method=method, data=json.dumps(body).encode() if body else None,
            headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=30) as response:
            return json.load(response)

    reply = call("POST", "/api/v1/answers",
                 {"question": "What is the default rate limit per API key?", "workspace": "demo"})
    assert "1200" in reply["answer"]["text"]
    assert reply["answer"]["citations"][0]["url"].startswith(f"{live_server.url}/documents/")
    thread = call("POST", f"/api/v1/conversations/{reply['conversation_id']}/messages", {"question": "And in 2.0?"})
    assert thread["answer"]["asked_as"] == "What is the default rate limit per API key, in 2.0?"
    conversation = call("GET", f"/api/v1/conversations/{reply['conversation_id']}")
    assert [m["role"] for m in conversation["messages"]] == ["user", "assistant"] * 2
