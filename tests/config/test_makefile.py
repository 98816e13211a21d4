"""`make run` as the README shows it: the launcher's `docent:` lines and no command line of make's own."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")

FAKE_PYTHON = """#!/bin/sh
echo "$@" >> "{calls}"
if [ "$1 $2" = "-m config.launcher" ]; then echo "docent: the launcher ran"; fi
if [ "$1 $2" = "-m pip" ]; then
  echo "WARNING: Running pip as the 'root' user can result in broken permissions" >&2
  echo "SetuptoolsDeprecationWarning: License classifiers are deprecated."
fi
"""


def _make_run(tmp_path: Path) -> tuple[list[str], list[str], Path]:
    """`make run` with a stand-in interpreter: it records its calls, so nothing is installed or started.

    Its pip talks as pip and setuptools do (a root warning, a deprecation): none of it may reach the output.
    """
    calls = tmp_path / "calls"
    python = tmp_path / "python"
    python.write_text(FAKE_PYTHON.format(calls=calls))
    python.chmod(0o755)
    stamp = tmp_path / "installed"
    done = subprocess.run(["make", "--no-print-directory", "run", f"PY={python}", f"STAMP={stamp}"], cwd=ROOT,
                          capture_output=True, text=True, timeout=60, check=True)
    assert done.stderr == ""
    return done.stdout.splitlines(), calls.read_text().splitlines(), stamp


def test_make_run_prints_only_the_launchers_lines_once_installed(tmp_path: Path) -> None:
    _make_run(tmp_path)  # the first run installs
    output, calls, _ = _make_run(tmp_path)
    assert output == ["docent: the launcher ran"]
    assert calls[-1] == "-m config.launcher"


def test_make_run_still_installs_on_first_start(tmp_path: Path) -> None:
    output, calls, stamp = _make_run(tmp_path)
    assert output == ["docent: installing Docent and its dependencies (log " + f"{tmp_path}/install.log)",
                      "docent: the launcher ran"]  # pip's and setuptools' warnings went to the log
    assert "SetuptoolsDeprecationWarning" in (tmp_path / "install.log").read_text()
    assert calls[0] == "-m pip install --quiet -r requirements.lock"  # every package as locked
    assert calls[1] == "-m pip install --quiet --no-deps -e ."
    assert calls[-1] == "-m config.launcher"
    assert stamp.exists()
