"""Workspaces, their members, document types, query expansions and API tokens."""

from __future__ import annotations

from django.conf import settings
from django.contrib.postgres.fields import ArrayField
from django.db import models


class Workspace(models.Model):
    """An isolated set of documents; users see only the workspaces they belong to."""

    slug = models.SlugField(unique=True)
    name = models.CharField(max_length=200)
    members = models.ManyToManyField(settings.AUTH_USER_MODEL, related_name="workspaces", blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    # Set only by the first start (rag.bootstrap) on the demo workspace it creates: the built-in trial
    # follows this mark, so a workspace someone made and named `demo` never gets it.
    builtin_demo = models.BooleanField(default=False, editable=False)
    # What searches may cache is keyed by it (rag.index_cache): database triggers (migration 0021) set it anew,
    # from one sequence, in the same statement as any change to its documents, chunks, records, lineage,
    # calendar, dictionary, sources or licenses; a save from Django never moves it back.
    index_generation = models.BigIntegerField(default=0, editable=False)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name


class DocType(models.Model):
    """One kind of document (api, operations, ...); keywords drive classification and query boosts."""

    slug = models.SlugField(unique=True)
    name = models.CharField(max_length=100)
    keywords = ArrayField(models.CharField(max_length=100), default=list, blank=True,
                          help_text="Words that mark a document or a question as this type.")
    path_patterns = ArrayField(models.CharField(max_length=200), default=list, blank=True,
                               help_text="Case-insensitive substrings or globs of the file path.")

    class Meta:
        ordering = ["slug"]
        verbose_name = "document type"

    def __str__(self) -> str:
        return self.name


class QueryExpansion(models.Model):
    """A workspace's domain term and what it also means: "capacity" -> "throughput, max concurrent workflows".

    Applied to the lexical side of search (rag.retrieval.expansion): a question that says the
    term also looks for its expansions' words, which the documents may use instead.
    """

    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="query_expansions")
    term = models.CharField(max_length=100, help_text="A word or phrase, matched case-blind as whole words.")
    expansions = models.CharField(max_length=1000,
                                  help_text="Comma-separated words or phrases to look for as well.")

    class Meta:
        ordering = ["workspace_id", "term"]
        constraints = [models.UniqueConstraint(fields=["workspace", "term"], name="query_expansion_unique_term")]

    def __str__(self) -> str:
        return f"{self.term} -> {self.expansions}"

    def expansion_list(self) -> list[str]:
        return [part.strip() for part in self.expansions.split(",") if part.strip()]


class ApiToken(models.Model):
    """A personal token for the JSON API (`Authorization: Bearer <token>`), acting as its user.

    Only a SHA-256 of the token is stored: the token is shown once, when made. A
    token is 32 random bytes, so a plain hash is as good as a slow one and lets
    a request find its token by an indexed lookup.
    """

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="api_tokens")
    name = models.CharField(max_length=100, help_text="What the token is for, e.g. 'CI docs check'.")
    prefix = models.CharField(max_length=16, editable=False,
                              help_text="The token's first characters, to recognise it.")
    key_hash = models.CharField(max_length=64, unique=True, editable=False)
    created_at = models.DateTimeField(auto_now_add=True)
    last_used_at = models.DateTimeField(null=True, blank=True, editable=False)
    revoked_at = models.DateTimeField(null=True, blank=True, editable=False)

    class Meta:
        ordering = ["-created_at"]
        verbose_name = "API token"

    def __str__(self) -> str:
        return f"{self.name} ({self.prefix}…)"

    @property
    def revoked(self) -> bool:
        return self.revoked_at is not None
