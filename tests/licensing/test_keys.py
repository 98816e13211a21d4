"""Signed license keys: the round trip, every way a key can be bad, and the commands around them."""

from __future__ import annotations

import base64
import json
import uuid
from datetime import UTC, datetime, timedelta
from io import StringIO
from pathlib import Path

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

NOW = datetime(2026, 6, 1, 12, 0, tzinfo=UTC)


@pytest.fixture
def vendor_keys(settings):
    """The vendor's private key, with this installation trusting its public half."""
    private_pem, public_text = generate_keypair()
    settings.LICENSE_PUBLIC_KEY = public_text
    return load_private_key(private_pem)


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
    with pytest.raises(LicenseKeyError, match="LICENSE_PUBLIC_KEY"):
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
def test_without_a_configured_public_key_every_key_is_refused(settings):
    settings.LICENSE_PUBLIC_KEY = ""
    WorkspaceFactory(slug="acme")
    private_pem, _ = generate_keypair()
    key = sign_license(_here(), load_private_key(private_pem))
    with pytest.raises(LicenseKeyError, match="no license public key configured"):
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
def test_vendor_and_customer_commands_round_trip(tmp_path: Path, settings):
    workspace = WorkspaceFactory(slug="acme")
    private_key_file = tmp_path / "vendor.pem"
    out = StringIO()
    call_command("generate_license_keypair", "--out", str(private_key_file), stdout=out, stderr=StringIO())
    assert private_key_file.stat().st_mode & 0o777 == 0o600
    settings.LICENSE_PUBLIC_KEY = out.getvalue().strip().removeprefix("LICENSE_PUBLIC_KEY=")

    out = StringIO()
    call_command(
        "issue_license", "--private-key", str(private_key_file), "--workspace", "acme", "--tier", "enterprise",
        "--installation", installation_id(),
        "--valid-from", "2026-01-01", "--valid-until", "2027-01-01", "--issued-to", "ACME", stdout=out,
    )
    key = out.getvalue().strip()

    out = StringIO()
    with time_machine.travel(NOW, tick=False):
        call_command("install_license", key, "--workspace", "acme", stdout=out)
        assert "Installed Enterprise for workspace acme, until 2027-01-01 00:00 UTC" in out.getvalue()
        out = StringIO()
        call_command("install_license", key, "--workspace", "acme", stdout=out)
        assert "already installed; nothing changed" in out.getvalue()
        assert has_feature(workspace.pk, features.PROVENANCE)
    license = License.objects.get()
    assert license.valid_from == datetime(2026, 1, 1, tzinfo=UTC)
    assert license.events.get().actor_label == "manage.py install_license"


@pytest.mark.django_db
def test_install_command_refuses_a_bad_key_with_one_clear_line(vendor_keys):
    WorkspaceFactory(slug="acme")
    key = sign_license(_here(workspace="globex"), vendor_keys)
    with time_machine.travel(NOW, tick=False), pytest.raises(CommandError) as refused:
        call_command("install_license", key, "--workspace", "acme")
    assert str(refused.value) == "license key refused: this license key is for workspace 'globex', not 'acme'"
    assert not License.objects.exists()


@pytest.mark.django_db
def test_issue_command_checks_its_input(tmp_path: Path):
    private_key_file = tmp_path / "vendor.pem"
    call_command("generate_license_keypair", "--out", str(private_key_file), stdout=StringIO(), stderr=StringIO())
    with pytest.raises(CommandError, match="exists; pass --force"):
        call_command("generate_license_keypair", "--out", str(private_key_file), stdout=StringIO())
    base = ["issue_license", "--private-key", str(private_key_file), "--workspace", "acme",
            "--installation", str(uuid.uuid4())]
    with pytest.raises(CommandError, match="unknown tier 'gold'"):
        call_command(*base, "--tier", "gold")
    with pytest.raises(CommandError, match="must end after it starts"):
        call_command(*base, "--tier", "free", "--valid-from", "2026-02-01", "--valid-until", "2026-01-01")
    with pytest.raises(CommandError, match="cannot read"):
        call_command("issue_license", "--private-key", str(tmp_path / "missing.pem"), "--workspace", "a",
                     "--installation", str(uuid.uuid4()), "--tier", "free")
    with pytest.raises(CommandError, match="installation"):
        call_command(*base[:-2], "--tier", "free")  # a key must name the installation it is for


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
