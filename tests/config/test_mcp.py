"""The MCP server at /mcp (config/mcp.py), reached as an agent reaches it: the SDK's own client over HTTP to a
live server, a personal token, two releases of one fact (the real encoder: a change answer's relevance floor is
calibrated on MiniLM's scale)."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from typing import Any

import anyio
import httpx2
import pytest
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client

from rag.tokens import api_token_create
from tests.chat.conftest import V2, V3, index_folder
from tests.factories import UserFactory, WorkspaceFactory
from tests.licensing.factories import LicenseFactory
from tests.rag.retrieval_helpers import encoder, minilm  # noqa: F401 (the real MiniLM encoder, as fixtures)

pytestmark = pytest.mark.django_db
QUESTION = "How many requests per minute may an API key send?"
TOOLS = {"search", "answer", "releases", "changes", "document"}


async def _session(url: str, token: str, calls: list[tuple[str, dict[str, Any]]]) -> tuple[set[str], list[Any]]:
    """The tools the server lists, and each call's result, in one connection."""
    headers = {"Authorization": f"Bearer {token}"}
    async with (httpx2.AsyncClient(headers=headers, timeout=120) as http,
                streamable_http_client(url, http_client=http) as (read, write),
                ClientSession(read, write) as session):
        await session.initialize()
        listed = await session.list_tools()
        results = [await session.call_tool(name, arguments) for name, arguments in calls]
    return {tool.name for tool in listed.tools}, results


def _mcp(url: str, token: str, *calls: tuple[str, dict[str, Any]]) -> tuple[set[str], list[Any]]:
    return anyio.run(_session, url, token, list(calls))


@pytest.fixture
def lumen(django_db_serialized_rollback, live_server, transactional_db, encoder, tmp_path) -> dict[str, Any]:
    user = UserFactory()
    workspace = WorkspaceFactory(slug="lumen", members=[user])
    LicenseFactory(workspace=workspace)
    WorkspaceFactory(slug="elsewhere", members=[UserFactory()])
    folder = tmp_path / "api"
    folder.mkdir()
    (folder / "api-2.0.md").write_text(V2)
    (folder / "api-3.0.md").write_text(V3)
    index_folder(workspace, folder)
    _, token = api_token_create(user=user, name="agent")
    return {"url": f"{live_server.url}/mcp", "base": live_server.url, "token": token}


def test_an_agent_lists_the_tools_calls_each_and_is_refused_elsewhere(lumen):
    lumen_ws = {"workspace": "lumen"}
    listed, (found, present, older, calendar, changed) = _mcp(
        lumen["url"], lumen["token"],
        ("search", {"question": "requests per minute", "as_of_version": "2.0", **lumen_ws}),
        ("answer", {"question": QUESTION, **lumen_ws}),
        ("answer", {"question": QUESTION, "as_of_version": "2.0", **lumen_ws}),
        ("releases", lumen_ws),
        ("changes", {"subject": "the rate limit", "from_version": "2.0", "to_version": "3.0", **lumen_ws}))
    assert TOOLS <= listed
    assert not any(result.is_error for result in (found, present, older, calendar, changed))

    passages = found.structured_content["results"]
    assert passages[0]["title"] == "Lumen API Reference 2.0" and passages[0]["version_label"] == "2.0"
    assert passages[0]["url"].startswith(f"{lumen['base']}/documents/") and "600" in passages[0]["text"]

    assert "1200" in present.structured_content["text"]
    assert present.structured_content["release"]["mode"] == "present"
    # A question about the older release answers from it, as the JSON API does, word for word.
    old = older.structured_content
    assert "600" in old["text"] and "1200" not in old["text"]
    assert old["release"] == {"mode": "as_of", "version": "2.0", "date": None, "compared": None}
    assert old["citations"][0]["title"] == "Lumen API Reference 2.0"
    request = urllib.request.Request(
        f"{lumen['base']}/api/v1/answers", method="POST",
        data=json.dumps({"question": QUESTION, "workspace": "lumen", "as_of_version": "2.0"}).encode(),
        headers={"Authorization": f"Bearer {lumen['token']}", "Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=60) as response:
        assert json.load(response)["answer"]["text"] == old["text"]

    assert calendar.structured_content["newest"] == "3.0"
    assert [r["version"] for r in calendar.structured_content["releases"]] == ["3.0", "2.0"]
    assert changed.structured_content["release"]["mode"] == "change"
    assert "600" in changed.structured_content["text"] and "1200" in changed.structured_content["text"]

    document_id = old["citations"][0]["document_id"]
    _, (read,) = _mcp(lumen["url"], lumen["token"],
                      ("document", {"document_id": document_id, **lumen_ws}))
    doc = read.structured_content
    assert doc["version_label"] == "2.0" and doc["is_latest_version"] is False
    assert any("600 requests" in passage["text"] for passage in doc["passages"])
    assert [(m["version_label"], m["is_latest_version"]) for m in doc["family"]] == [("2.0", False), ("3.0", True)]

    # Refused: a workspace the token's user is not a member of (a tool error the agent reads), a wrong token.
    _, results = _mcp(lumen["url"], lumen["token"],
                      ("answer", {"question": QUESTION, "workspace": "elsewhere"}),
                      ("releases", {"workspace": "elsewhere"}))
    assert all(result.is_error for result in results)
    assert "no workspace 'elsewhere' among yours" in results[0].content[0].text

    request = urllib.request.Request(lumen["url"], method="POST", data=b"{}",
                                     headers={"Authorization": "Bearer docent_wrong",
                                              "Content-Type": "application/json"})
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(request, timeout=30)
    assert refused.value.code == 401 and refused.value.headers["WWW-Authenticate"] == 'Bearer realm="docent"'
    with pytest.raises(ExceptionGroup) as failed:  # the SDK's client: its task groups around the refusal
        _mcp(lumen["url"], "docent_wrong", ("releases", {"workspace": "lumen"}))
    assert "Server returned an error response" in repr(failed.value)


@pytest.mark.parametrize("method", ["get", "delete", "put"])
def test_anything_but_post_is_told_at_once_that_there_is_no_stream(client, method):
    """A GET once held a web thread open with nothing to send until the client gave up."""
    response = getattr(client, method)("/mcp", HTTP_AUTHORIZATION="Bearer docent_anything")
    assert response.status_code == 405 and response["Allow"] == "POST"
    assert "served by POST" in response.json()["error"]
