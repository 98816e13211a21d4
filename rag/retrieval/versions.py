"""Version-aware retrieval: answers come from the present unless the question names another time.

- By default a superseded chunk gives its slot to its newest counterpart (the newer text takes
  the older one's place and score, as canonical collapse does) and a retired chunk (gone from
  every newer version) is demoted and labelled "only in version X". Every tier gets this.
- A question about a version or a date ("in 2.1", "as of March 2025") is scoped to the family
  members current then, with no replacement: the past is what was asked for.
- A change question ("what changed in X between 2.1 and 3.0") searches both versions and
  interleaves their results, so the answer can state both sides.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

from django.conf import settings
from packaging.version import Version

from rag.lineage import (
    QueryLineage,
    analyse_query,
    documents_as_of,
    documents_as_of_each,
    parse_version,
    release_calendar,
    release_calendar_entries,
    release_window,
    series_label,
    version_in_series,
    version_key,
    workspace_version_labels,
)
from rag.retrieval import vectors
from rag.retrieval.options import SearchOptions


# A question that names a version, a date or a change has a digit or one of these words; any other
# question is about the present, and the workspace's labels need not be read for it.
_MAY_NAME_A_TIME = re.compile(r"\d|chang|new|differ|since|before|as of|remov|deprecat|introduc|added|compar|latest"
                              r"|recent|last|final|current|lts|long.term", re.I)
# A question about the newest release itself ("what's new in the latest release", "the last 4.2 patch", "the current
# LTS"): answered by the page of the newest release by version order, never by file date.
_LATEST_RELEASE = re.compile(r"\b(?:latest|newest|most\s+recent|current|last|final)\b(?:\W+[\w.]+){0,3}?\W+"
                             r"(?:release|version|patch|bugfix|lts|long[- ]term)", re.I)
_LONG_TERM = re.compile(r"\blts\b|long[- ]term[- ]support", re.I)
# Questions that ask for the history a release's own notes tell: those keep every release's notes at their rank.
_ASKS_HISTORY = re.compile(r"\b(?:new|chang\w*|added|removed|deprecat\w*|introduced|release\s+notes?|changelog|"
                           r"history|fix(?:es|ed)?|upgrad\w*)\b", re.I)


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

    def describe(self) -> dict[str, Any]:
        return {
            "mode": self.mode,
            "as_of_version": self.as_of_version or None,
            "as_of_date": self.as_of_date.isoformat() if self.as_of_date else None,
            "change": list(self.change) if self.change else None,
            "latest": self.latest or None,
            "query": self.query,
            # What a change question is about ("rate limit"), for the answer to quote each side's statement of it.
            "topic": self.analysis.change.topic if self.mode == "change" and self.analysis and self.analysis.change
            else "",
        }


def version_plan(query: str, options: SearchOptions) -> VersionPlan:
    """Explicit options first (`as_of_version`, `as_of_date`), then what the question itself says."""
    plan = _version_plan(query, options)
    if not (options.analyse_query and options.version_aware):
        return plan
    latest = ""
    if _LONG_TERM.search(query) and not plan.as_of_version:
        latest = "lts"
    elif _LATEST_RELEASE.search(query):
        latest = "line" if plan.mode == "as_of" and plan.as_of_version else "latest" if plan.mode == "present" else ""
    return replace(plan, latest=latest, history=bool(latest or plan.change or _ASKS_HISTORY.search(query)))


def _version_plan(query: str, options: SearchOptions) -> VersionPlan:
    workspace_id = options.workspace_id
    if options.as_of_version or options.as_of_date:
        return _as_of(query, workspace_id, options.as_of_version, options.as_of_date, None)
    if not (options.analyse_query and options.version_aware) or not _MAY_NAME_A_TIME.search(query):
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


def scoped_options(options: SearchOptions, documents: frozenset[int], *, version: str = "",
                   date: datetime | None = None) -> SearchOptions:
    """The same search held to these documents, with nothing replaced: they are the past asked about."""
    return replace(options, filters=replace(options.filters, document_ids=tuple(sorted(documents))),
                   analyse_query=False, as_of_version=version, as_of_date=date)


def newest_release_first(candidates: list, stats: dict[str, Any], *, workspace_id: int, as_of_version: str,
                         window: int) -> list:
    """Where two labelled documents say the same thing for different releases, the newer release speaks.

    Families tie a document to its own older versions; this ties a passage to its counterpart in
    any document of a newer release (a 2.1 runbook and the 3.0 operations guide), among the head of
    the ranking only. A question about a version also favours documents of that very release over
    older ones that were still current then.
    """
    if as_of_version:
        asked = parse_version(as_of_version)
        start, end = release_window(release_calendar(workspace_id=workspace_id), as_of_version)
        for candidate in candidates:
            version = parse_version(candidate.row["release_label"] or "")
            doc_date = candidate.row["doc_date"]
            if version is not None:
                of_release = asked is not None and (version == asked or version_in_series(version, asked))
            else:  # no label: written while that release was the current one
                of_release = bool(start and end and doc_date and start <= doc_date < end)
            if of_release:
                candidate.score *= settings.AS_OF_VERSION_BOOST
        candidates.sort(key=lambda c: -c.score)
    head, tail = candidates[:window], candidates[window:]
    keys = {c.chunk_id: version_key(c.row["release_label"]) for c in head if c.row["release_label"]}
    keys = {chunk_id: key for chunk_id, key in keys.items() if key}
    if not as_of_version and keys:
        # Among passages on one question, an older release's reads as the past: it ranks a little lower.
        series = {chunk_id: version_key(series_label(c.row["release_label"])) or keys[chunk_id]
                  for c in head if (chunk_id := c.chunk_id) in keys}
        newest = max(series.values())
        for candidate in head:
            if candidate.chunk_id in series and series[candidate.chunk_id] < newest:
                candidate.score *= settings.OLDER_RELEASE_DEMOTION
        head.sort(key=lambda c: -c.score)
    if len(set(keys.values())) < 2:  # one release among the head: nothing to give way to
        stats["older_release_removed"] = 0
        return sorted(head + tail, key=lambda c: -c.score)
    pairs = vectors.near_duplicate_pairs(sorted(keys), threshold=settings.RELEASE_COUNTERPART_THRESHOLD)
    newer: dict[int, tuple[str, float, int]] = {}  # older chunk -> (key, similarity, newer chunk)
    for a, b, similarity in pairs:
        if keys[a] == keys[b]:
            continue
        old, new = (a, b) if keys[a] < keys[b] else (b, a)
        best = newer.get(old)
        if best is None or (keys[new], similarity) > best[:2]:
            newer[old] = (keys[new], similarity, new)
    by_id = {c.chunk_id: c for c in head}
    kept = []
    for candidate in head:
        target_id = candidate.chunk_id
        while target_id in newer:
            target_id = newer[target_id][2]
        if target_id == candidate.chunk_id:
            kept.append(candidate)
            continue
        target = by_id[target_id]
        target.score = max(target.score, candidate.score)
        target.collapsed.append(candidate.chunk_id)
    stats["older_release_removed"] = len(head) - len(kept)
    return sorted(kept + tail, key=lambda c: -c.score)


def past_release_notes_demoted(candidates: list, *, workspace_id: int, demotion: float) -> int:
    """A release's own notes speak for that release wherever they were shipped (the 1.8 notes inside the 5.2 docs
    speak for 1.8): in a question about the present they rank below the pages of today. Returns how many."""
    pages = [(candidate, version) for candidate in candidates
             if (version := parse_version(candidate.row["series_version"] or "")) is not None]
    if not pages:
        return 0  # most questions' candidates hold no release's own notes: no calendar read on the hot path
    newest: dict[str, Version] = {}
    for entry in release_calendar_entries(workspace_id=workspace_id):
        key = entry.series.casefold()
        if key not in newest or entry.version > newest[key]:
            newest[key] = entry.version
    demoted = 0
    for candidate, version in pages:
        series = (candidate.row["series_name"] or "").casefold()
        if series in newest and version < newest[series]:
            candidate.score *= demotion
            demoted += 1
    candidates.sort(key=lambda c: -c.score)
    return demoted
