"""The vendor tool, run as its users run it: a script outside the installed product."""

from __future__ import annotations

import subprocess
import sys
import tomllib
import uuid
from fnmatch import fnmatch
from pathlib import Path

import pytest
import time_machine
from django.conf import settings as django_settings

from licensing import features
from licensing.models import License, LicenseEvent
from licensing.services import has_feature, installation_id, license_install
from tests.factories import WorkspaceFactory

TOOL = Path(django_settings.BASE_DIR) / "tools" / "license_vendor.py"


def _run(*arguments: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(TOOL), *arguments], capture_output=True, text=True, timeout=60)


def test_the_tool_is_not_part_of_the_installed_packages():
    pyproject = tomllib.loads((Path(django_settings.BASE_DIR) / "pyproject.toml").read_text())
    included = pyproject["tool"]["setuptools"]["packages"]["find"]["include"]
    assert "licensing*" in included and not [pattern for pattern in included if fnmatch("tools", pattern)]


def test_keypair_is_private_from_creation_and_never_overwritten_by_accident(tmp_path: Path):
    private_key = tmp_path / "dev.pem"
    made = _run("keypair", "--out", str(private_key))
    assert made.returncode == 0, made.stderr
    assert made.stdout.startswith("LICENSE_DEVELOPMENT_KEY=")
    assert private_key.stat().st_mode & 0o777 == 0o600
    again = _run("keypair", "--out", str(private_key))
    assert again.returncode == 2 and "exists; pass --force" in again.stderr


@pytest.mark.django_db
def test_a_development_keypair_signs_keys_this_machine_installs(tmp_path: Path, settings):
    workspace = WorkspaceFactory(slug="acme")
    private_key = tmp_path / "dev.pem"
    settings.LICENSE_DEVELOPMENT_KEY = _run("keypair", "--out", str(private_key)).stdout.strip().split("=", 1)[1]
    base = ["issue", "--private-key", str(private_key), "--installation", installation_id(), "--workspace", "acme",
            "--tier", "enterprise"]
    license_id = str(uuid.uuid4())
    first = _run(*base, "--license-id", license_id, "--valid-from", "2026-01-01", "--valid-until", "2027-01-01")
    assert first.returncode == 0, first.stderr
    with time_machine.travel("2026-06-01T12:00:00Z", tick=False):
        result = license_install(key=first.stdout.strip(), workspace_slug="acme")
        assert result.created and result.development
        assert has_feature(workspace.pk, features.PROVENANCE)
    # The same id issued again later, ending later: a renewal that applies.
    with time_machine.travel("2026-12-01T12:00:00Z", tick=True):
        renewal = _run(*base, "--license-id", license_id, "--valid-from", "2026-01-01", "--valid-until", "2028-01-01")
        assert license_install(key=renewal.stdout.strip(), workspace_slug="acme").renewed
    assert License.objects.get().valid_until.year == 2028
    assert LicenseEvent.objects.filter(action=LicenseEvent.Action.RENEW).count() == 1


@pytest.mark.django_db
def test_a_key_issued_with_features_grants_exactly_those(tmp_path: Path, settings):
    workspace = WorkspaceFactory(slug="acme")
    private_key = tmp_path / "dev.pem"
    settings.LICENSE_DEVELOPMENT_KEY = _run("keypair", "--out", str(private_key)).stdout.strip().split("=", 1)[1]
    issued = _run("issue", "--private-key", str(private_key), "--installation", installation_id(), "--workspace",
                  "acme", "--tier", "enterprise", "--features", f"{features.PROVENANCE}, {features.VARIANT_METADATA}")
    assert issued.returncode == 0, issued.stderr
    license_install(key=issued.stdout.strip(), workspace_slug="acme")
    granted = {key for key in features.REGISTRY if has_feature(workspace.pk, key)}
    assert granted == {features.PROVENANCE, features.VARIANT_METADATA}


def test_issue_checks_its_input(tmp_path: Path):
    private_key = tmp_path / "vendor.pem"
    _run("keypair", "--out", str(private_key))
    base = ["issue", "--private-key", str(private_key), "--workspace", "acme", "--installation", str(uuid.uuid4())]
    refusals = {
        "not a tier slug": [*base, "--tier", "Gold Plan"],
        "must end after it starts": [*base, "--tier", "free", "--valid-from", "2026-02-01",
                                     "--valid-until", "2026-01-01"],
        "not a gate key": [*base, "--tier", "free", "--features", "rag.dedup.provenance,Provenance"],
        "cannot read": ["issue", "--private-key", str(tmp_path / "missing.pem"), "--workspace", "a",
                        "--installation", str(uuid.uuid4()), "--tier", "free"],
    }
    for message, arguments in refusals.items():
        refused = _run(*arguments)
        assert refused.returncode == 2 and message in refused.stderr, (message, refused.stderr)
    assert _run(*base[:-2], "--tier", "free").returncode == 2  # a key must name the installation it is for
