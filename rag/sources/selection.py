"""Which paths of a source are documents: not hidden, taken by the include globs, not left out by the exclude ones."""

from __future__ import annotations

from collections.abc import Callable
from fnmatch import fnmatchcase
from pathlib import PurePosixPath

from rag.parsers import UnsupportedFormat, detect_format


def _matches(path: str, pattern: str) -> bool:
    """A glob against the whole relative path, or against the file name when the glob has no "/"."""
    return fnmatchcase(path, pattern) or ("/" not in pattern and fnmatchcase(path.rsplit("/", 1)[-1], pattern))


def path_selector(*, include: list[str], exclude: list[str], supported_only: bool = False) -> Callable[[str], bool]:
    """A test of relative POSIX paths; supported_only also drops formats Docent cannot read (a Git tree's code)."""
    def selected(path: str) -> bool:
        if any(part.startswith(".") for part in path.split("/")):
            return False  # .git, .github, dotfiles: never documents, as in `ingest FOLDER`
        if include and not any(_matches(path, pattern) for pattern in include):
            return False
        if any(_matches(path, pattern) for pattern in exclude):
            return False
        if supported_only:
            try:
                detect_format(PurePosixPath(path))
            except UnsupportedFormat:
                return False
        return True
    return selected

