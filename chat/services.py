"""Writes for chat: conversations, options, asking and streaming answers."""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from datetime import datetime, timedelta

from django.conf import settings
from django.db import connection, transaction
from django.utils import timezone
from django.utils.dateparse import parse_datetime

from chat import answering
from chat.models import Conversation, Message, SearchDefaults
from chat.options import ConversationOptions
from chat.selectors import conversation_questions_before
from rag.jobs import task_send

logger = logging.getLogger(__name__)

# How often a generating answer writes its text so far, and how often a reader looks: a few
# writes a second reads as streaming without a write per word.
STREAM_WRITE_INTERVAL = 0.2
STREAM_POLL_INTERVAL = 0.15
# Past the deadline the generator needs a moment to compose and save the extractive fallback.
PENDING_GRACE_SECONDS = 15
EXPIRED_NOTICE = "No answer arrived in time (the server may have restarted); ask again."
QUEUED_TOO_LONG_NOTICE = "Every answer worker was busy until the deadline passed; ask again."
ANSWER_TASK = "chat.tasks.answer_generate"


def conversation_create(*, user, workspace, options: ConversationOptions | None = None,
                        save: bool = True) -> Conversation:
    """A new conversation starts from `options` when given (the API's), else the user's chosen defaults,
    else the product's; never from whatever the previous conversation happened to filter on.

    `save=False`: not stored yet; message_ask stores it once its first question is taken (issue 49).
    """
    if options is None:
        saved = SearchDefaults.objects.filter(user=user, workspace=workspace).first()
        options = ConversationOptions.read(saved.search_options if saved else {})
    conversation = Conversation(user=user, workspace=workspace, search_options=options.as_json())
    if save:
        conversation.save()
    return conversation


def conversation_options_update(*, conversation: Conversation, options: ConversationOptions) -> Conversation:
    conversation.search_options = options.as_json()
    conversation.save(update_fields=["search_options", "updated_at"])
    return conversation


def search_defaults_save(*, conversation: Conversation) -> SearchDefaults:
    """Make this conversation's options where the user's next conversations start."""
    options = ConversationOptions.read(conversation.search_options).as_defaults()
    defaults, _ = SearchDefaults.objects.update_or_create(
        user=conversation.user, workspace=conversation.workspace, defaults={"search_options": options.as_json()},
    )
    return defaults


class AskRefused(Exception):
    """A question not taken now (an answer still being written, too many questions a minute); says which."""


# pg_advisory_xact_lock(namespace, user_id): one user's asks are checked and stored one at a time.
_ASK_LOCK_NAMESPACE = 23_001


def _ask_check(*, conversation: Conversation) -> None:
    """Raise AskRefused unless this user may ask now; the caller holds the user's ask lock."""
    if conversation.pk is not None:  # one not stored yet has no answer pending
        messages_expire_pending(conversation=conversation)
        if conversation.messages.filter(role=Message.Role.ASSISTANT, metadata__pending=True).exists():
            raise AskRefused("The previous answer is still being written; ask again once it is in.")
    limit = settings.CHAT_ASKS_PER_MINUTE
    recent = Message.objects.filter(conversation__user_id=conversation.user_id, role=Message.Role.USER,
                                    created_at__gte=timezone.now() - timedelta(minutes=1)).count()
    if recent >= limit:
        raise AskRefused(f"At most {limit} questions a minute; ask again in a minute.")


def message_ask(*, conversation: Conversation, question: str, stream: bool = False) -> tuple[Message, Message]:
    """Store the question and its answer; with `stream` and an LLM, the answer is left pending and queued.

    This POST is the only thing that starts an LLM call: the generation runs in the
    `answers` queue once the pending row is committed (chat.tasks), and readers of
    the stream only watch the row (see message_stream). Raises AskRefused, storing
    nothing (not even an unsaved `conversation`), while the conversation's previous answer is pending or past the
    user's rate.
    """
    with transaction.atomic():
        with connection.cursor() as cursor:
            # Two tabs asking at once must not both pass the checks below.
            cursor.execute("SELECT pg_advisory_xact_lock(%s, %s)", [_ASK_LOCK_NAMESPACE, conversation.user_id])
        _ask_check(conversation=conversation)
        if conversation.pk is None:  # stored only now: a refused ask leaves no empty conversation (issue 49)
            conversation.save()
        asked = Message.objects.create(conversation=conversation, role=Message.Role.USER, content=question)
        if not conversation.title:
            conversation.title = question[:80]
        conversation.save(update_fields=["title", "updated_at"])
        if stream and answering.llm_configured():
            reply = Message.objects.create(
                conversation=conversation, role=Message.Role.ASSISTANT, content="",
                metadata={"pending": True, "started_at": timezone.now().isoformat()},
            )
            # By name: chat.tasks imports this module. Routed to the `answers` queue (CELERY_TASK_ROUTES).
            transaction.on_commit(lambda: task_send(ANSWER_TASK, reply.pk))
            return asked, reply
    previous = conversation_questions_before(conversation=conversation, before_id=asked.pk)
    result = answering.answer(question, workspace=conversation.workspace, options=conversation.search_options,
                              previous=previous)
    reply = Message.objects.create(
        conversation=conversation, role=Message.Role.ASSISTANT, content=result.text, metadata=result.metadata()
    )
    return asked, reply


def _message_claim(message_id: int) -> Message | None:
    """Mark a pending message as being generated; None if it is not pending or someone already claimed it."""
    with transaction.atomic():
        # The row lock makes the check-and-mark one step: two starters cannot both win.
        message = Message.objects.select_for_update().select_related("conversation__workspace").filter(
            pk=message_id).first()
        if message is None or not message.metadata.get("pending") or message.metadata.get("generating"):
            return None
        message.metadata = {**message.metadata, "generating": True}
        message.save(update_fields=["metadata"])
    return message


def message_generate(*, message_id: int) -> None:
    """Write a pending LLM answer into its row as it arrives, then finish it; runs at most once per message.

    The deadline counts from the question, so time spent waiting in the queue is part of it.
    """
    try:
        message = _message_claim(message_id)
        if message is None:
            return
        started = parse_datetime(message.metadata.get("started_at") or "") or timezone.now()
        left = settings.LLM_ANSWER_DEADLINE_SECONDS - (timezone.now() - started).total_seconds()
        if left <= 0:
            message_fail(message_id=message_id, notice=QUEUED_TOO_LONG_NOTICE)
            return
        question = message.conversation.messages.filter(role=Message.Role.USER, id__lt=message.pk).last()
        previous = conversation_questions_before(conversation=message.conversation, before_id=question.pk) \
            if question else []
        written, last_write = "", time.monotonic()
        final: answering.Answer | None = None
        for piece in answering.answer_stream(
            question.content if question else "", workspace=message.conversation.workspace,
            options=message.conversation.search_options, deadline=time.monotonic() + left, previous=previous,
        ):
            if isinstance(piece, answering.Answer):
                final = piece
                continue
            written += piece
            if time.monotonic() - last_write >= STREAM_WRITE_INTERVAL:
                Message.objects.filter(pk=message.pk, metadata__pending=True).update(content=written)
                last_write = time.monotonic()
        if final is not None:
            message_finish(message=message, answer=final)
    except Exception:  # SoftTimeLimitExceeded included: the message must not stay pending
        logger.exception("answer generation failed message_id=%s", message_id)
        message_fail(message_id=message_id, notice="The answer could not be generated; ask again.")


def message_finish(*, message: Message, answer: answering.Answer) -> bool:
    """Save a finished answer over its pending row, unless it was already finished (e.g. expired).

    The one place where a streamed answer becomes final: later steps that look at
    a finished answer (citation checks, figures) belong here.
    """
    with transaction.atomic():
        current = Message.objects.select_for_update().filter(pk=message.pk, metadata__pending=True).first()
        if current is None:
            return False
        current.content = answer.text
        current.metadata = answer.metadata()
        current.save(update_fields=["content", "metadata"])
    message.content, message.metadata = current.content, current.metadata
    return True


def message_fail(*, message_id: int, notice: str) -> bool:
    """Finish a pending message as failed, keeping no half-written text; False if it was not pending."""
    with transaction.atomic():
        current = Message.objects.select_for_update().filter(pk=message_id, metadata__pending=True).first()
        if current is None:
            return False
        current.content = ""
        current.metadata = {"mode": "failed", "failed": True, "notice": notice, "citations": []}
        current.save(update_fields=["content", "metadata"])
    return True


def _pending_too_long(metadata: dict, *, now: datetime) -> bool:
    started = parse_datetime(metadata.get("started_at") or "")
    limit = timedelta(seconds=settings.LLM_ANSWER_DEADLINE_SECONDS + PENDING_GRACE_SECONDS)
    return started is None or now - started > limit


def messages_expire_pending(*, conversation: Conversation) -> int:
    """Finish as failed the pending answers older than the deadline (their generator died or hung)."""
    now = timezone.now()
    expired = 0
    for pk, metadata in conversation.messages.filter(metadata__pending=True).values_list("pk", "metadata"):
        if _pending_too_long(metadata, now=now) and message_fail(message_id=pk, notice=EXPIRED_NOTICE):
            expired += 1
    return expired


def message_stream(*, message: Message) -> Iterator[str]:
    """The text of a pending answer as it is written, read from its row: watching never starts generation.

    Any number of readers (a reload, a second tab) see the same text; the stream
    ends when the answer is finished, when its text is replaced by the final one,
    when it expires, or after CHAT_STREAM_MAX_SECONDS (the page then looks again),
    so that no reader holds a web thread for a whole slow answer.
    """
    sent = ""
    until = time.monotonic() + settings.CHAT_STREAM_MAX_SECONDS
    while True:
        row = Message.objects.filter(pk=message.pk).values("content", "metadata").first()
        if row is None:
            return
        content, metadata = row["content"], row["metadata"] or {}
        if not content.startswith(sent):
            return  # replaced by a different final text (a fallback): the page swaps in the saved message
        if len(content) > len(sent):
            yield content[len(sent):]
            sent = content
        if not metadata.get("pending"):
            return
        if _pending_too_long(metadata, now=timezone.now()):
            message_fail(message_id=message.pk, notice=EXPIRED_NOTICE)
            return
        if time.monotonic() >= until:
            return
        time.sleep(STREAM_POLL_INTERVAL)
