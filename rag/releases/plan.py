"""What a question asks of time: the present, one release or date ("as of"), or a change between two releases.

Read from explicit bounds first, then from the question itself (rag.releases.questions); the plan names the
documents current at each side (rag.releases.scope). Retrieval searches by it (rag.retrieval.versions) and the
answer is composed by it (chat.answering).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

from rag.releases.cues import asks_history, asks_newest_release, may_name_a_time, names_long_term_support
from rag.releases.order import parse_version
from rag.releases.questions import QueryLineage, analyse_query
from rag.releases.scope import documents_as_of, documents_as_of_each, workspace_version_labels


@dataclass(frozen=True)
class VersionPlan:
    """What the question asks of time; `scopes` are (label, document ids) to search, one per side."""

    query: str  # the text to search with: the question without its version or date wording
    mode: str  # "present" | "as_of" | "change"
    as_of_version: str = ""
    as_of_date: datetime | None = None
    change: tuple[str, str] | None = None  # (old label, new label)
    scopes: tuple[tuple[str, frozenset[int]], ...] = ()
    analysis: QueryLineage | None = None
    latest: str = ""  # "latest" | "line" | "lts" where the question asks for the newest release itself
    history: bool = False  # it asks what changed or what is new: old releases' notes are not the past then

    @property
    def newest_release_line(self) -> str:
        return self.as_of_version if self.latest == "line" else ""

    @property
    def topic(self) -> str:
        """What a change question is about ("rate limit"), for the answer to quote each side's statement of it."""
        if self.mode == "change" and self.analysis and self.analysis.change:
            return self.analysis.change.topic
        return ""

    def describe(self) -> dict[str, Any]:
        """The plan as printed: `manage.py search --json`, the search API, an answer's stored search."""
        return {
            "mode": self.mode,
            "as_of_version": self.as_of_version or None,
            "as_of_date": self.as_of_date.isoformat() if self.as_of_date else None,
            "change": list(self.change) if self.change else None,
            "latest": self.latest or None,
            "query": self.query,
            "topic": self.topic,
        }


def release_plan(query: str, *, workspace_id: int, as_of_version: str = "", as_of_date: datetime | None = None,
                 analyse: bool = True) -> VersionPlan:
    """Explicit bounds first (`as_of_version`, `as_of_date`), then what the question itself says; with `analyse`
    False (version awareness or query analysis off) the question's own words are not read."""
    plan = _release_plan(query, workspace_id=workspace_id, as_of_version=as_of_version, as_of_date=as_of_date,
                         analyse=analyse)
    if not analyse:
        return plan
    latest = ""
    if names_long_term_support(query) and not plan.as_of_version:
        latest = "lts"
    elif asks_newest_release(query):
        latest = "line" if plan.mode == "as_of" and plan.as_of_version else "latest" if plan.mode == "present" else ""
    return replace(plan, latest=latest, history=bool(latest or plan.change or asks_history(query)))


def _release_plan(query: str, *, workspace_id: int, as_of_version: str, as_of_date: datetime | None,
                  analyse: bool) -> VersionPlan:
    if as_of_version or as_of_date:
        return _as_of(query, workspace_id, as_of_version, as_of_date, None)
    if not analyse or not may_name_a_time(query):
        return VersionPlan(query=query, mode="present")
    labels = workspace_version_labels(workspace_id=workspace_id)
    analysis = analyse_query(query, known_labels=labels)
    text = analysis.text.strip() or query
    change = analysis.change
    if change is not None and change.latest and change.old is None and change.new is None:
        change = None  # "what's new in the latest release": the present, found by recency
    if change is not None and labels:
        sides = _change_sides(change.old, change.new, labels)
        if sides is not None:
            old, new = sides
            current = documents_as_of_each(workspace_id=workspace_id, versions=(new, old))
            scopes = tuple((label, frozenset(current[label])) for label in (new, old))
            return VersionPlan(query=text, mode="change", change=(old, new), scopes=scopes, analysis=analysis)
    if analysis.versions or analysis.as_of_date:
        version = analysis.versions[-1] if analysis.versions else ""
        return _as_of(text, workspace_id, version, analysis.as_of_date, analysis)
    return VersionPlan(query=query, mode="present", analysis=analysis)


def _as_of(query: str, workspace_id: int, version: str, date: datetime | None,
           analysis: QueryLineage | None) -> VersionPlan:
    documents = frozenset(documents_as_of(workspace_id=workspace_id, version=version, date=date))
    return VersionPlan(query=query, mode="as_of", as_of_version=version, as_of_date=date,
                       scopes=((version, documents),), analysis=analysis)


def _change_sides(old: str | None, new: str | None, labels: list[str]) -> tuple[str, str] | None:
    """Fill in a missing side: no new side is the latest release, no old side the release before the new one."""
    ordered = sorted(labels, key=lambda label: parse_version(label) or parse_version("0"))
    if new is None:
        new = ordered[-1]
    if old is None:
        before = [label for label in ordered if (parse_version(label) or 0) < (parse_version(new) or 0)]
        if not before:
            return None
        old = before[-1]
    if parse_version(old) and parse_version(new) and parse_version(old) > parse_version(new):
        old, new = new, old
    return (old, new) if old != new else None
