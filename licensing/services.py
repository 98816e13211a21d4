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

from licensing.features import REGISTRY, TIER_FEATURES, license_features
from licensing.keys import LicenseKeyError
from licensing.models import Installation, License, LicenseEvent, LicenseTier
from licensing.trust import (
    DEVELOPMENT_NOTICE,
    DEVELOPMENT_REFUSED,
    VerifiedKey,
    development_key_honoured,
    license_key_verify,
)

logger = logging.getLogger(__name__)

EXPIRY_NOTICE = timedelta(days=14)
TRIAL_TIER = "writer-pro"
TRIAL_MAX_DAYS = 30
# The Workspace field that only the first start's bootstrap sets on the demo workspace it creates
# (named, not imported: this app never imports rag).
DEMO_MARK = "builtin_demo"
T = TypeVar("T")

# Grants made by code in this process only (evaluation and benchmarks measure a tier on a scratch
# workspace). Nothing persists them, so no admin screen, request or key can create one.
_process_grants: dict[int, str] = {}

# None outside a request (commands, tasks): every call then reads the database.
_request_cache: ContextVar[dict[tuple[str, int], Any] | None] = ContextVar("licensing_request_cache", default=None)


@contextmanager
def feature_cache() -> Iterator[None]:
    """Cache gate decisions for the duration of the block (one request, one task, one search); a block
    inside another keeps the outer one's cache (a search run by a request)."""
    token = _request_cache.set({}) if _request_cache.get() is None else None
    try:
        yield
    finally:
        if token is not None:
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
    trial: bool = False
    # Signed by LICENSE_DEVELOPMENT_KEY: shown as DEVELOPMENT_NOTICE wherever the tier is.
    development: bool = False
    # What this grant opens: its key's features, else its tier's as fixed in code (never the tier's row).
    features: frozenset[str] = frozenset()

    @property
    def development_notice(self) -> str:
        return DEVELOPMENT_NOTICE if self.development else ""

    @property
    def expires_soon(self) -> bool:
        """Two weeks is enough notice to renew before a gate closes."""
        return self.valid_until is not None and self.valid_until - timezone.now() <= EXPIRY_NOTICE


def installation_get() -> Installation:
    """This installation's row, made on first use (one per database, hence one per DATA_DIR)."""
    installation, _ = Installation.objects.get_or_create(pk=1)
    return installation


def _installation() -> Installation:
    return _cached("installation", 0, installation_get)


def installation_id() -> str:
    """The id license keys must carry to apply here; shown in the admin for the vendor to sign against."""
    return str(_installation().installation_id)


@dataclass(frozen=True)
class SignatureCheck:
    """What a license row's signed key is worth here: `problem` says why it grants nothing ("" when it
    grants `features`); `development` marks a key signed by LICENSE_DEVELOPMENT_KEY."""

    problem: str
    development: bool = False
    features: frozenset[str] = frozenset()

    @property
    def label(self) -> str:
        """One phrase for the admin: the problem, the development notice, or that it grants its tier."""
        if self.problem:
            return self.problem
        return DEVELOPMENT_NOTICE if self.development else "valid: this license grants its tier"


def license_signature_check(license: License) -> SignatureCheck:
    """Whether a license row grants its tier: only a row installed from a key that a vendor key (or, on
    an instance serving this machine alone, the development key) signed, for this installation, and
    not edited since (workspace, tier, dates as signed) takes effect. A row made or changed by hand is
    a note, not a grant.
    """
    if not license.signed_key:
        return SignatureCheck("unsigned: made without a license key")
    try:
        verified = license_key_verify(license.signed_key)
    except LicenseKeyError:
        return SignatureCheck("the signature does not verify against a vendor key")
    if verified.development and not development_key_honoured():
        return SignatureCheck(DEVELOPMENT_REFUSED, development=True)
    payload = verified.payload
    if payload.installation != installation_id():
        return SignatureCheck("the key is for another installation", verified.development)
    signed = (payload.license_id, payload.workspace, payload.tier, payload.valid_from, payload.valid_until)
    row = (license.license_id, license.workspace.slug, license.tier.slug, license.valid_from, license.valid_until)
    if signed != row:
        return SignatureCheck("changed since it was installed: the row no longer matches its key", verified.development)
    return SignatureCheck("", verified.development, license_features(payload.tier, payload.features))


def _effective_licenses(workspace_id: int) -> list[tuple[License, SignatureCheck]]:
    """Active licenses of the workspace whose keys hold, each with what its key grants;
    best tier first, the longest-lasting first among equals."""
    licenses = (
        License.objects.active()
        .filter(workspace_id=workspace_id)
        .exclude(signed_key="")
        .select_related("tier", "workspace")
        .order_by("-tier__rank", models.F("valid_until").desc(nulls_first=True))
    )
    checks = [(license, license_signature_check(license)) for license in licenses]
    return [(license, check) for license, check in checks if not check.problem]


def _trial_tier(workspace_id: int) -> tuple[LicenseTier, datetime] | None:
    """The built-in trial's tier and end, while it runs for this workspace: the workspace the first start
    created as the demo, still marked so and under the slug it had (renamed, it is a production
    workspace), for at most TRIAL_MAX_DAYS from the start whatever was configured then."""
    installation = _installation()
    if installation.trial_workspace_id != workspace_id or installation.trial_started_at is None:
        return None
    ends = min(installation.trial_ends_at or installation.trial_started_at,
               installation.trial_started_at + timedelta(days=TRIAL_MAX_DAYS))
    if ends <= timezone.now():
        return None
    still_the_demo = _workspace_model()._default_manager.filter(
        pk=workspace_id, slug=installation.trial_workspace_slug, **{DEMO_MARK: True}
    ).exists()
    tier = LicenseTier.objects.filter(slug=TRIAL_TIER).first()
    return (tier, ends) if tier and still_the_demo else None


@dataclass(frozen=True)
class RunningTrial:
    workspace_name: str
    tier_name: str
    ends_at: datetime


def trial_running() -> RunningTrial | None:
    """The built-in trial while it runs: no License row stands for it, so the licenses page names it."""
    installation = _installation()
    trial = _trial_tier(installation.trial_workspace_id) if installation.trial_workspace_id else None
    if trial is None:
        return None
    tier, ends_at = trial
    return RunningTrial(workspace_name=installation.trial_workspace.name, tier_name=tier.name, ends_at=ends_at)


def _granted_tiers(workspace_id: int) -> list[TierInfo]:
    """Every tier the workspace holds now, best first: signed licenses, the trial, grants made in process."""
    tiers = [
        TierInfo(name=license.tier.name, slug=license.tier.slug, rank=license.tier.rank,
                 valid_until=license.valid_until, development=check.development, features=check.features)
        for license, check in _effective_licenses(workspace_id)
    ]
    if trial := _trial_tier(workspace_id):
        tier, ends = trial
        tiers.append(TierInfo(name=tier.name, slug=tier.slug, rank=tier.rank, valid_until=ends, trial=True,
                              features=license_features(TRIAL_TIER)))
    if workspace_id in _process_grants and (
        granted := LicenseTier.objects.filter(slug=_process_grants[workspace_id]).first()
    ):
        tiers.append(TierInfo(name=granted.name, slug=granted.slug, rank=granted.rank, valid_until=None,
                              features=license_features(granted.slug)))
    # A genuine license ranks before a development one, and a paid tier before a trial, of the same tier
    # (the sort is stable, and licenses come first).
    return sorted(tiers, key=lambda info: (-info.rank, info.development))


def _active_feature_keys(workspace_id: int) -> frozenset[str]:
    return frozenset().union(*(info.features for info in _cached("tiers", workspace_id,
                                                                 lambda: _granted_tiers(workspace_id))))


def has_feature(workspace_id: int, key: str) -> bool:
    """True while the workspace holds a grant including `key` (what a key signs, else its tier's features as
    fixed in licensing.features, never as edited in the admin): an active license with a valid signature,
    the built-in trial (demo workspace), or a grant made in this process by evaluation code.

    Never raises for a gate: callers fall back softly when this says no.
    """
    if key not in REGISTRY:
        # The registry test catches literals; this catches keys built at run time.
        logger.warning("has_feature called with undeclared gate key key=%s", key)
        return False
    return key in _cached("features", workspace_id, lambda: _active_feature_keys(workspace_id))


def workspace_tier(workspace_id: int) -> TierInfo | None:
    """The workspace's best tier now with its expiry, or None when it holds none (Free)."""
    tiers = _cached("tiers", workspace_id, lambda: _granted_tiers(workspace_id))
    return tiers[0] if tiers else None


def tier_for_feature(key: str) -> str:
    """Name of the lowest tier that enables `key` ("Available in Writer Pro"); "" when no tier does."""
    tier = LicenseTier.objects.filter(slug__in=[slug for slug, keys in TIER_FEATURES.items() if key in keys]
                                      ).order_by("rank").first()
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


@dataclass(frozen=True)
class InstallResult:
    """What installing a key did: created a license, renewed one (a newer issue of its id), or nothing."""

    license: License
    created: bool
    renewed: bool = False
    development: bool = False

    @property
    def development_notice(self) -> str:
        return DEVELOPMENT_NOTICE if self.development else ""


def _workspace_model() -> type[models.Model]:
    # Resolved through the lazy FK so that this app never imports rag.
    return License._meta.get_field("workspace").related_model  # type: ignore[return-value]


def _installable(key: str, workspace_slug: str) -> VerifiedKey:
    """The verified key if it may apply to this workspace here; LicenseKeyError saying why not otherwise."""
    verified = license_key_verify(key)
    payload = verified.payload
    if verified.development and not development_key_honoured():
        raise LicenseKeyError(DEVELOPMENT_REFUSED)
    if payload.installation != installation_id():
        raise LicenseKeyError(
            f"this license key is for installation {payload.installation}, not this one ({installation_id()})"
        )
    if payload.workspace != workspace_slug:
        raise LicenseKeyError(
            f"this license key is for workspace '{payload.workspace}', not '{workspace_slug}'"
        )
    if payload.valid_until is not None and payload.valid_until <= timezone.now():
        raise LicenseKeyError(f"this license key expired on {payload.valid_until:%Y-%m-%d %H:%M} UTC")
    return verified


def _terms(license: License) -> dict[str, Any]:
    return {"tier": license.tier.slug, "valid_from": _iso(license.valid_from),
            "valid_until": _iso(license.valid_until), "issued_to": license.issued_to}


def _installed_issue(license: License) -> VerifiedKey | None:
    """The issue a license row was installed from, or None when its key no longer verifies (a retired key)."""
    try:
        return license_key_verify(license.signed_key) if license.signed_key else None
    except LicenseKeyError:
        return None


def license_install(
    *, key: str, workspace_slug: str, actor: AbstractBaseUser | None = None, actor_label: str = ""
) -> InstallResult:
    """Verify a signed key and create its license, or renew the license its id names; every refusal raises
    LicenseKeyError and writes nothing.

    A license id is issued again to renew or change a license: a later issue
    (signed later, else ending later) replaces the installed terms and is logged;
    an earlier one is refused; the same issue twice changes nothing. Revoked
    stays revoked either way: revocation is this installation's decision.
    """
    verified = _installable(key, workspace_slug)
    payload = verified.payload
    workspace = _workspace_model()._default_manager.filter(slug=workspace_slug).first()
    if workspace is None:
        raise LicenseKeyError(f"there is no workspace '{workspace_slug}' on this installation")
    tier = LicenseTier.objects.filter(slug=payload.tier).first()
    if tier is None:
        raise LicenseKeyError(f"this license key names tier '{payload.tier}', which this installation does not know")
    signed_key = "".join(key.split())
    terms = {"tier": tier, "valid_from": payload.valid_from, "valid_until": payload.valid_until,
             "issued_to": payload.issued_to, "signed_key": signed_key}

    with transaction.atomic():
        license, created = License.objects.get_or_create(
            license_id=payload.license_id, defaults={"workspace": workspace, **terms}
        )
        if created:
            _event(license, LicenseEvent.Action.INSTALL, actor=actor, actor_label=actor_label, details=_terms(license))
        else:
            # Locked: two issues of one license installed at once must be compared one after the other.
            license = License.objects.select_for_update().select_related("tier").get(pk=license.pk)
            if license.workspace_id != workspace.pk:
                # Only reachable if a license was moved in the admin; the key still names the old slug.
                raise LicenseKeyError("this license key is already installed for another workspace")
            installed = _installed_issue(license)
            if installed is not None and installed.payload == payload:
                return InstallResult(license=license, created=False, development=verified.development)
            if installed is not None and verified.development and not installed.development:
                raise LicenseKeyError(f"license {payload.license_id} is genuine; {DEVELOPMENT_NOTICE} cannot renew it")
            if installed is not None and payload.issue_order() <= installed.payload.issue_order():
                raise LicenseKeyError(
                    f"license {payload.license_id} is already installed from an issue at least as recent "
                    f"(ending {_ending(installed.payload.valid_until)}); this key is older and changes nothing"
                )
            before = _terms(license)
            for field, value in terms.items():
                setattr(license, field, value)
            license.save()
            _event(license, LicenseEvent.Action.RENEW, actor=actor, actor_label=actor_label,
                   details={"from": before, "to": _terms(license)})
            logger.info("license renewed license_id=%s workspace=%s tier=%s valid_until=%s",
                        license.license_id, workspace_slug, tier.slug, _iso(payload.valid_until))
    _forget_cached()
    return InstallResult(license=license, created=created, renewed=not created, development=verified.development)


def _ending(moment: datetime | None) -> str:
    return f"{moment:%Y-%m-%d %H:%M} UTC" if moment else "never"


def trial_days() -> int:
    """DEMO_TRIAL_DAYS, capped: the trial is for trying the features, not a free license."""
    return max(0, min(settings.DEMO_TRIAL_DAYS, TRIAL_MAX_DAYS))


def trial_start(*, workspace_id: int) -> bool:
    """Give the built-in Writer Pro trial (`trial_days`) to the built-in demo workspace, once per installation.

    Called by code for the demo workspace only (rag.bootstrap), which marks it
    when it creates it; a workspace without that mark (a `demo` someone made
    before the first start) gets nothing. It is not a License row, so no admin
    can make one for another workspace, and a second call, for any workspace,
    changes nothing. True when the trial started now.
    """
    workspace = _workspace_model()._default_manager.filter(pk=workspace_id, **{DEMO_MARK: True}).first()
    if workspace is None:
        return False
    with transaction.atomic():
        installation_get()
        # Locked: two processes starting at once must not both start a trial.
        installation = Installation.objects.select_for_update().get(pk=1)
        if installation.trial_started_at is not None:
            return False
        installation.trial_workspace_id = workspace_id
        installation.trial_workspace_slug = workspace.slug
        installation.trial_started_at = timezone.now()
        installation.trial_ends_at = installation.trial_started_at + timedelta(days=trial_days())
        installation.save()
    _forget_cached()
    return True


def process_grant_set(*, workspace_id: int, tier_slug: str | None) -> None:
    """Grant a tier to a workspace for the rest of this process (None takes it back).

    For evaluation and benchmarks, which measure what a tier does on a scratch
    workspace without a vendor key; nothing is stored.
    """
    if tier_slug is None:
        _process_grants.pop(workspace_id, None)
    else:
        _process_grants[workspace_id] = tier_slug
    _forget_cached()
