"""Gating and license writes. `has_feature` is the single place where a gate is decided.

Reads are cached for one request at most (see `feature_cache` and
licensing.middleware), so a change made in the admin shows on the next request
without a restart, and a page that asks about ten gates runs one query.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, TypeVar

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser
from django.db import models, transaction
from django.utils import timezone

from licensing.features import REGISTRY
from licensing.keys import LicenseKeyError, load_public_key, verify_license_key
from licensing.models import License, LicenseEvent, LicenseTier

logger = logging.getLogger(__name__)

EXPIRY_NOTICE = timedelta(days=14)
T = TypeVar("T")

# None outside a request (commands, tasks): every call then reads the database.
_request_cache: ContextVar[dict[tuple[str, int], Any] | None] = ContextVar("licensing_request_cache", default=None)


@contextmanager
def feature_cache() -> Iterator[None]:
    """Cache gate decisions for the duration of the block (one request, one task)."""
    token = _request_cache.set({})
    try:
        yield
    finally:
        _request_cache.reset(token)


def _cached(kind: str, workspace_id: int, compute: Callable[[], T]) -> T:
    cache = _request_cache.get()
    if cache is None:
        return compute()
    if (kind, workspace_id) not in cache:
        cache[(kind, workspace_id)] = compute()
    return cache[(kind, workspace_id)]


def _forget_cached() -> None:
    """A write in this request must be visible to the rest of it."""
    cache = _request_cache.get()
    if cache is not None:
        cache.clear()


# --- reads ------------------------------------------------------------------------


@dataclass(frozen=True)
class TierInfo:
    """What members see about their workspace's license."""

    name: str
    slug: str
    rank: int
    valid_until: datetime | None

    @property
    def expires_soon(self) -> bool:
        """Two weeks is enough notice to renew before a gate closes."""
        return self.valid_until is not None and self.valid_until - timezone.now() <= EXPIRY_NOTICE


def _active_feature_keys(workspace_id: int) -> frozenset[str]:
    # One indexed query for every key at once: a page asking about several gates costs the same as one.
    return frozenset(
        License.objects.active()
        .filter(workspace_id=workspace_id, tier__features__isnull=False)
        .values_list("tier__features__key", flat=True)
        .distinct()
    )


def has_feature(workspace_id: int, key: str) -> bool:
    """True while the workspace holds an active (in dates, not revoked) license whose tier includes `key`.

    Never raises for a gate: callers fall back softly when this says no.
    """
    if key not in REGISTRY:
        # The registry test catches literals; this catches keys built at run time.
        logger.warning("has_feature called with undeclared gate key key=%s", key)
        return False
    return key in _cached("features", workspace_id, lambda: _active_feature_keys(workspace_id))


def _best_tier(workspace_id: int) -> TierInfo | None:
    # Best tier first; among equal tiers the one that lasts longest (open-ended counts as longest).
    license = (
        License.objects.active()
        .filter(workspace_id=workspace_id)
        .select_related("tier")
        .order_by("-tier__rank", models.F("valid_until").desc(nulls_first=True))
        .first()
    )
    if license is None:
        return None
    return TierInfo(
        name=license.tier.name, slug=license.tier.slug, rank=license.tier.rank, valid_until=license.valid_until
    )


def workspace_tier(workspace_id: int) -> TierInfo | None:
    """The workspace's best active tier with its expiry, or None when it holds no active license."""
    return _cached("tier", workspace_id, lambda: _best_tier(workspace_id))


def tier_for_feature(key: str) -> str:
    """Name of the lowest tier that enables `key` ("Available in Writer Pro"); "" when no tier does."""
    tier = LicenseTier.objects.filter(features__key=key).order_by("rank").first()
    return tier.name if tier else ""


# --- writes -------------------------------------------------------------------------


def _event(
    license: License,
    action: str,
    *,
    actor: AbstractBaseUser | None,
    actor_label: str = "",
    details: dict[str, Any] | None = None,
) -> LicenseEvent:
    return LicenseEvent.objects.create(
        license=license,
        action=action,
        actor=actor if actor is not None and actor.is_authenticated else None,
        actor_label=actor_label or (actor.get_username() if actor is not None else ""),
        details=details or {},
    )


def _iso(value: datetime | None) -> str | None:
    return value.isoformat() if value else None


def _loggable(value: Any) -> Any:
    # The admin shows whole seconds, so re-saving a form drops microseconds: not a change anyone made.
    return _iso(value.replace(microsecond=0)) if isinstance(value, datetime) else value


@transaction.atomic
def license_save(*, license: License, actor: AbstractBaseUser | None = None, actor_label: str = "") -> License:
    """Create or update a license from an edited instance, writing one event per kind of change.

    The admin hands its form's instance here, so the history does not depend on
    which screen made the change.
    """
    if license._state.adding:
        license.revoked_at = timezone.now() if license.revoked else None
        license.save()
        _event(
            license, LicenseEvent.Action.ISSUE, actor=actor, actor_label=actor_label,
            details={"tier": license.tier.slug, "valid_from": _iso(license.valid_from),
                     "valid_until": _iso(license.valid_until), "issued_to": license.issued_to},
        )
        _forget_cached()
        return license

    # Lock the row: two admins saving at once must not both log the same revocation.
    before = License.objects.select_for_update().select_related("tier").get(pk=license.pk)
    if license.revoked and not before.revoked:
        license.revoked_at = timezone.now()
    elif not license.revoked:
        license.revoked_at = None
    license.save()

    if license.tier_id != before.tier_id:
        _event(license, LicenseEvent.Action.TIER_CHANGE, actor=actor, actor_label=actor_label,
               details={"from": before.tier.slug, "to": license.tier.slug})
    if license.revoked != before.revoked:
        action = LicenseEvent.Action.REVOKE if license.revoked else LicenseEvent.Action.REINSTATE
        _event(license, action, actor=actor, actor_label=actor_label)
    changed = {
        field: {"from": _loggable(old), "to": _loggable(new)}
        for field in ("workspace_id", "valid_from", "valid_until", "issued_to", "notes")
        if _loggable(old := getattr(before, field)) != _loggable(new := getattr(license, field))
    }
    if changed:
        _event(license, LicenseEvent.Action.UPDATE, actor=actor, actor_label=actor_label, details=changed)
    _forget_cached()
    return license


def license_revoke(*, license: License, actor: AbstractBaseUser | None = None, actor_label: str = "") -> License:
    """Revoking twice changes nothing and logs nothing the second time."""
    if license.revoked:
        return license
    license.revoked = True
    return license_save(license=license, actor=actor, actor_label=actor_label)


def license_change_tier(
    *, license: License, tier: LicenseTier, actor: AbstractBaseUser | None = None, actor_label: str = ""
) -> License:
    license.tier = tier
    return license_save(license=license, actor=actor, actor_label=actor_label)


@dataclass(frozen=True)
class InstallResult:
    license: License
    created: bool


def _workspace_model() -> type[models.Model]:
    # Resolved through the lazy FK so that this app never imports rag.
    return License._meta.get_field("workspace").related_model  # type: ignore[return-value]


def license_install(
    *, key: str, workspace_slug: str, actor: AbstractBaseUser | None = None, actor_label: str = ""
) -> InstallResult:
    """Verify a signed key and create its license; every refusal raises LicenseKeyError and writes nothing.

    Idempotent by the key's license_id: the same key installed twice finds the
    first license (revoked stays revoked).
    """
    payload = verify_license_key(key, load_public_key(getattr(settings, "LICENSE_PUBLIC_KEY", "")))
    if payload.workspace != workspace_slug:
        raise LicenseKeyError(
            f"this license key is for workspace '{payload.workspace}', not '{workspace_slug}'"
        )
    if payload.valid_until is not None and payload.valid_until <= timezone.now():
        raise LicenseKeyError(f"this license key expired on {payload.valid_until:%Y-%m-%d %H:%M} UTC")
    workspace = _workspace_model()._default_manager.filter(slug=workspace_slug).first()
    if workspace is None:
        raise LicenseKeyError(f"there is no workspace '{workspace_slug}' on this installation")
    tier = LicenseTier.objects.filter(slug=payload.tier).first()
    if tier is None:
        raise LicenseKeyError(f"this license key names tier '{payload.tier}', which this installation does not know")

    with transaction.atomic():
        license, created = License.objects.get_or_create(
            license_id=payload.license_id,
            defaults={
                "workspace": workspace,
                "tier": tier,
                "valid_from": payload.valid_from,
                "valid_until": payload.valid_until,
                "issued_to": payload.issued_to,
                "signed_key": "".join(key.split()),
            },
        )
        if created:
            _event(license, LicenseEvent.Action.INSTALL, actor=actor, actor_label=actor_label,
                   details={"tier": tier.slug, "valid_from": _iso(payload.valid_from),
                            "valid_until": _iso(payload.valid_until), "issued_to": payload.issued_to})
        elif license.workspace_id != workspace.pk:
            # Only reachable if a license was moved in the admin; the key still names the old slug.
            raise LicenseKeyError("this license key is already installed for another workspace")
    _forget_cached()
    return InstallResult(license=license, created=created)
