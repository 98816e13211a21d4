"""Writes for chat: conversations, options, asking and streaming answers."""

from __future__ import annotations

import logging
from collections.abc import Iterator

from django.db import transaction

from chat import answering
from chat.models import Conversation, Message, SearchDefaults, default_search_options

logger = logging.getLogger(__name__)


def conversation_create(*, user, workspace) -> Conversation:
    """A new conversation starts from the user's chosen defaults, else the product's; never from
    whatever the previous conversation happened to filter on."""
    saved = SearchDefaults.objects.filter(user=user, workspace=workspace).first()
    options = {**default_search_options(), **(saved.search_options if saved else {})}
    return Conversation.objects.create(user=user, workspace=workspace, search_options=options)


def conversation_options_update(*, conversation: Conversation, options: dict) -> Conversation:
    conversation.search_options = {**default_search_options(), **options}
    conversation.save(update_fields=["search_options", "updated_at"])
    return conversation


# "As of" a version or date answers one conversation's question about the past; a default would
# quietly date every new conversation.
_NOT_DEFAULTS = ("as_of_version", "as_of_date")


def search_defaults_save(*, conversation: Conversation) -> SearchDefaults:
    """Make this conversation's options where the user's next conversations start."""
    options = {key: value for key, value in conversation.search_options.items() if key not in _NOT_DEFAULTS}
    defaults, _ = SearchDefaults.objects.update_or_create(
        user=conversation.user, workspace=conversation.workspace, defaults={"search_options": options},
    )
    return defaults


def message_ask(*, conversation: Conversation, question: str, stream: bool = False) -> tuple[Message, Message]:
    """Store the question and its answer; with `stream` and an LLM, the answer is left pending."""
    with transaction.atomic():
        asked = Message.objects.create(conversation=conversation, role=Message.Role.USER, content=question)
        if not conversation.title:
            conversation.title = question[:80]
        conversation.save(update_fields=["title", "updated_at"])
    if stream and answering.llm_configured():
        reply = Message.objects.create(
            conversation=conversation, role=Message.Role.ASSISTANT, content="", metadata={"pending": True}
        )
        return asked, reply
    result = answering.answer(question, workspace=conversation.workspace, options=conversation.search_options)
    reply = Message.objects.create(
        conversation=conversation, role=Message.Role.ASSISTANT, content=result.text, metadata=result.metadata()
    )
    return asked, reply


def message_stream(*, message: Message) -> Iterator[str]:
    """Generate a pending LLM answer piece by piece; the finished answer is saved with its citations."""
    if not message.metadata.get("pending"):
        return
    question = message.conversation.messages.filter(role=Message.Role.USER, id__lt=message.pk).last()
    final: answering.Answer | None = None
    for piece in answering.answer_stream(
        question.content if question else "", workspace=message.conversation.workspace,
        options=message.conversation.search_options,
    ):
        if isinstance(piece, answering.Answer):
            final = piece
        else:
            yield piece
    if final is not None:
        message.content = final.text
        message.metadata = final.metadata()
        message.save(update_fields=["content", "metadata"])
