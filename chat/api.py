"""JSON API, chat's part: `POST /api/v1/answers` and the conversations a client keeps.

Asking goes through chat.services.message_ask, as in the web chat: the same answer, the same stored
conversation, the same questions-per-minute limit (CHAT_ASKS_PER_MINUTE, 429 past it). A one-off answer is
kept as a conversation of its own, so that its citations can be read again and the limit counts it.
"""

from __future__ import annotations

import datetime as dt
from typing import Any, Literal

from django.db.models import QuerySet
from django.http import HttpRequest
from ninja import Field, Router, Schema, Status
from ninja.errors import HttpError
from ninja.pagination import paginate

from chat import services
from chat.models import Conversation, Message
from chat.options import ConversationOptions
from chat.selectors import conversation_get, conversation_list
from rag.api import ApiError, api_base_url, api_workspace
from rag.retrieval import chunk_url_path
from rag.selectors import paths_as_seen, sees_server_paths

router = Router(tags=["answers"])
REFUSALS = {400: ApiError, 401: ApiError, 403: ApiError, 404: ApiError, 429: ApiError}


# The body's options are a conversation's (chat.options: their defaults and rules), so the API asks what the
# panel asks; pydantic's errors name the field, and config.api answers them with a 400 that says which.
class Workspaced(ConversationOptions):
    workspace: str = Field("", description="a workspace's slug (default: the session's, else your first)")


class AnswerIn(Workspaced):
    question: str = Field(..., min_length=1, max_length=2000)


class AskIn(Schema):
    question: str = Field(..., min_length=1, max_length=2000)


class CitationOut(Schema):
    n: int = Field(description="the [n] marker in the answer's text")
    chunk_id: int
    document_id: int
    title: str
    path: str
    url: str = Field(description="the document page at the cited passage")
    doc_date: str | None
    heading_path: str
    page: int | None
    relevance: float
    sentence_ids: list[str]
    version_label: str
    is_latest_version: bool
    superseded_by_label: str
    has_contradictions: bool


class ClosestOut(Schema):
    chunk_id: int
    document_id: int
    title: str
    path: str
    url: str
    relevance: float


class ReleaseOut(Schema):
    """Which release the answer speaks for: the newest (present), one asked for (as_of), or two compared."""

    mode: Literal["present", "as_of", "change"]
    version: str | None = None
    date: str | None = None
    compared: list[str] | None = None


class MessageOut(Schema):
    id: int
    role: Literal["user", "assistant"]
    text: str
    created_at: dt.datetime
    mode: str | None = Field(None, description="extractive, llm or failed (answers only)")
    notice: str = ""
    abstained: bool = False
    pending: bool = Field(False, description="an answer still being written in the web chat")
    citations: list[CitationOut] = []
    closest_matches: list[ClosestOut] = Field([], description="an abstention's nearest sources (not citations)")
    release: ReleaseOut | None = None
    asked_as: str = Field("", description="a follow-up as answered, its subject taken from the conversation's "
                                          "previous question (\"What port ..., in 2.0?\"); empty otherwise")
    read_as: str = Field("", description="the question with its typos corrected, as answered; empty if none was")


class AnswerOut(Schema):
    conversation_id: int
    question: MessageOut
    answer: MessageOut


class ConversationOut(Schema):
    id: int
    workspace: str = Field(description="its slug")
    title: str
    options: dict[str, Any] = Field(description="what its answers search (the fields of POST /conversations)")
    created_at: dt.datetime
    updated_at: dt.datetime

    @staticmethod
    def resolve_workspace(conversation: Conversation) -> str:
        return conversation.workspace.slug

    @staticmethod
    def resolve_title(conversation: Conversation) -> str:
        return str(conversation)

    @staticmethod
    def resolve_options(conversation: Conversation) -> dict[str, Any]:
        return conversation.search_options


class ConversationDetailOut(ConversationOut):
    messages: list[MessageOut] = Field(description="questions and answers, oldest first")

    @staticmethod
    def resolve_messages(conversation: Conversation, context: dict[str, Any]) -> list[dict[str, Any]]:
        request = context["request"]
        return _paths([_message(request, message) for message in conversation.messages.all()], request)


def _url(request: HttpRequest, source: dict) -> str:
    return api_base_url(request) + chunk_url_path(document_id=source["document_id"], chunk_id=source["chunk_id"])


def _release(metadata: dict) -> dict | None:
    versions = (metadata.get("search") or {}).get("stats", {}).get("versions")
    if not versions:
        return None
    return {"mode": versions["mode"], "version": versions.get("as_of_version"), "date": versions.get("as_of_date"),
            "compared": versions.get("change")}


def _message(request: HttpRequest, message: Message) -> dict[str, Any]:
    metadata = message.metadata or {}
    return {
        "id": message.pk, "role": message.role, "text": message.content, "created_at": message.created_at,
        "mode": metadata.get("mode"), "notice": metadata.get("notice") or "",
        "abstained": bool(metadata.get("abstained")), "pending": bool(metadata.get("pending")),
        "citations": [{**c, "title": c["document_title"], "url": _url(request, c)} for c in message.citations],
        "closest_matches": [{**c, "title": c["document_title"], "url": _url(request, c)}
                            for c in metadata.get("closest") or []],
        "release": _release(metadata),
        "asked_as": metadata.get("asked_as") or "", "read_as": metadata.get("read_as") or "",
    }


def _paths(messages: list[dict[str, Any]], request: HttpRequest) -> list[dict[str, Any]]:
    """Sources' paths as the caller may read them: the server's for staff, else inside the source (issue 49)."""
    return paths_as_seen(messages, full=sees_server_paths(request.auth))


def _ask(request: HttpRequest, conversation: Conversation, question: str) -> dict[str, Any]:
    try:
        asked, reply = services.message_ask(conversation=conversation, question=question.strip())
    except services.AskRefused as exc:
        raise HttpError(429, str(exc)) from None
    question, answer = _paths([_message(request, asked), _message(request, reply)], request)
    return {"conversation_id": conversation.pk, "question": question, "answer": answer}


@router.post("/answers", response={200: AnswerOut, **REFUSALS}, url_name="answers")
def answer_create(request: HttpRequest, payload: AnswerIn) -> dict[str, Any]:
    """Answer one question from a workspace's documents, with citations (kept as a new conversation)."""
    workspace = api_workspace(request, payload.workspace.strip())
    conversation = services.conversation_create(user=request.auth, workspace=workspace, options=payload,
                                                save=False)  # stored by the ask, if it is taken
    return _ask(request, conversation, payload.question)


@router.get("/conversations", response={200: list[ConversationOut], **REFUSALS}, url_name="conversations")
@paginate
def conversations(request: HttpRequest, workspace: str = "") -> QuerySet[Conversation]:
    """Your conversations in a workspace, latest first."""
    chosen = api_workspace(request, workspace.strip())
    return conversation_list(user=request.auth, workspace=chosen).select_related("workspace")


@router.post("/conversations", response={201: ConversationOut, **REFUSALS}, url_name="conversation-create")
def conversation_create(request: HttpRequest, payload: Workspaced) -> Status[Conversation]:
    """A new conversation with these options; ask in it with POST /conversations/{id}/messages."""
    workspace = api_workspace(request, payload.workspace.strip())
    conversation = services.conversation_create(user=request.auth, workspace=workspace, options=payload)
    return Status(201, conversation)


@router.get("/conversations/{conversation_id}", response={200: ConversationDetailOut, **REFUSALS},
            url_name="conversation")
def conversation_read(request: HttpRequest, conversation_id: int) -> Conversation:
    """A conversation of yours with its questions and answers (404 for anyone else's)."""
    return conversation_get(user=request.auth, pk=conversation_id)


@router.post("/conversations/{conversation_id}/messages", response={201: AnswerOut, **REFUSALS},
             url_name="conversation-ask")
def conversation_ask(request: HttpRequest, conversation_id: int, payload: AskIn) -> Status[dict[str, Any]]:
    """Ask in a conversation: the answer uses the conversation's options."""
    conversation = conversation_get(user=request.auth, pk=conversation_id)
    return Status(201, _ask(request, conversation, payload.question))
