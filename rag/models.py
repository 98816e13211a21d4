"""Workspaces and everything indexed in them."""

from __future__ import annotations

from django.conf import settings
from django.db import models


class Workspace(models.Model):
    """An isolated set of documents; users see only the workspaces they belong to."""

    slug = models.SlugField(unique=True)
    name = models.CharField(max_length=200)
    members = models.ManyToManyField(settings.AUTH_USER_MODEL, related_name="workspaces", blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name
