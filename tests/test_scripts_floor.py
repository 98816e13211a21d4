"""The floor under the scripts and the test suite, checked on the source with `ast` (nothing is imported).

devkit/ holds what tests, benchmarks and demo share (fault injection, scan images, an S3 server, a fake LLM
server, synthetic and format corpora, the query-analysis oracle). benchmarks/ and demo/ import it, never the test
suite; devkit imports nothing of the test suite; and no installed product package imports devkit or the tests.
devkit keeps to the 500-line rule of the apps: it is code people read, only not code users run.
"""

from __future__ import annotations

import ast
import re
import tomllib
from collections.abc import Iterable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SCRIPTS = ("benchmarks", "demo")
MAX_LINES = 500


def product_packages() -> list[str]:
    """What pyproject.toml installs, devkit aside: config, rag, chat, licensing, evaluation."""
    include = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"]["find"]["include"]
    return [pattern.rstrip("*") for pattern in include if pattern.rstrip("*") != "devkit"]


def names_of(package: str, source: str) -> list[str]:
    """`line: name` of each absolute import of `package` in `source`, and of each string that is one of its
    dotted module names (`celery -A tests.rag.fault_app` takes the module as a string)."""
    dotted = re.compile(rf"{package}(\.\w+)+")
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and not node.level:
            names = [node.module or ""]
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and dotted.fullmatch(node.value):
            names = [node.value]
        else:
            continue
        found += [f"{node.lineno}: {name}" for name in names if name == package or name.startswith(f"{package}.")]
    return found


def files_naming(package: str, folders: Iterable[str]) -> list[str]:
    return [f"{path.relative_to(ROOT)}:{name}"
            for folder in folders for path in sorted((ROOT / folder).rglob("*.py"))
            for name in names_of(package, path.read_text())]


def test_benchmarks_and_demo_import_nothing_from_the_test_suite():
    assert files_naming("tests", SCRIPTS) == []


def test_devkit_imports_nothing_from_the_test_suite():
    assert files_naming("tests", ["devkit"]) == []


def test_no_product_package_imports_devkit_or_the_test_suite():
    packages = product_packages()
    assert {"config", "rag", "chat", "licensing", "evaluation"} <= set(packages)
    assert files_naming("devkit", packages) + files_naming("tests", packages) == []


def test_devkit_modules_keep_to_the_line_limit():
    long = [f"{path.relative_to(ROOT)}: {count} lines" for path in sorted((ROOT / "devkit").rglob("*.py"))
            if (count := len(path.read_text().splitlines())) > MAX_LINES]
    assert long == []


def test_the_check_sees_the_test_suite_named_in_imports_and_module_strings():
    source = '''"""Built as tests/scans.py draws them."""
import tests
import os, tests.scans
from tests.rag.fault_app import TIME_LIMITS
from devkit.faults import PoolWorker
from . import tests_like
worker = PoolWorker(app="tests.rag.fault_app", name="tests")
'''
    assert names_of("tests", source) == ["2: tests", "3: tests.scans", "4: tests.rag.fault_app",
                                         "7: tests.rag.fault_app"]
