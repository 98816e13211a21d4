"""Which keys a license may be signed by: vendor keys built in, and a development key only on this machine."""

from __future__ import annotations

import os
import subprocess
import sys
from io import StringIO
from pathlib import Path

import pytest
from django.conf import settings as django_settings
from django.core.management import call_command, get_commands
from django.utils import timezone

from licensing import features, trust
from licensing.keys import LicenseKeyError, generate_keypair, load_private_key, load_public_key
from licensing.models import License
from licensing.services import has_feature, license_install, workspace_tier
from tests.factories import UserFactory, WorkspaceFactory
from tests.licensing.factories import LicenseFactory, signed_key_for

pytestmark = pytest.mark.django_db
NOTICE = "development key: not a genuine license"


def _unsaved(slug: str = "acme", **fields) -> License:
    """The terms of a license to sign, for a workspace that exists; not saved (installing saves it)."""
    workspace = WorkspaceFactory(slug=slug)
    return LicenseFactory.build(workspace=workspace, **fields)


def test_vendor_keys_are_built_in_and_readable():
    assert trust.VENDOR_PUBLIC_KEYS, "genuine licenses need at least one vendor key"
    for text in trust.VENDOR_PUBLIC_KEYS:
        load_public_key(text)


def test_a_license_signed_by_a_built_in_vendor_key_is_genuine(vendor_key):
    license = _unsaved()
    result = license_install(key=signed_key_for(license, private_key=vendor_key), workspace_slug="acme")
    assert result.created and not result.development
    info = workspace_tier(license.workspace.pk)
    assert info is not None and not info.development and info.development_notice == ""


def test_a_rotated_vendor_key_keeps_verifying_what_it_signed(monkeypatch):
    old_pem, old_public = generate_keypair()
    new_pem, new_public = generate_keypair()
    monkeypatch.setattr(trust, "VENDOR_PUBLIC_KEYS", (new_public, old_public))
    first, second = _unsaved("acme"), _unsaved("globex")
    license_install(key=signed_key_for(first, private_key=load_private_key(old_pem)), workspace_slug="acme")
    license_install(key=signed_key_for(second, private_key=load_private_key(new_pem)), workspace_slug="globex")
    assert all(has_feature(license.workspace.pk, features.PROVENANCE) for license in (first, second))


def test_the_environment_cannot_add_a_trusted_key(tmp_path: Path):
    """The old LICENSE_PUBLIC_KEY made any self-made key genuine; `manage.py check` reports it set, and a start with
    it set is refused."""
    _, public_text = generate_keypair()
    environment = {**os.environ, "LICENSE_PUBLIC_KEY": public_text, "DATA_DIR": str(tmp_path),
                   "DOCENT_EMBEDDED_START": "0"}
    for command, status in ((["check"], 1), (["shell", "-c", "pass"], 2)):
        started = subprocess.run([sys.executable, "manage.py", *command], env=environment,
                                 cwd=django_settings.BASE_DIR, capture_output=True, text=True, timeout=120)
        assert started.returncode == status, started.stderr
        assert "LICENSE_PUBLIC_KEY=" in started.stderr and "no longer read" in started.stderr


def test_vendor_tooling_is_not_a_command_of_the_product():
    commands = get_commands()
    assert "install_license" in commands
    assert not {"generate_license_keypair", "issue_license"} & set(commands)


# --- the development key ----------------------------------------------------------------------


def test_a_development_license_grants_on_this_machine_and_says_it_is_not_genuine(client, settings):
    settings.SERVES_NETWORK = False
    license = _unsaved()
    out = StringIO()
    call_command("install_license", signed_key_for(license), "--workspace", "acme", stdout=out)
    assert NOTICE in out.getvalue()
    assert has_feature(license.workspace.pk, features.PROVENANCE)
    info = workspace_tier(license.workspace.pk)
    assert info is not None and info.development and info.development_notice == NOTICE

    member = UserFactory()
    license.workspace.members.add(member)
    client.force_login(member)
    assert NOTICE in client.get("/documents/").content.decode()
    admin = UserFactory(is_staff=True, is_superuser=True)
    client.force_login(admin)
    row = License.objects.get()
    assert NOTICE in client.get("/admin/licensing/license/").content.decode()
    assert NOTICE in client.get(f"/admin/licensing/license/{row.pk}/change/").content.decode()


def test_a_development_license_grants_nothing_once_the_instance_serves_the_network(client, settings):
    license = LicenseFactory()  # installed while serving this machine alone
    assert has_feature(license.workspace_id, features.PROVENANCE)
    settings.SERVES_NETWORK = True
    assert not has_feature(license.workspace_id, features.PROVENANCE)
    assert workspace_tier(license.workspace_id) is None
    admin = UserFactory(is_staff=True, is_superuser=True)
    client.force_login(admin)
    page = client.get("/admin/licensing/license/").content.decode()
    assert f"grants nothing ({NOTICE}" in page

    fresh = _unsaved("globex")
    with pytest.raises(LicenseKeyError, match=f"{NOTICE}; it grants nothing on an instance that serves the network"):
        license_install(key=signed_key_for(fresh), workspace_slug="globex")
    assert License.objects.count() == 1


def test_a_genuine_license_still_grants_when_the_instance_serves_the_network(settings, vendor_key):
    settings.SERVES_NETWORK = True
    license = _unsaved()
    license_install(key=signed_key_for(license, private_key=vendor_key), workspace_slug="acme")
    assert has_feature(license.workspace.pk, features.PROVENANCE)


def test_an_unreadable_development_key_refuses_with_its_name(settings):
    settings.LICENSE_DEVELOPMENT_KEY = "not a key"
    license = _unsaved()
    with pytest.raises(LicenseKeyError, match="LICENSE_DEVELOPMENT_KEY is not a readable"):
        license_install(key=signed_key_for(license), workspace_slug="acme")


def test_the_development_key_cannot_renew_a_genuine_license(vendor_key):
    license = _unsaved()
    license_install(key=signed_key_for(license, private_key=vendor_key), workspace_slug="acme")
    later = signed_key_for(license, tier="enterprise", issued_at=timezone.now())
    with pytest.raises(LicenseKeyError, match=f"is genuine; {NOTICE} cannot renew it"):
        license_install(key=later, workspace_slug="acme")
    assert License.objects.get().tier.slug == "writer-pro"
