"""The family scoring of benchmarks/eval_families.py on a hand-made corpus of two projects."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

# benchmarks/ is no package (and site-packages holds an unrelated "benchmarks"): found by path.
BENCHMARKS = Path(__file__).resolve().parent.parent.parent / "benchmarks"
if str(BENCHMARKS) not in sys.path:
    sys.path.append(str(BENCHMARKS))

from eval_families import family_scores  # noqa: E402

# Project "a" has three releases, "b" two. Files are named by hash in a real corpus; here by what they are.
LISTING = {
    "a1-intro": {"project": "a", "version": "1", "path": "docs/intro.rst"},
    "a2-intro": {"project": "a", "version": "2", "path": "docs/intro.rst"},
    "a3-intro": {"project": "a", "version": "3", "path": "docs/intro.rst"},
    "a1-notes": {"project": "a", "version": "1", "path": "docs/notes.rst"},
    "a2-notes": {"project": "a", "version": "2", "path": "docs/notes.rst"},
    "a3-notes": {"project": "a", "version": "3", "path": "docs/notes.rst"},
    "a3-new": {"project": "a", "version": "3", "path": "docs/new.rst"},
    "b1-intro": {"project": "b", "version": "1.0", "path": "docs/intro.rst"},
    "b2-intro": {"project": "b", "version": "2.0", "path": "docs/intro.rst"},
}


def test_a_perfect_grouping_scores_one() -> None:
    memberships = {"a1-intro": 1, "a2-intro": 1, "a3-intro": 1, "a1-notes": 2, "a2-notes": 2, "a3-notes": 2,
                   "a3-new": None, "b1-intro": 3, "b2-intro": 3}
    scores = family_scores(memberships, LISTING)
    assert scores["purity"] == 1.0
    assert scores["recall"] == 1.0
    assert scores["pages_in_2_plus_releases"] == 3
    assert scores["largest"]["size"] == 3 and scores["largest"]["project_releases"] == 3
    assert scores["largest_within_releases"] is True
    assert scores["sizes"] == {"2": 1, "3": 2}
    assert scores["documents_in_no_family"] == 1


def test_a_chained_family_loses_purity_recall_and_outgrows_its_releases() -> None:
    # Family 1 swallowed a's intro pages, two of its notes and b's intro (same path, other project);
    # a3-notes sits alone, so the notes page is split.
    memberships = {"a1-intro": 1, "a2-intro": 1, "a3-intro": 1, "a1-notes": 1, "a2-notes": 1, "b1-intro": 1,
                   "a3-notes": 2, "a3-new": None, "b2-intro": 3, "stray.txt": 4}
    scores = family_scores(memberships, LISTING)
    # Families of 2+: only family 1 (6 members), whose commonest page (a, docs/intro.rst) has 3.
    assert scores["members_in_families_of_2_plus"] == 6
    assert scores["purity"] == pytest.approx(3 / 6)
    # Pages in 2+ releases: a intro (together), a notes (split), b intro (split).
    assert scores["recall"] == pytest.approx(1 / 3)
    assert scores["largest"]["size"] == 6 and scores["largest"]["commonest_page"] == ["a", "docs/intro.rst"]
    assert scores["largest_within_releases"] is False
    assert scores["unknown_documents"] == 1


def test_a_page_with_a_copy_outside_any_family_is_not_together() -> None:
    memberships = {"b1-intro": None, "b2-intro": None}
    scores = family_scores(memberships, LISTING)
    assert scores["recall"] == 0.0
    assert scores["purity"] is None
    assert scores["largest"] == {"size": 0}
