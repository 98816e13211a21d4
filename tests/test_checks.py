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


def test_the_imports_keep_the_layer_contracts():
    """pyproject.toml's [tool.importlinter]: apps depend downward only; chat names rag's models in few modules."""
    done = _run(str(BIN / "lint-imports"), "--no-cache")
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_layer_contracts_see_an_app_importing_upward_and_chat_reaching_rag_models(tmp_path):
    """The contracts themselves, on a copy of the apps: rag importing config and chat, chat.answering naming rag's
    models, each breaks its contract."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]
    for package in config["root_packages"]:
        for path in (ROOT / package).rglob("*.py"):
            copy = tmp_path / path.relative_to(ROOT)
            copy.parent.mkdir(parents=True, exist_ok=True)
            copy.write_text(path.read_text())
    (tmp_path / "pyproject.toml").write_text((ROOT / "pyproject.toml").read_text())
    with (tmp_path / "rag" / "dates.py").open("a") as module:
        module.write("\nimport chat.questions  # noqa\nfrom config import settings  # noqa\n")
    with (tmp_path / "chat" / "answering.py").open("a") as module:
        module.write("\nfrom rag.models import Chunk  # noqa\n")
    done = subprocess.run([str(BIN / "lint-imports"), "--no-cache"], cwd=tmp_path, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "Contracts: 0 kept, 2 broken." in done.stdout
    for chain in ("rag.dates -> chat.questions", "rag.dates -> config", "chat.answering -> rag.models"):
        assert chain in done.stdout, done.stdout


def test_the_annotated_packages_pass_the_type_check():
    """pyproject.toml's [tool.mypy]: the packages it names, with their own cache so the suite leaves the tree alone."""
    done = _run(str(BIN / "mypy"), "--cache-dir", "/dev/null")
    assert done.returncode == 0, done.stdout + done.stderr
