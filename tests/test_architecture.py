"""The layering rules of ARCHITECTURE.md that import-linter has no contract for, checked on the source with `ast`
(nothing is imported); pyproject.toml's [tool.importlinter] states the rest (apps depend downward only, chat
names rag's models in few modules), run by `lint-imports` (tests/test_checks.py).

An import inside a function between our own modules usually hides a circle, so both are checked: no circle
among the project's modules, and no such import unless a comment starting `# import here:` on its line or
the line before says why. A module past 500 lines is asking to be split along a seam. A package is reached only
through its face (what its `__init__.py` exports), never a module inside it.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
APPS = ("config", "rag", "chat", "licensing", "evaluation")
MAX_LINES = 500
# Every module keeps to MAX_LINES (the lineage rewrite split families.py along its seams).
LONG_MODULES_ALLOWED: set[str] = set()
REASON_MARK = "# import here:"


@dataclass(frozen=True)
class Import:
    importer: str
    target: str
    line: int
    in_function: bool
    explained: bool


def _module_files() -> dict[str, Path]:
    """Dotted name -> file of every project module (migrations aside: Django writes them)."""
    modules = {}
    for app in APPS:
        for path in sorted((ROOT / app).rglob("*.py")):
            relative = path.relative_to(ROOT)
            if "migrations" in relative.parts:
                continue
            parts = list(relative.with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            modules[".".join(parts)] = path
    return modules


def _resolve(name: str, modules: dict[str, Path]) -> str | None:
    """The project module `name` loads: itself, or the nearest package above an attribute."""
    while name:
        if name in modules:
            return name
        name = name.rpartition(".")[0]
    return None


def _type_checking_only(node: ast.AST, parents: dict[ast.AST, ast.AST]) -> bool:
    while node in parents:
        node = parents[node]
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            return True
    return False


def _inside_function(node: ast.AST, parents: dict[ast.AST, ast.AST]) -> bool:
    while node in parents:
        node = parents[node]
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            return True
    return False


def _explained(lines: list[str], line: int) -> bool:
    own = lines[line - 1]
    before = lines[line - 2].strip() if line >= 2 else ""
    return REASON_MARK in own or before.startswith(REASON_MARK)


@cache
def _bound_names(path: Path) -> frozenset[str]:
    """Names a package's `__init__.py` binds at its top level (imported, defined or assigned)."""
    names = set()
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update(alias.asname or alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.Assign):
            names.update(target.id for target in node.targets if isinstance(target, ast.Name))
    return frozenset(names)


def _face_names(package: str, modules: dict[str, Path]) -> frozenset[str]:
    path = modules.get(package)
    return _bound_names(path) if path is not None and path.name == "__init__.py" else frozenset()


def _imports(module: str, path: Path, modules: dict[str, Path]) -> list[Import]:
    source = path.read_text()
    tree = ast.parse(source)
    lines = source.splitlines()
    parents = {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                base = ".".join(anchor + ([base] if base else []))
            # `from rag.jobs import tasks` loads the module rag.jobs.tasks; `from rag.x import f` loads rag.x, and so
            # does `from rag.retrieval import search` where the face binds `search` (the function) itself.
            targets = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules
                       and alias.name not in _face_names(base, modules) else base for alias in node.names]
        else:
            continue
        if _type_checking_only(node, parents):
            continue
        for target in targets:
            resolved = _resolve(target, modules)
            if resolved is None or resolved == module:
                continue
            found.append(Import(module, resolved, node.lineno, _inside_function(node, parents),
                                _explained(lines, node.lineno)))
    return found


def project_imports() -> list[Import]:
    modules = _module_files()
    return [found for module, path in modules.items() for found in _imports(module, path, modules)]


def import_circles(imports: list[Import]) -> list[list[str]]:
    """Strongly connected groups of more than one module (Tarjan), each sorted."""
    graph: dict[str, set[str]] = {}
    for found in imports:
        graph.setdefault(found.importer, set()).add(found.target)
        graph.setdefault(found.target, set())
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    circles = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for successor in sorted(graph[node]):
            if successor not in index:
                visit(successor)
                low[node] = min(low[node], low[successor])
            elif successor in on_stack:
                low[node] = min(low[node], index[successor])
        if low[node] == index[node]:
            group = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                group.append(member)
                if member == node:
                    break
            if len(group) > 1:
                circles.append(sorted(group))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return sorted(circles)


def unexplained_function_imports(imports: list[Import]) -> list[str]:
    return sorted({f"{found.importer}:{found.line} -> {found.target}"
                   for found in imports if found.in_function and not found.explained})


def long_modules() -> list[str]:
    long = []
    for path in _module_files().values():
        relative = path.relative_to(ROOT).as_posix()
        count = len(path.read_text().splitlines())
        if count > MAX_LINES and relative not in LONG_MODULES_ALLOWED:
            long.append(f"{relative}: {count} lines")
    return sorted(long)


def test_no_import_circle_among_project_modules():
    assert import_circles(project_imports()) == []


def test_no_unexplained_import_inside_a_function_between_project_modules():
    assert unexplained_function_imports(project_imports()) == []


def test_no_app_module_over_the_line_limit():
    assert long_modules() == []


def test_the_checks_see_a_circle_and_a_function_import(tmp_path):
    """The checker itself: a two-module circle held by an import inside a function is found."""
    imports = [Import("rag.a", "rag.b", 1, False, False), Import("rag.b", "rag.a", 5, True, False),
               Import("rag.c", "rag.a", 2, True, True)]
    assert import_circles(imports) == [["rag.a", "rag.b"]]
    assert unexplained_function_imports(imports) == ["rag.b:5 -> rag.a"]


# Every package is reached through its face: a module outside a package imports what the package's
# `__init__.py` exports (`rag.lineage`, `rag.retrieval`, `rag.parsers`), never a module inside it
# (`rag.releases.labels`, `rag.retrieval.vectors`). Inside a package, modules import one another directly.
# Django finds admin, management commands, migrations and template tags by name: no one imports them.


def _packages() -> set[str]:
    return {module for module, path in _module_files().items() if path.name == "__init__.py" and "." in module}


def reaches_past_a_face(imports: list[Import], packages: set[str]) -> list[str]:
    """Imports of a module inside a package by a module outside that package, each with the face to use."""
    wrong = []
    for found in imports:
        package = found.target.rpartition(".")[0]
        while package and package not in packages:
            package = package.rpartition(".")[0]
        if not package or found.importer == package or found.importer.startswith(package + "."):
            continue
        wrong.append(f"{found.importer}:{found.line} imports {found.target} (use {package})")
    return sorted(wrong)


def test_every_package_is_reached_through_its_face():
    assert reaches_past_a_face(project_imports(), _packages()) == []


def test_the_face_rule_sees_a_reach_into_a_package():
    packages = {"rag.models", "rag.retrieval", "rag.embeddings", "rag.ingest", "rag.ingest.parsers"}
    imports = [Import("chat.answering", "rag.retrieval.vectors", 4, False, False),
               Import("rag.dedup.merge", "rag.embeddings.cache", 6, False, False),
               Import("chat.views", "rag.models.documents", 7, False, False),
               Import("chat.views", "rag.models", 5, False, False),
               Import("rag.retrieval.search", "rag.retrieval.vectors", 8, False, False),
               Import("rag.ingest.pipeline", "rag.ingest.parsers._common", 9, False, False),
               Import("rag.ingest.pipeline", "rag.ingest.parsers", 10, False, False),
               Import("chat.answering", "rag.llm", 11, False, False)]
    assert reaches_past_a_face(imports, packages) == [
        "chat.answering:4 imports rag.retrieval.vectors (use rag.retrieval)",
        "chat.views:7 imports rag.models.documents (use rag.models)",
        "rag.dedup.merge:6 imports rag.embeddings.cache (use rag.embeddings)",
        "rag.ingest.pipeline:9 imports rag.ingest.parsers._common (use rag.ingest.parsers)",
    ]


if __name__ == "__main__":  # the before/after figures of the architecture note
    every = project_imports()
    for circle in import_circles(every):
        print("circle:", " ".join(circle))
    unexplained = unexplained_function_imports(every)
    print(len(unexplained), "unexplained imports inside functions between project modules")
    for line in unexplained:
        print("  ", line)
    print("\n".join(long_modules()))
    reaching = reaches_past_a_face(every, _packages())
    print(len(reaching), "imports past a package's face")
    for line in reaching:
        print("  ", line)
