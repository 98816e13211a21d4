"""docs/configuration.md is the whole list of settings: generated from the declarations, and every variable the code
reads is declared. These tests keep the file, the declarations and the code from drifting apart."""

from __future__ import annotations

import ast
from pathlib import Path

from config.configuration import described
from config.configuration_docs import DOC, document, render

ROOT = Path(__file__).resolve().parents[2]
# Our code: wherever a variable may be read (the settings, the launcher, the embedded services, the apps).
READERS = [ROOT / name for name in ("config", "rag", "chat", "licensing", "evaluation")] + [
    ROOT / "manage.py", ROOT / "gunicorn.conf.py"]


def _python_files() -> list[Path]:
    return [path for folder in READERS for path in ([folder] if folder.is_file() else sorted(folder.rglob("*.py")))]


def _string_constants(tree: ast.Module) -> dict[str, str]:
    """Module-level `NAME = "TEXT"`: a variable's name kept in a constant (`ROLE_ENV = "DOCENT_SERVICES_ROLE"`)."""
    return {target.id: node.value.value for node in tree.body if isinstance(node, ast.Assign)
            and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str)
            for target in node.targets if isinstance(target, ast.Name)}


def _is_environment(node: ast.expr) -> bool:
    """`os.environ`, an `environ` mapping handed in, django-environ's `env` / `Env()`."""
    if isinstance(node, ast.Attribute) and node.attr == "environ":
        return True
    if isinstance(node, ast.Name) and node.id in ("environ", "env"):
        return True
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "Env"


def environment_reads() -> dict[str, str]:
    """Every variable name the code reads from the environment -> where: `os.environ.get(X)`, `os.environ[X]`,
    `os.getenv(X)`, `environ.get(X)`, `env.<cast>(X)`; X a string or a module constant holding one."""
    reads: dict[str, str] = {}
    for path in _python_files():
        tree = ast.parse(path.read_text())
        constants = _string_constants(tree)
        for node in ast.walk(tree):
            key: ast.expr | None = None
            if isinstance(node, ast.Call) and node.args and isinstance(node.func, ast.Attribute):
                function = node.func
                reading = (_is_environment(function.value) and function.attr not in ("setdefault", "update", "pop")
                           ) or (function.attr == "getenv" and isinstance(function.value, ast.Name))
                key = node.args[0] if reading else None
            elif isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Load) and _is_environment(node.value):
                key = node.slice
            if isinstance(key, ast.Constant) and isinstance(key.value, str):
                reads.setdefault(key.value, str(path.relative_to(ROOT)))
            elif isinstance(key, ast.Name) and key.id in constants:
                reads.setdefault(constants[key.id], str(path.relative_to(ROOT)))
    return reads


def _attributes_and_strings() -> set[str]:
    """Attribute names (`_config.DB_CONN_MAX_AGE`) and string literals anywhere in our code."""
    found: set[str] = set()
    for path in _python_files():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Attribute):
                found.add(node.attr)
            elif isinstance(node, ast.Constant) and isinstance(node.value, str):
                found.add(node.value)
    return found


def test_the_committed_doc_is_what_the_declarations_generate():
    current = DOC.read_text()
    assert document(current) == current, ("docs/configuration.md differs from config/variables.py and "
                                          "config/tuning.py: run `python -m config.configuration_docs`")


def test_every_variable_the_code_reads_is_declared():
    declared = {name for name, _ in described()}
    undeclared = {name: where for name, where in environment_reads().items() if name not in declared}
    assert not undeclared, (f"read from the environment but declared nowhere (add it to config/variables.py or "
                            f"config/tuning.py, then run `python -m config.configuration_docs`): {undeclared}")


def test_every_declared_variable_is_used():
    """A setting of its own name, or read by its name somewhere: a declaration nothing uses is a stale row."""
    used = _attributes_and_strings()
    unused = [name for name, field in described()
              if not field.json_schema_extra["setting"] and name not in used]
    assert not unused, f"declared but read nowhere; remove them from the declarations: {unused}"


def test_every_declaration_says_what_it_does_in_one_line():
    for name, field in described():
        assert field.description and "\n" not in field.description and "|" not in field.description, name
    rows = [line for line in render().splitlines() if line.startswith("| `")]
    assert len(rows) == len(described()) >= 150


def test_the_extraction_sees_the_reads():
    """A scan that found nothing would pass the test above vacuously: these are read outside the settings."""
    reads = environment_reads()
    assert {"DOCENT_ADMIN_PASSWORD", "DOCENT_SERVICES_ROLE", "DOCENT_EMBEDDED_START", "PROMETHEUS_MULTIPROC_DIR",
            "DOCENT_WORKER_CONCURRENCY", "DOCENT_EMBEDDING_ENCODER", "DATA_DIR"} <= set(reads), sorted(reads)
