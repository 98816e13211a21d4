"""The project's own checks, so `make test` fails where `make check` (.ci/run) would: declared dependencies, the lock
file that installs them, and the lint."""

from __future__ import annotations

import re
import subprocess
import sys
import tomllib
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
PIN = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==(\S+)", re.MULTILINE)


def _run(*command: str) -> subprocess.CompletedProcess:
    return subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=300)


def test_every_import_is_declared_and_every_declaration_imported():
    done = _run(str(BIN / "deptry"), ".", "--no-ansi")
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_code_passes_the_lint():
    done = _run(str(BIN / "ruff"), "check", "--no-cache", ".")
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_lock_pins_every_dependency_at_the_version_pyproject_names():
    """A pin changed in pyproject.toml without `make lock` would install the old version."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    declared = [Requirement(line) for line in [*project["dependencies"], *project["optional-dependencies"]["dev"]]]
    locked = {canonicalize_name(name): version for name, version in PIN.findall((ROOT / "requirements.lock").read_text())}
    drifted = {requirement.name: (str(requirement.specifier), locked.get(canonicalize_name(requirement.name)))
               for requirement in declared
               if not requirement.specifier.contains(locked.get(canonicalize_name(requirement.name), "0"),
                                                     prereleases=True)}
    assert not drifted, f"run `make lock`: pyproject.toml and requirements.lock disagree on {drifted}"
