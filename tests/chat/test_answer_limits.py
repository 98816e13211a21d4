"""Answers never run in a web process, and nothing a user does holds the web server: generation is a task
in the `answers` queue, one pending answer per conversation, a rate per user, streams bounded in time and count."""

from __future__ import annotations

import threading
import time
from datetime import timedelta

import pytest
from celery import current_app
from django.test import Client
from django.utils import timezone

from chat import services
from chat.models import Conversation, Message
from rag.jobs.broker import broker_task_args

QUESTION = "How many requests per minute may an API key send?"


@pytest.fixture(autouse=True)
def answers_queue_emptied():
    """Tasks these tests queue stay in Redis: the next worker on the answers queue must not inherit them."""
    yield
    with current_app.connection_for_write() as connection:
        connection.default_channel.queue_purge("answers")


def _ask(client: Client, conversation: Conversation, *, htmx: bool = True):
    headers = {"HX-Request": "true"} if htmx else {}
    return client.post(f"/chat/{conversation.pk}/ask/", {"question": QUESTION}, headers=headers)


def _pending(conversation: Conversation, *, content: str = "", age: float = 0) -> Message:
    started = (timezone.now() - timedelta(seconds=age)).isoformat()
    return Message.objects.create(conversation=conversation, role="assistant", content=content,
                                  metadata={"pending": True, "started_at": started})


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
@pytest.mark.parametrize("htmx", [True, False], ids=["htmx", "plain-post"])
def test_asking_queues_the_generation_and_no_web_thread_runs_it(logged_in_client, conversation, api_versions, llm,
                                                                 htmx):
    threads_before = threading.active_count()
    assert _ask(logged_in_client, conversation, htmx=htmx).status_code in (200, 302)
    reply = conversation.messages.get(role="assistant")
    assert (reply.pk,) in broker_task_args("chat.tasks.answer_generate")  # waiting in the answers queue
    time.sleep(1)
    reply.refresh_from_db()
    assert reply.metadata["pending"] and reply.content == "" and llm.requests == []
    assert threading.active_count() == threads_before


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_one_pending_answer_per_conversation(logged_in_client, conversation, workspace, user, llm):
    assert _ask(logged_in_client, conversation).status_code == 200
    second = _ask(logged_in_client, conversation)
    assert second.status_code == 429 and "still being written" in second.content.decode()
    assert second["HX-Retarget"] == "#ask-error"
    assert conversation.messages.count() == 2  # the second question was not stored
    other = Conversation.objects.create(workspace=workspace, user=user)
    assert _ask(logged_in_client, other).status_code == 200  # another conversation may ask meanwhile


@pytest.mark.django_db
def test_a_user_past_the_rate_is_refused_with_the_question_kept(logged_in_client, conversation, api_versions,
                                                                settings):
    settings.CHAT_ASKS_PER_MINUTE = 2
    assert _ask(logged_in_client, conversation, htmx=False).status_code == 302
    assert _ask(logged_in_client, conversation, htmx=False).status_code == 302
    refused = _ask(logged_in_client, conversation, htmx=False)
    assert refused.status_code == 429 and "At most 2 questions a minute" in refused.content.decode()
    assert f">{QUESTION}</textarea>" in refused.content.decode()
    assert conversation.messages.filter(role="user").count() == 2
    Message.objects.filter(conversation=conversation).update(created_at=timezone.now() - timedelta(minutes=2))
    assert _ask(logged_in_client, conversation, htmx=False).status_code == 302


@pytest.mark.django_db
def test_a_stream_ends_at_its_time_limit_while_the_answer_is_still_written(logged_in_client, conversation, settings):
    settings.CHAT_STREAM_MAX_SECONDS = 0.5
    reply = _pending(conversation, content="So far")
    body = b"".join(logged_in_client.get(f"/chat/messages/{reply.pk}/stream/").streaming_content)
    reply.refresh_from_db()
    # The stream ended while the answer is still pending: only its time limit ends it so.
    assert body == b"So far" and reply.metadata["pending"]


@pytest.mark.django_db
def test_streams_per_process_are_bounded_and_a_closed_one_frees_its_slot(logged_in_client, conversation, settings):
    settings.CHAT_STREAMS_PER_PROCESS, settings.CHAT_STREAM_MAX_SECONDS = 1, 0.2
    reply = _pending(conversation, content="So far")
    url = f"/chat/messages/{reply.pk}/stream/"
    first = logged_in_client.get(url)  # open, not yet read: it holds the slot
    busy = logged_in_client.get(url)
    assert busy.status_code == 429 and busy["Retry-After"] == "2"
    assert b"".join(first.streaming_content) == b"So far"  # read to its end: the slot is free again
    assert logged_in_client.get(url).status_code == 200


@pytest.mark.django_db
def test_an_answer_that_waited_past_its_deadline_in_the_queue_fails_without_calling_the_model(conversation, llm,
                                                                                              settings):
    settings.LLM_ANSWER_DEADLINE_SECONDS = 5
    reply = _pending(conversation, age=6)
    services.message_generate(message_id=reply.pk)
    reply.refresh_from_db()
    assert reply.metadata["failed"] and reply.metadata["notice"] == services.QUEUED_TOO_LONG_NOTICE
    assert llm.requests == []
