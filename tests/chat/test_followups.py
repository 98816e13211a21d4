"""Conversations remember, typos are read (issue 51): chat.followups' rewriting, pure text, and one follow-up
through the API's conversation route."""

from __future__ import annotations

import pytest
from django.template.loader import render_to_string

from chat.followups import correct_typos, question_in_context
from chat.models import Message
from rag.models import Chunk
from rag.retrieval import workspace_vocabulary
from rag.tokens import api_token_create
from tests.openapi_client import SchemaClient

VOCABULARY = {word: 3 for word in """
what is the default upstream timeout how long does an admin api access token stay valid port listen on which
setting holds database connection string rate limit per key maximum request body size proxy gateway was time
report
""".split()}
LABELS = ["2.0", "2.1", "3.0"]


def _in_context(question: str, *previous: str):
    return question_in_context(question, list(previous), VOCABULARY, known_labels=LABELS)


def test_typos_are_read_as_the_workspace_words():
    asked = _in_context("whats the defualt upstrem timout?")
    assert asked.question == asked.read_as == "whats the default upstream timeout?"
    assert asked.asked_as == ""


@pytest.mark.parametrize("question", [
    "Is proxy.upstrem_timout set?",  # an identifier
    "What does LG1504 mean?",  # a code
    "Does PostgreSQL 16 wrk?",  # too short to correct, and a product's name
    "Where is `lumenctl snapshto` documented?",  # a code token
    "What is the default timeout?",  # known words
    "qwzx vbnm plokij hytred?",  # nonsense, not typos
    "How do I repot an orchid?",  # about something else: "repot" is no slip for "report"
])
def test_what_is_never_corrected(question):
    assert correct_typos(question, VOCABULARY) == (question, [])


def test_a_dropped_letter_and_a_plural_are_read_as_the_word():
    vocabulary = {**VOCABULARY, "latest": 1, "last": 9, "uploads": 2}
    assert correct_typos("What is the laest upliad limit?", vocabulary)[1] == [("laest", "latest"),
                                                                               ("upliad", "upload")]


def test_inflections_of_known_words_are_no_typos():
    assert correct_typos("How long do tokens stay valid?", VOCABULARY)[1] == []
    assert correct_typos("Which settings hold timeouts?", VOCABULARY)[1] == []
    assert correct_typos("Is the timout set?", VOCABULARY)[1] == [("timout", "timeout")]  # not "time" + "-out"


@pytest.mark.parametrize(("follow_up", "asked_as"), [
    ("And in 2.0?", "What port does the admin API listen on, in 2.0?"),
    ("What was it in 2.0?", "What port does the admin API listen on, in 2.0?"),
    ("What about 2.1?", "What port does the admin API listen on, in 2.1?"),
    ("and for version 2.1?", "What port does the admin API listen on, for version 2.1?"),
    ("and its default?", "What port does the admin API listen on, and its default?"),
    ("and the maximum?", "What port does the admin API listen on, and the maximum?"),
])
def test_a_follow_up_takes_the_previous_subject(follow_up, asked_as):
    asked = _in_context(follow_up, "What port does the admin API listen on?")
    assert asked.question == asked.asked_as == asked_as


@pytest.mark.parametrize(("previous", "asked_as"), [
    ("What was the rate limit per API key in 2.1?", "What was the rate limit per API key in 3.0?"),
    ("Which admin port did 2.0 use?", "Which admin port did 3.0 use?"),
    ("In v2.0, which setting held the database connection string?",
     "In v3.0, which setting held the database connection string?"),
    ("What changed in the rate limit between 2.0 and 2.1?", "What changed in the rate limit, in 3.0?"),
])
def test_the_previous_scope_is_replaced_not_added(previous, asked_as):
    assert _in_context("And in 3.0?", previous).asked_as == asked_as


def test_an_attribute_keeps_the_previous_scope():
    asked = _in_context("and its default?", "Which setting held the upstream timeout in 2.0?")
    assert asked.asked_as == "Which setting held the upstream timeout in 2.0, and its default?"


@pytest.mark.parametrize("question", [
    "Which admin port did 2.0 use?",  # a subject of its own, with a release
    "What is new in 2.1?",
    "What is the maximum request body size?",
    "And in 2.0?",  # nothing before it: nothing to take
])
def test_a_question_with_its_own_subject_stands_alone(question):
    previous = [] if question == "And in 2.0?" else ["What port does the admin API listen on?"]
    asked = _in_context(question, *previous)
    assert asked.question == question and asked.asked_as == ""


@pytest.mark.django_db(transaction=True)  # a generation is set when a change commits
def test_the_vocabulary_is_read_once_until_documents_change(workspace, api_versions, django_assert_num_queries):
    words = workspace_vocabulary(workspace_id=workspace.pk)
    assert {"rate", "limits", "header", "dashboard"} <= set(words)
    with django_assert_num_queries(1):  # the workspace's generation only: nothing has changed
        assert workspace_vocabulary(workspace_id=workspace.pk) is words
    Chunk.objects.filter(workspace=workspace).update(text="throttling quotas", heading_path="")  # a change moves the generation
    fresh = workspace_vocabulary(workspace_id=workspace.pk)
    assert "throttling" in fresh and "dashboard" not in fresh


@pytest.mark.django_db
def test_a_follow_up_in_an_api_conversation(client, user, workspace, api_versions, licensed):
    """docs/api.md's example: "And in 2.0?" after a question, in the same conversation."""
    _, raw = api_token_create(user=user, name="integration")
    api = SchemaClient(client, token=raw)
    route = "/api/v1/conversations/{conversation_id}/messages"
    first = api.call("POST", "/api/v1/answers", "/api/v1/answers", status=200,
                     body={"question": "How many requests per minute may an API key send?", "workspace": workspace.slug})
    assert "1200" in first["answer"]["text"] and first["answer"]["asked_as"] == ""
    path = f"/api/v1/conversations/{first['conversation_id']}/messages"
    follow = api.call("POST", path, route, status=201, body={"question": "And in 2.0?"})
    assert follow["answer"]["asked_as"] == "How many requests per minute may an API key send, in 2.0?"
    assert "600" in follow["answer"]["text"] and follow["answer"]["release"]["version"] == "2.0"
    again = api.call("POST", path, route, status=201, body={"question": "and in 3.0?"})  # chained: same subject
    assert again["answer"]["asked_as"] == "How many requests per minute may an API key send, in 3.0?"
    assert "1200" in again["answer"]["text"]


@pytest.mark.django_db
def test_the_page_shows_what_was_asked_escaped(conversation):
    message = Message.objects.create(conversation=conversation, role=Message.Role.ASSISTANT, content="It is 9000.",
                                     metadata={"mode": "extractive", "citations": [],
                                               "asked_as": "What port <b>listens</b>, in 2.0?"})
    html = render_to_string("chat/partials/_message.html", {"message": message})
    assert "asked as: What port &lt;b&gt;listens&lt;/b&gt;, in 2.0?" in html
