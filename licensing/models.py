"""Features (gate keys), tiers that bundle them, and licenses that grant a tier to a workspace.

This app knows no other Docent app: a license points at its workspace through
the lazy reference "rag.Workspace", never through an import.
"""

from __future__ import annotations

import uuid
from datetime import datetime

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.utils import timezone


class Feature(models.Model):
    """A gated capability; `key` is what code passes to `has_feature`."""

    key = models.CharField(max_length=100, unique=True)
    name = models.CharField(max_length=200)
    description = models.TextField(blank=True)

    class Meta:
        ordering = ["key"]

    def __str__(self) -> str:
        return f"{self.name} ({self.key})"


class LicenseTier(models.Model):
    """A tier's name and rank as shown; what it grants is fixed in code (licensing.features.TIER_FEATURES)
    or carried by each key, so that no edit here widens what a signed key grants."""

    slug = models.SlugField(unique=True, help_text="What license keys name; fixed once the tier exists.")
    name = models.CharField(max_length=100)
    rank = models.PositiveSmallIntegerField(
        unique=True,
        help_text="Higher ranks are better tiers; decides which tier to name when several enable a feature.",
    )

    class Meta:
        ordering = ["rank"]

    def __str__(self) -> str:
        return self.name


class LicenseQuerySet(models.QuerySet["License"]):
    """License states at a moment; `at` defaults to now so tests can freeze time."""

    def active(self, at: datetime | None = None) -> LicenseQuerySet:
        at = at or timezone.now()
        return self.filter(Q(valid_until__isnull=True) | Q(valid_until__gt=at), revoked=False, valid_from__lte=at)

    def expired(self, at: datetime | None = None) -> LicenseQuerySet:
        return self.filter(revoked=False, valid_until__lte=at or timezone.now())

    def scheduled(self, at: datetime | None = None) -> LicenseQuerySet:
        return self.filter(revoked=False, valid_from__gt=at or timezone.now())

    def revoked(self) -> LicenseQuerySet:
        return self.filter(revoked=True)


class License(models.Model):
    """A tier granted to one workspace for a period: [valid_from, valid_until), open-ended when no end."""

    license_id = models.UUIDField(
        "license ID", default=uuid.uuid4, unique=True, editable=False,
        help_text="Carried by signed keys; installing the same key twice finds this license again.",
    )
    workspace = models.ForeignKey("rag.Workspace", on_delete=models.CASCADE, related_name="licenses")
    tier = models.ForeignKey(LicenseTier, on_delete=models.PROTECT, related_name="licenses")
    valid_from = models.DateTimeField(default=timezone.now)
    valid_until = models.DateTimeField(null=True, blank=True, help_text="Empty: no end date.")
    issued_to = models.CharField(max_length=200, blank=True)
    revoked = models.BooleanField(default=False)
    revoked_at = models.DateTimeField(null=True, blank=True, editable=False)
    notes = models.TextField(blank=True)
    signed_key = models.TextField(
        blank=True, editable=False, help_text="The key this license was installed from, if any."
    )
    created_at = models.DateTimeField(auto_now_add=True)

    objects = LicenseQuerySet.as_manager()

    class Meta:
        ordering = ["-valid_from"]
        constraints = [
            models.CheckConstraint(
                condition=Q(valid_until__isnull=True) | Q(valid_until__gt=models.F("valid_from")),
                name="license_ends_after_it_starts",
            ),
        ]
        indexes = [models.Index(fields=["workspace", "revoked", "valid_from"], name="license_active_lookup")]

    def __str__(self) -> str:
        return f"{self.tier} for {self.workspace}"

    def status(self, at: datetime | None = None) -> str:
        """One word for lists: active, scheduled, expired or revoked."""
        at = at or timezone.now()
        if self.revoked:
            return "revoked"
        if self.valid_from > at:
            return "scheduled"
        if self.valid_until is not None and self.valid_until <= at:
            return "expired"
        return "active"


class LicenseEvent(models.Model):
    """What happened to a license and who did it, written by the services in licensing.services."""

    class Action(models.TextChoices):
        ISSUE = "issue", "Issued"
        INSTALL = "install", "Installed from a signed key"
        RENEW = "renew", "Renewed from a later issue of its key"
        TIER_CHANGE = "tier_change", "Tier changed"
        REVOKE = "revoke", "Revoked"
        REINSTATE = "reinstate", "Reinstated"
        UPDATE = "update", "Updated"

    license = models.ForeignKey(License, on_delete=models.CASCADE, related_name="events")
    action = models.CharField(max_length=20, choices=Action.choices)
    actor = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    # Commands have no user; the label keeps "manage.py install_license" in the history.
    actor_label = models.CharField(max_length=200, blank=True)
    at = models.DateTimeField(default=timezone.now)
    details = models.JSONField(default=dict, blank=True)

    class Meta:
        ordering = ["-at", "-pk"]

    def __str__(self) -> str:
        return f"{self.get_action_display()} at {self.at:%Y-%m-%d %H:%M}"


class Installation(models.Model):
    """This installation: one row per database, made on first use.

    Its id is what license keys are bound to besides a workspace slug, and it
    remembers the built-in Writer Pro trial it gave, so a trial is given once per
    installation whatever happens to workspaces later.
    """

    installation_id = models.UUIDField("installation ID", default=uuid.uuid4, unique=True, editable=False)
    created_at = models.DateTimeField(auto_now_add=True)
    trial_workspace = models.ForeignKey(
        "rag.Workspace", on_delete=models.SET_NULL, null=True, blank=True, related_name="+", editable=False
    )
    # The slug the demo workspace had when its trial started: renamed, it is no longer the demo.
    trial_workspace_slug = models.SlugField(blank=True, editable=False)
    trial_started_at = models.DateTimeField(null=True, blank=True, editable=False)
    trial_ends_at = models.DateTimeField(null=True, blank=True, editable=False)

    class Meta:
        constraints = [models.CheckConstraint(condition=Q(id=1), name="one_installation_row")]

    def __str__(self) -> str:
        return f"Installation {self.installation_id}"
