"""Conversations and their messages; an answer keeps its citations in `metadata`."""

from __future__ import annotations

from django.conf import settings
from django.db import models

from chat.options import ConversationOptions
from rag.models import Workspace


def default_search_options() -> dict:
    """The product's options as stored JSON (the migrations name this function as the fields' default)."""
    return ConversationOptions().as_json()


class Conversation(models.Model):
    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="conversations")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="conversations")
    title = models.CharField(max_length=200, blank=True)
    search_options = models.JSONField(default=default_search_options, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["-updated_at"]
        indexes = [models.Index(fields=["user", "workspace", "-updated_at"])]

    def __str__(self) -> str:
        return self.title or f"Conversation {self.pk}"


class Message(models.Model):
    class Role(models.TextChoices):
        USER = "user", "User"
        ASSISTANT = "assistant", "Assistant"

    conversation = models.ForeignKey(Conversation, on_delete=models.CASCADE, related_name="messages")
    role = models.CharField(max_length=20, choices=Role.choices)
    content = models.TextField(blank=True)
    # {"citations": [...], "search": {...}, "timings": {...}, "mode": "extractive"|"llm", "notice": "..."}
    metadata = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["created_at", "id"]

    def __str__(self) -> str:
        return f"{self.role}: {self.content[:40]}"

    @property
    def citations(self) -> list[dict]:
        return (self.metadata or {}).get("citations") or []


class SearchDefaults(models.Model):
    """The options a user chose, explicitly, as the start of their new conversations in a workspace."""

    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="+")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    search_options = models.JSONField(default=default_search_options, blank=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        verbose_name_plural = "search defaults"
        constraints = [models.UniqueConstraint(fields=["user", "workspace"], name="search_defaults_one_per_user")]

    def __str__(self) -> str:
        return f"{self.user} in {self.workspace}"


class LLMAnswer(Message):
    """Generated answers, as the admin lists them with their citation compliance (chat.citations)."""

    class Meta:
        proxy = True
        verbose_name = "generated answer"
        verbose_name_plural = "generated answers (citation compliance)"
