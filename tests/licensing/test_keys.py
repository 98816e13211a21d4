"""Signed license keys: the round trip, every way a key can be bad, and the commands around them."""

from __future__ import annotations

import base64
import json
import uuid
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from io import StringIO

import pytest
import time_machine
from django.core.management import CommandError, call_command

from licensing import features
from licensing.keys import (
    LicenseKeyError,
    LicensePayload,
    generate_keypair,
    load_private_key,
    load_public_key,
    sign_license,
    verify_license_key,
)
from licensing.models import License, LicenseEvent
from licensing.services import has_feature, installation_id, license_install
from tests.factories import WorkspaceFactory
from tests.licensing.factories import TEST_PRIVATE_KEY

NOW = datetime(2026, 6, 1, 12, 0, tzinfo=UTC)


@pytest.fixture
def vendor_keys(vendor_key):
    return vendor_key


def _payload(**overrides: object) -> LicensePayload:
    values: dict = {
        "license_id": uuid.uuid4(),
        "installation": "00000000-0000-0000-0000-000000000000",
        "workspace": "acme",
        "tier": "writer-pro",
        "valid_from": NOW - timedelta(days=1),
        "valid_until": NOW + timedelta(days=365),
        "issued_to": "ACME Writers",
    }
    return LicensePayload(**{**values, **overrides})


def _here(**overrides: object) -> LicensePayload:
    """A payload for this installation (needs the database)."""
    return _payload(**{"installation": installation_id(), **overrides})


def _reencode(key: str, **changes: object) -> str:
    """The same signature over a different payload: what a tamperer would try."""
    prefix, body, signature = key.split(".")
    data = json.loads(base64.urlsafe_b64decode(body + "=" * (-len(body) % 4)))
    data.update(changes)
    new_body = base64.urlsafe_b64encode(json.dumps(data).encode()).rstrip(b"=").decode()
    return f"{prefix}.{new_body}.{signature}"


# --- the key format -------------------------------------------------------------------


def test_sign_and_verify_round_trip():
    private_pem, public_text = generate_keypair()
    payload = _payload(valid_until=None)
    key = sign_license(payload, load_private_key(private_pem))
    assert key.startswith("DOCENT1.") and key.count(".") == 2 and "=" not in key
    assert verify_license_key(key, load_public_key(public_text)) == payload


def test_a_key_carries_its_features_and_one_without_keeps_its_bytes():
    """Keys issued before the `features` claim verify and read as they did (no claim: the tier's, in code)."""
    private_pem, public_text = generate_keypair()
    with_features = _payload(features=(features.VARIANT_METADATA, features.PROVENANCE))
    key = sign_license(with_features, load_private_key(private_pem))
    assert verify_license_key(key, load_public_key(public_text)).features == tuple(sorted(with_features.features))
    assert "features" not in _payload().to_json()
    assert verify_license_key(sign_license(_payload(), load_private_key(private_pem)),
                              load_public_key(public_text)).features is None


def test_public_key_is_accepted_as_pem_or_base64():
    from cryptography.hazmat.primitives import serialization

    private_pem, public_text = generate_keypair()
    public = load_private_key(private_pem).public_key()
    pem = public.public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo).decode()
    der = public.public_bytes(serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)
    key = sign_license(_payload(), load_private_key(private_pem))
    for form in (public_text, pem, base64.b64encode(der).decode()):
        assert verify_license_key(key, load_public_key(form)).workspace == "acme"


def test_line_breaks_pasted_into_a_key_are_ignored():
    private_pem, public_text = generate_keypair()
    key = sign_license(_payload(), load_private_key(private_pem))
    wrapped = "\n".join(key[i : i + 60] for i in range(0, len(key), 60))
    assert verify_license_key(wrapped, load_public_key(public_text)).tier == "writer-pro"


@pytest.mark.parametrize(
    "mangle",
    [
        pytest.param(lambda key: _reencode(key, tier="enterprise"), id="tier-raised"),
        pytest.param(lambda key: _reencode(key, valid_until=None), id="expiry-removed"),
        pytest.param(lambda key: _reencode(key, workspace="other"), id="workspace-changed"),
        pytest.param(lambda key: _reencode(key, features=list(features.REGISTRY)), id="features-added"),
        pytest.param(lambda key: key[:-4] + ("AAAA" if not key.endswith("AAAA") else "BBBB"), id="signature-altered"),
        pytest.param(lambda key: "DOCENT2" + key[len("DOCENT1"):], id="prefix-changed"),
    ],
)
def test_a_tampered_key_is_refused(mangle):
    private_pem, public_text = generate_keypair()
    key = sign_license(_payload(), load_private_key(private_pem))
    with pytest.raises(LicenseKeyError):
        verify_license_key(mangle(key), load_public_key(public_text))


def test_a_key_signed_by_another_vendor_is_refused():
    forger_pem, _ = generate_keypair()
    _, our_public = generate_keypair()
    forged = sign_license(_payload(), load_private_key(forger_pem))
    with pytest.raises(LicenseKeyError, match="signature is not valid"):
        verify_license_key(forged, load_public_key(our_public))


@pytest.mark.parametrize("garbage", ["", "hello", "DOCENT1.abc", "DOCENT1.!!!.???", "a.b.c.d"])
def test_garbage_is_refused_with_a_message(garbage):
    _, public_text = generate_keypair()
    with pytest.raises(LicenseKeyError):
        verify_license_key(garbage, load_public_key(public_text))


@pytest.mark.parametrize("setting", ["", "   ", "not base64 at all", base64.b64encode(b"short").decode()])
def test_missing_or_unreadable_public_key_is_a_clear_error(setting):
    with pytest.raises(LicenseKeyError, match="public key"):
        load_public_key(setting)


# --- installing ---------------------------------------------------------------------------


@pytest.mark.django_db
def test_install_creates_the_license_and_opens_the_gate(vendor_keys):
    workspace = WorkspaceFactory(slug="acme")
    payload = _here()
    with time_machine.travel(NOW, tick=False):
        result = license_install(key=sign_license(payload, vendor_keys), workspace_slug="acme", actor_label="test")
        assert result.created
        assert has_feature(workspace.pk, features.RETRIEVAL_INTEGRATION)
    license = result.license
    assert (license.license_id, license.workspace, license.tier.slug) == (payload.license_id, workspace, "writer-pro")
    assert (license.valid_from, license.valid_until, license.issued_to) == (
        payload.valid_from, payload.valid_until, "ACME Writers",
    )
    assert license.signed_key.startswith("DOCENT1.")
    event = license.events.get()
    assert (event.action, event.actor_label) == (LicenseEvent.Action.INSTALL, "test")


@pytest.mark.django_db
def test_installing_the_same_key_twice_creates_one_license(vendor_keys):
    WorkspaceFactory(slug="acme")
    key = sign_license(_here(), vendor_keys)
    with time_machine.travel(NOW, tick=False):
        first = license_install(key=key, workspace_slug="acme")
        second = license_install(key=key, workspace_slug="acme")
    assert first.created and not second.created
    assert second.license.pk == first.license.pk
    assert License.objects.count() == 1 and LicenseEvent.objects.count() == 1


@pytest.mark.django_db
def test_a_later_issue_of_an_installed_license_renews_it_and_is_logged(vendor_keys, caplog):
    workspace = WorkspaceFactory(slug="acme")
    first = _here(issued_at=NOW - timedelta(days=300), valid_until=NOW + timedelta(days=30))
    renewal = replace(first, issued_at=NOW, valid_until=NOW + timedelta(days=395), tier="enterprise")
    with time_machine.travel(NOW, tick=False):
        license_install(key=sign_license(first, vendor_keys), workspace_slug="acme")
        with caplog.at_level("INFO", logger="licensing.services"):
            result = license_install(key=sign_license(renewal, vendor_keys), workspace_slug="acme", actor_label="t")
    assert result.renewed and not result.created
    license = License.objects.get()
    assert (license.tier.slug, license.valid_until) == ("enterprise", renewal.valid_until)
    assert license.signed_key == sign_license(renewal, vendor_keys)
    event = license.events.get(action=LicenseEvent.Action.RENEW)
    assert event.details["from"]["tier"] == "writer-pro" and event.details["to"]["tier"] == "enterprise"
    assert any("license renewed" in record.getMessage() for record in caplog.records)
    with time_machine.travel(NOW + timedelta(days=100), tick=False):
        assert has_feature(workspace.pk, features.PROVENANCE)  # past the first issue's end


@pytest.mark.django_db
def test_an_earlier_issue_than_the_installed_one_is_refused_with_its_reason(vendor_keys):
    WorkspaceFactory(slug="acme")
    renewal = _here(issued_at=NOW, valid_until=NOW + timedelta(days=395))
    older = replace(renewal, issued_at=NOW - timedelta(days=300), valid_until=NOW + timedelta(days=30))
    unordered = replace(renewal, issued_at=None, valid_until=NOW + timedelta(days=30), tier="enterprise")
    with time_machine.travel(NOW, tick=False):
        license_install(key=sign_license(renewal, vendor_keys), workspace_slug="acme")
        for key in (older, unordered):
            with pytest.raises(LicenseKeyError, match="from an issue at least as recent .* this key is older"):
                license_install(key=sign_license(key, vendor_keys), workspace_slug="acme")
    license = License.objects.get()
    assert (license.tier.slug, license.valid_until) == ("writer-pro", renewal.valid_until)
    assert list(license.events.values_list("action", flat=True)) == [LicenseEvent.Action.INSTALL]


@pytest.mark.django_db
def test_without_issue_times_the_later_end_is_the_later_issue_and_revoked_stays_revoked(vendor_keys):
    WorkspaceFactory(slug="acme")
    first = _here(valid_until=NOW + timedelta(days=30))
    with time_machine.travel(NOW, tick=False):
        installed = license_install(key=sign_license(first, vendor_keys), workspace_slug="acme").license
        installed.revoked = True
        installed.save()
        out = StringIO()
        renewal = sign_license(replace(first, valid_until=NOW + timedelta(days=60)), vendor_keys)
        call_command("install_license", renewal, "--workspace", "acme", stdout=out)
    assert out.getvalue().startswith(f"Renewed license {first.license_id}")
    license = License.objects.get()
    assert license.revoked and license.valid_until == NOW + timedelta(days=60)


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("payload_changes", "install_as", "message"),
    [
        pytest.param({"valid_until": NOW - timedelta(seconds=1)}, "acme", "expired on", id="expired"),
        pytest.param({"valid_until": NOW}, "acme", "expired on", id="expires-this-instant"),
        pytest.param({"workspace": "globex"}, "acme", "is for workspace 'globex', not 'acme'", id="wrong-workspace"),
        pytest.param({"workspace": "nowhere"}, "nowhere", "no workspace 'nowhere'", id="unknown-workspace"),
        pytest.param({"tier": "platinum"}, "acme", "tier 'platinum'", id="unknown-tier"),
    ],
)
def test_a_key_that_cannot_apply_here_is_refused_and_changes_nothing(vendor_keys, payload_changes, install_as, message):
    WorkspaceFactory(slug="acme")
    WorkspaceFactory(slug="globex")
    key = sign_license(_here(**payload_changes), vendor_keys)
    with time_machine.travel(NOW, tick=False), pytest.raises(LicenseKeyError, match=message):
        license_install(key=key, workspace_slug=install_as)
    assert not License.objects.exists() and not LicenseEvent.objects.exists()


@pytest.mark.django_db
def test_forged_and_tampered_keys_change_nothing(vendor_keys):
    WorkspaceFactory(slug="acme")
    forger_pem, _ = generate_keypair()
    forged = sign_license(_here(), load_private_key(forger_pem))
    tampered = _reencode(sign_license(_here(tier="free"), vendor_keys), tier="enterprise")
    for key in (forged, tampered):
        with time_machine.travel(NOW, tick=False), pytest.raises(LicenseKeyError, match="signature is not valid"):
            license_install(key=key, workspace_slug="acme")
    assert not License.objects.exists()


@pytest.mark.django_db
def test_without_the_development_key_a_key_of_ones_own_is_refused(settings):
    settings.LICENSE_DEVELOPMENT_KEY = ""
    WorkspaceFactory(slug="acme")
    key = sign_license(_here(), TEST_PRIVATE_KEY)
    with pytest.raises(LicenseKeyError, match="signature is not valid"):
        license_install(key=key, workspace_slug="acme")
    assert not License.objects.exists()


@pytest.mark.django_db
def test_a_key_valid_from_the_future_installs_but_opens_the_gate_only_then(vendor_keys):
    workspace = WorkspaceFactory(slug="acme")
    starts = NOW + timedelta(days=7)
    key = sign_license(_here(valid_from=starts, valid_until=starts + timedelta(days=30)), vendor_keys)
    with time_machine.travel(NOW, tick=False):
        license_install(key=key, workspace_slug="acme")
        assert not has_feature(workspace.pk, features.RETRIEVAL_INTEGRATION)
    with time_machine.travel(starts, tick=False):
        assert has_feature(workspace.pk, features.RETRIEVAL_INTEGRATION)


# --- the commands ----------------------------------------------------------------------------


@pytest.mark.django_db
def test_install_command_refuses_a_bad_key_with_one_clear_line(vendor_keys):
    WorkspaceFactory(slug="acme")
    key = sign_license(_here(workspace="globex"), vendor_keys)
    with time_machine.travel(NOW, tick=False), pytest.raises(CommandError) as refused:
        call_command("install_license", key, "--workspace", "acme")
    assert str(refused.value) == "license key refused: this license key is for workspace 'globex', not 'acme'"
    assert not License.objects.exists()


@pytest.mark.django_db
def test_a_key_for_another_installation_is_refused_and_a_copied_row_grants_nothing(vendor_keys):
    workspace = WorkspaceFactory(slug="acme")
    elsewhere = _payload(installation=str(uuid.uuid4()))
    key = sign_license(elsewhere, vendor_keys)
    with time_machine.travel(NOW, tick=False):
        with pytest.raises(LicenseKeyError, match=f"is for installation {elsewhere.installation}, not this one"):
            license_install(key=key, workspace_slug="acme")
        assert not License.objects.exists()
        # The same key's row copied into this database (a restored dump, a hand-made row): still nothing.
        License.objects.create(license_id=elsewhere.license_id, workspace=workspace, tier_id=_tier("writer-pro"),
                               valid_from=elsewhere.valid_from, valid_until=elsewhere.valid_until, signed_key=key)
        assert not has_feature(workspace.pk, features.RETRIEVAL_INTEGRATION)


@pytest.mark.django_db
def test_the_installation_id_is_made_once_and_kept():
    first = installation_id()
    out = StringIO()
    call_command("installation_id", stdout=out)
    assert uuid.UUID(first) and installation_id() == first == out.getvalue().strip()


def _tier(slug: str) -> int:
    from licensing.models import LicenseTier

    return LicenseTier.objects.get(slug=slug).pk
