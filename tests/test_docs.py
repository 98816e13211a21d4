"""The README stays a front door, docs/ links hold, and the version that moves has its changelog entry."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
DOCS = sorted((ROOT / "docs").glob("*.md"))
LINK = re.compile(r"\]\(([^)#\s]+)(?:#[^)]*)?\)")


def test_the_readme_is_a_front_door():
    assert len(README.read_text().splitlines()) <= 150


def test_the_readme_explains_its_words_before_using_them():
    text = README.read_text()
    glossary = text.index("## Words Docent uses")
    for word in ("Writer Pro", "canonical record", "famil"):
        assert text.index(word) > glossary, f"the README uses {word!r} before explaining it"


def test_every_relative_link_points_at_a_file():
    broken = []
    for page in [README, *DOCS]:
        for target in LINK.findall(page.read_text()):
            if "://" not in target and not (page.parent / target).exists():
                broken.append(f"{page.relative_to(ROOT)} -> {target}")
    assert not broken, broken


def test_the_readme_leads_to_every_page_of_the_docs():
    linked = set(LINK.findall(README.read_text()))
    assert {f"docs/{page.name}" for page in DOCS} <= linked


def test_the_version_has_a_changelog_entry_and_the_terms_are_stated():
    version = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    assert version != "0.1.0"
    assert re.search(rf"^## {re.escape(version)}\b", (ROOT / "CHANGELOG.md").read_text(), re.MULTILINE)
    assert "All rights reserved" in (ROOT / "LICENSE").read_text()
