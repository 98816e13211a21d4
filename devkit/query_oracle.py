"""The evaluation ground truths as an oracle for the query analysis: what `analyse_query` should read in each
question (a version, a change between two, or neither).

Shared by tests/rag/test_lineage_query.py (which asserts 95% agreement) and benchmarks/eval_query_analysis.py
(which prints every disagreement). Pure text analysis: no database.
"""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from rag.releases import analyse_query

ROOT = Path(__file__).resolve().parent.parent
NOW = datetime(2025, 12, 1, 12, 0, tzinfo=UTC)  # fixed: "last month" in a question reads the same on any day
# The labels each evaluation workspace has: the demo corpus's own, and the four Sphinx releases
# (short and full spelling, oldest first) that the real corpus's documents and changelog name.
ORACLE_WORKSPACES = {
    "demo/ground_truth.json": ["2.0", "2.1", "2.1.2", "3.0", "3.0.0"],
    "demo/real/ground_truth.json": ["5.3", "5.3.0", "6.2", "6.2.1", "7.4", "7.4.7", "8.1", "8.1.3"],
}


def _names(question: str, version: str) -> bool:
    return bool(re.search(rf"(?<![\w.])v?{re.escape(version)}(?![\w]|\.\d)", question))


def oracle_disagreement(entry: dict[str, Any], known_labels: list[str]) -> str | None:
    """What analyse_query gets wrong about one ground-truth question, None when it agrees.

    A "current" question names no version, date or change (a "latest release" change is
    fine); a "version" one ends its versions with `as_of` and asks no change; a "change" one
    has the sides' versions as old and new, or None for a side the question leaves implicit
    ("since 2.0", "new in 3.0")."""
    question = entry["question"]
    analysis = analyse_query(question, known_labels=known_labels, now=NOW)
    change = analysis.change
    kind = entry.get("kind", "current")
    if kind == "change":
        old, new = (side["version"] for side in entry["sides"])
        expected_old = {old} | (set() if _names(question, old) else {None})
        expected_new = {new} | (set() if _names(question, new) else {None})
        if change is None or change.old not in expected_old or change.new not in expected_new:
            return f"{question!r}: want change {old}->{new}, got {change}"
        return None
    wanted = (entry["as_of"],) if kind == "version" else ()
    latest_only = change is not None and change.latest and change.old is None and change.new is None
    agrees = (analysis.versions[-1:] == wanted and analysis.as_of_date is None
              and (change is None or (kind == "current" and latest_only)))  # fmt: skip
    if agrees:
        return None
    return f"{question!r}: want {kind} {wanted}, got versions={analysis.versions} date={analysis.as_of_date} {change}"


def oracle_results(path: str) -> list[tuple[str, str | None]]:
    """(kind, disagreement or None) for each question of one ground truth."""
    entries = json.loads((ROOT / path).read_text())
    return [(entry.get("kind", "current"), oracle_disagreement(entry, ORACLE_WORKSPACES[path])) for entry in entries]
