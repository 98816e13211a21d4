"""`POST /api/v1/answers` and the conversation routes, through a client that checks each answer against the
OpenAPI schema (issue 39): token auth, workspace scope, 400 naming the field, the ask rate."""

from __future__ import annotations

import json

import pytest
from django.test import Client

from chat.models import Conversation, Message
from rag.tokens import api_token_create
from tests.factories import UserFactory, WorkspaceFactory
from tests.openapi_client import SchemaClient

pytestmark = pytest.mark.django_db
QUESTION = "How many requests per minute may an API key send?"
ANSWERS, CONVERSATIONS = "/api/v1/answers", "/api/v1/conversations"
ONE = "/api/v1/conversations/{conversation_id}"
ASK = "/api/v1/conversations/{conversation_id}/messages"


@pytest.fixture
def api(client, user) -> SchemaClient:
    _, raw = api_token_create(user=user, name="integration")
    return SchemaClient(client, token=raw)


def test_an_answer_with_citations_that_open(api, workspace, api_versions, licensed, logged_in_client):
    body = api.call("POST", ANSWERS, ANSWERS, status=200, body={"question": QUESTION, "workspace": workspace.slug})
    answer = body["answer"]
    assert "1200" in answer["text"] and answer["mode"] == "extractive" and answer["abstained"] is False
    assert answer["release"] == {"mode": "present", "version": None, "date": None, "compared": None}
    first = answer["citations"][0]
    assert first["title"] == "Lumen API Reference 3.0" and first["url"].startswith("http://testserver/documents/")
    assert logged_in_client.get(first["url"]).status_code == 200
    # Kept as a conversation of its own: the web chat lists it, the API reads it again.
    assert Conversation.objects.get(pk=body["conversation_id"]).title == QUESTION


def test_an_answer_as_of_a_release(api, workspace, api_versions, licensed):
    body = api.call("POST", ANSWERS, ANSWERS, status=200,
                    body={"question": QUESTION, "workspace": workspace.slug, "as_of_version": "2.0"})
    assert "600" in body["answer"]["text"] and "1200" not in body["answer"]["text"]
    assert body["answer"]["release"]["mode"] == "as_of" and body["answer"]["release"]["version"] == "2.0"


@pytest.mark.parametrize(("payload", "field"), [
    ({}, "question"),
    ({"question": ""}, "question"),
    ({"question": QUESTION, "date": "someday"}, "date"),
    ({"question": QUESTION, "date": "after"}, "after"),
    ({"question": QUESTION, "as_of_version": "2.0", "as_of_date": "2025-01-01"}, "as_of_date"),
    ({"question": QUESTION, "colour": "blue"}, None),  # ignored, as JSON bodies usually are
])
def test_bad_input_is_400_naming_the_field(api, workspace, payload, field):
    if field is None:
        api.call("POST", ANSWERS, ANSWERS, status=200, body=payload)
        return
    body = api.call("POST", ANSWERS, ANSWERS, status=400, body=payload)
    assert body["field"] == field and body["error"].startswith(f"{field}: ")


def test_no_token_is_401_and_another_workspace_is_404(client, api, workspace):
    anonymous = SchemaClient(client)
    assert anonymous.call("POST", ANSWERS, ANSWERS, status=401, body={"question": QUESTION})["error"]
    WorkspaceFactory(slug="strangers")
    body = api.call("POST", ANSWERS, ANSWERS, status=404, body={"question": QUESTION, "workspace": "strangers"})
    assert "strangers" in body["error"]
    api.call("GET", CONVERSATIONS, CONVERSATIONS, status=404, params={"workspace": "strangers"})


def test_the_chat_ask_rate_holds_for_the_api(api, workspace, settings):
    settings.CHAT_ASKS_PER_MINUTE = 1
    api.call("POST", ANSWERS, ANSWERS, status=200, body={"question": "first"})
    refused = api.call("POST", ANSWERS, ANSWERS, status=429, body={"question": "second"})
    assert refused["error"].startswith("At most 1 questions a minute")
    assert Conversation.objects.count() == 1  # issue 49: each refusal left an empty conversation behind


def test_a_conversation_created_asked_in_listed_and_read(api, workspace, api_versions, licensed):
    created = api.call("POST", CONVERSATIONS, CONVERSATIONS, status=201,
                       body={"workspace": workspace.slug, "as_of_version": "2.0"})
    assert created["options"]["as_of_version"] == "2.0" and created["workspace"] == workspace.slug
    path = f"{CONVERSATIONS}/{created['id']}"
    asked = api.call("POST", f"{path}/messages", ASK, status=201, body={"question": QUESTION})
    assert asked["question"]["text"] == QUESTION and "600" in asked["answer"]["text"]
    listed = api.call("GET", CONVERSATIONS, CONVERSATIONS, status=200, params={"workspace": workspace.slug})
    assert listed["count"] == 1 and listed["items"][0]["title"] == QUESTION
    read = api.call("GET", path, ONE, status=200)
    assert [m["role"] for m in read["messages"]] == ["user", "assistant"]
    assert read["messages"][1]["citations"] == asked["answer"]["citations"]


def test_someone_elses_conversation_is_404(api, client, workspace):
    colleague = UserFactory()
    workspace.members.add(colleague)
    theirs = Conversation.objects.create(workspace=workspace, user=colleague)
    api.call("GET", f"{CONVERSATIONS}/{theirs.pk}", ONE, status=404)
    api.call("POST", f"{CONVERSATIONS}/{theirs.pk}/messages", ASK, status=404, body={"question": QUESTION})
    assert not theirs.messages.exists()


def test_a_session_must_send_the_csrf_token_to_ask(user, workspace):
    browser = Client(enforce_csrf_checks=True)
    browser.force_login(user)
    response = browser.post(ANSWERS, {"question": QUESTION}, content_type="application/json")
    assert response.status_code == 403 and "CSRF" in response.json()["error"]


def test_a_member_reads_source_paths_never_the_servers(api, workspace, api_versions, licensed, user, staff_user):
    """Issue 49: citations, closest matches and the stored answer carry the path inside the ingested folder."""
    server = str(api_versions)
    body = api.call("POST", ANSWERS, ANSWERS, status=200, body={"question": QUESTION})
    assert {c["path"] for c in body["answer"]["citations"]} <= {"api-2.0.md", "api-3.0.md"}
    abstained = api.call("POST", ANSWERS, ANSWERS, status=200, body={"question": "How do I bake sourdough bread?"})
    assert abstained["answer"]["closest_matches"] and abstained["answer"]["abstained"]
    assert all("/" not in c["path"] for c in abstained["answer"]["closest_matches"])
    read = api.call("GET", ONE.format(conversation_id=body["conversation_id"]), ONE, status=200)
    assert server not in json.dumps([body, abstained, read])
    assert not any(server in json.dumps(m.metadata) for m in Message.objects.all())

    workspace.members.add(staff_user)
    _, raw = api_token_create(user=staff_user, name="staff")
    staff = SchemaClient(Client(), token=raw).call("POST", ANSWERS, ANSWERS, status=200,
                                                  body={"question": QUESTION, "workspace": workspace.slug})
    assert all(c["path"].startswith(server) for c in staff["answer"]["citations"])
