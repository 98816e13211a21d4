"""Conversation reads, always scoped to their owner."""

from __future__ import annotations

from django.db.models import QuerySet
from django.http import Http404

from chat.models import Conversation
from rag.models import Workspace


def conversation_list(*, user, workspace: Workspace) -> QuerySet[Conversation]:
    return Conversation.objects.filter(user=user, workspace=workspace, workspace__members=user)


def conversation_get(*, user, pk: int) -> Conversation:
    """Only the owner, and only while still a member of the workspace; 404 otherwise."""
    try:
        return Conversation.objects.select_related("workspace").get(pk=pk, user=user, workspace__members=user)
    except Conversation.DoesNotExist:
        raise Http404("No such conversation") from None
