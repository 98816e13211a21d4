"""docs/configuration.md is the whole list of settings: this test keeps it from drifting from the code."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TABLE = ROOT / "docs" / "configuration.md"
SETTINGS_MODULES = [ROOT / "config" / "settings.py", ROOT / "config" / "tuning.py"]
# Where a variable the table lists may also be read (the launcher, the embedded services, our apps).
READERS = [ROOT / name for name in ("config", "rag", "chat", "licensing")]
ENV_NAME = re.compile(r"`([A-Z][A-Z0-9_]+)`")


def settings_variables() -> set[str]:
    """Names passed to `env(...)` / `env.<cast>(...)` in the settings modules: what settings read."""
    names: set[str] = set()
    for module in SETTINGS_MODULES:
        for node in ast.walk(ast.parse(module.read_text())):
            if not (isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant)):
                continue
            function = node.func
            called_on_env = (isinstance(function, ast.Name) and function.id == "env") or (
                isinstance(function, ast.Attribute) and isinstance(function.value, ast.Name)
                and function.value.id == "env")
            if called_on_env and isinstance(node.args[0].value, str):
                names.add(node.args[0].value)
    return names


def table_variables() -> set[str]:
    """Names in the first column of the table's rows (a row may name several related variables)."""
    names: set[str] = set()
    for line in TABLE.read_text().splitlines():
        if line.startswith("| `"):
            names.update(ENV_NAME.findall(line.split("|")[1]))
    return names


def string_constants() -> set[str]:
    """Every string literal in our Python code: a name read elsewhere appears as one (`os.environ.get("X")`)."""
    found: set[str] = set()
    for folder in READERS:
        for path in folder.rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text())):
                if isinstance(node, ast.Constant) and isinstance(node.value, str):
                    found.add(node.value)
    return found


def test_every_variable_the_settings_read_is_in_the_table():
    missing = sorted(settings_variables() - table_variables())
    assert not missing, (f"config/settings.py or config/tuning.py read {len(missing)} variable(s) that "
                         f"docs/configuration.md does not list; add a row (name, default, what it does) for: "
                         f"{', '.join(missing)}")


def test_every_variable_in_the_table_is_read_somewhere():
    read = settings_variables() | string_constants()
    stale = sorted(table_variables() - read)
    assert not stale, (f"docs/configuration.md lists {len(stale)} variable(s) that nothing reads; remove them "
                       f"from the table: {', '.join(stale)}")


def test_the_extraction_sees_the_settings():
    """A parser that found nothing would pass the two tests above vacuously."""
    assert {"DATA_DIR", "MERGE_THRESHOLD", "UPLOAD_MAX_FILES", "DB_CONN_MAX_AGE"} <= settings_variables()
    assert len(table_variables()) >= 100
