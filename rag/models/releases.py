"""The release calendar: each release of a series the workspace documents, when it came out and who said so."""

from __future__ import annotations

from django.conf import settings
from django.db import models

from rag.models.documents import Document
from rag.models.workspaces import Workspace


class Release(models.Model):
    """A release of a series, read from a series page (its title or a changelog heading and the date under it) or
    entered by staff. A staff row is the calendar's word on its release: it dates it, or hides a release read by
    mistake; read rows follow their pages (a page archived or re-indexed takes or changes its rows)."""

    class Source(models.TextChoices):
        PAGE = "page", "read from a series page"
        STAFF = "staff", "set by staff"

    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="releases")
    series = models.CharField(max_length=100, blank=True, help_text="The project ('Django'); empty when unnamed.")
    version = models.CharField(max_length=50)
    version_key = models.CharField(max_length=100, help_text="version in a form that sorts as versions do.")
    date = models.DateField(null=True, blank=True)
    source = models.CharField(max_length=10, choices=Source.choices, default=Source.PAGE)
    document = models.ForeignKey(Document, null=True, blank=True, on_delete=models.CASCADE, related_name="+",
                                 help_text="The page it was read from.")
    how = models.CharField(max_length=20, blank=True, help_text="title, heading, or the page's own date.")
    hidden = models.BooleanField(default=False, help_text="Staff: not a release of this workspace's series.")
    set_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
                               related_name="+")
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["series", "version_key"]
        indexes = [models.Index(fields=["workspace", "version_key"], name="release_workspace_key")]

    def __str__(self) -> str:
        return f"{self.series} {self.version}".strip()
