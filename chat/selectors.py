"""Conversation reads, always scoped to their owner."""

from __future__ import annotations

from django.db.models import QuerySet
from django.http import Http404

from chat.models import Conversation, Message
from rag.models import Workspace


def conversation_list(*, user, workspace: Workspace) -> QuerySet[Conversation]:
    return Conversation.objects.filter(user=user, workspace=workspace, workspace__members=user)


def conversation_get(*, user, pk: int) -> Conversation:
    """Only the owner, and only while still a member of the workspace; 404 otherwise."""
    try:
        return Conversation.objects.select_related("workspace").get(pk=pk, user=user, workspace__members=user)
    except Conversation.DoesNotExist:
        raise Http404("No such conversation") from None


def conversation_questions_before(*, conversation: Conversation, before_id: int, limit: int = 3) -> list[str]:
    """The conversation's last `limit` questions before message `before_id`, oldest first, each as it was
    answered: a follow-up's "asked as" (chat.followups), so "And in 2.1?" after "And in 2.0?" keeps the subject."""
    rows = list(conversation.messages.filter(id__lt=before_id).order_by("-id")
                .values_list("role", "content", "metadata")[:limit * 2])
    questions: list[str] = []
    answered_as = ""
    for role, content, metadata in rows:  # newest first: an answer comes before its question
        if role == Message.Role.ASSISTANT:
            answered_as = (metadata or {}).get("asked_as") or ""
            continue
        questions.append(answered_as or content)
        answered_as = ""
    return questions[:limit][::-1]


def conversation_sidebar(*, user, workspace: Workspace, limit: int | None = 30) -> list[tuple[Conversation, str]]:
    """The latest conversations (all with `limit=None`) with the label each gets in a list.

    Titles are the first question, so two conversations often share one; the later ones are
    numbered in the order they were started ("Rate limits (2)") so the list tells them apart.
    """
    conversations = list(conversation_list(user=user, workspace=workspace)[:limit])
    by_title: dict[str, list[Conversation]] = {}
    for conversation in sorted(conversations, key=lambda c: (c.created_at, c.pk)):
        by_title.setdefault(str(conversation), []).append(conversation)
    labels = {
        conversation.pk: title if number == 1 else f"{title} ({number})"
        for title, same in by_title.items()
        for number, conversation in enumerate(same, start=1)
    }
    return [(conversation, labels[conversation.pk]) for conversation in conversations]


def citation_compliance_by_week(*, messages: QuerySet) -> list[dict]:
    """Per workspace and ISO week, the share of generated-answer sentences that cite a valid source.

    Read from each answer's stored compliance (chat.citations), so the figure is what the reader saw.
    Admin-only (staff see every workspace), newest week first.
    """
    from django.db.models.functions import TruncWeek

    rows = (messages.filter(role="assistant", metadata__mode="llm", metadata__has_key="compliance")
            .annotate(week=TruncWeek("created_at"))
            .values_list("conversation__workspace__name", "week", "metadata"))
    buckets: dict[tuple[str, object], dict] = {}
    for workspace, week, metadata in rows:
        compliance = metadata["compliance"]
        bucket = buckets.setdefault((workspace, week), {"workspace": workspace, "week": week, "answers": 0,
                                                        "sentences": 0, "cited": 0, "invalid": 0, "uncited_sources": 0})
        bucket["answers"] += 1
        bucket["sentences"] += compliance.get("sentences", 0)
        bucket["cited"] += compliance.get("cited_sentences", 0)
        bucket["invalid"] += len(compliance.get("invalid_markers", []))
        bucket["uncited_sources"] += len(compliance.get("uncited_sources", []))
    for bucket in buckets.values():
        bucket["rate"] = bucket["cited"] / bucket["sentences"] if bucket["sentences"] else 1.0
    return sorted(buckets.values(), key=lambda b: (b["workspace"], -b["week"].timestamp()))
