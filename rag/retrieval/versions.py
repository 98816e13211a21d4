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

from dataclasses import replace
from datetime import datetime
from typing import Any

from django.conf import settings
from packaging.version import Version

from rag.releases import (
    VersionPlan,
    changelog_pages,
    heading_release,
    parse_version,
    release_calendar,
    release_calendar_entries,
    release_plan,
    release_window,
    series_label,
    version_in_series,
    version_key,
)
from rag.retrieval import vectors
from rag.retrieval.options import SearchOptions


def version_plan(query: str, options: SearchOptions) -> VersionPlan:
    """What the question asks of time under these options: their explicit bounds first, then its own words."""
    return release_plan(query, workspace_id=options.workspace_id, as_of_version=options.as_of_version,
                        as_of_date=options.as_of_date, analyse=options.analyse_query and options.version_aware)


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
    labelled = {c.chunk_id: version_key(c.row["release_label"]) for c in head if c.row["release_label"]}
    keys = {chunk_id: key for chunk_id, key in labelled.items() if key}
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
    speak for 1.8), and so does a changelog's section under its release's heading ("pytest 7.0.0 (2022-02-03)"):
    in a question about the present, an older release's rank below the pages of today, however many of the
    question's words they repeat (a changelog names every setting it ever changed). Returns how many."""
    changelogs = changelog_pages(workspace_id=workspace_id)
    pages = [(candidate, *found) for candidate in candidates
             if (found := _notes_release(candidate.row, changelogs)) is not None]
    if not pages:
        return 0  # most questions' candidates hold no release's notes: no calendar read on the hot path
    newest: dict[str, Version] = {}
    for entry in release_calendar_entries(workspace_id=workspace_id):
        key = entry.series.casefold()
        if key not in newest or entry.version > newest[key]:
            newest[key] = entry.version
    demoted = 0
    for candidate, series, version in pages:
        key = series.casefold()
        if not key and len(newest) == 1:  # a heading that names no series: the workspace's one series'
            key = next(iter(newest))
        if version is None or (key in newest and version < newest[key]):
            candidate.score *= demotion
            demoted += 1
    candidates.sort(key=lambda c: -c.score)
    return demoted


def _notes_release(row: dict, changelogs: frozenset[int]) -> tuple[str, Version | None] | None:
    """(series, release) a passage speaks for: its page's own release (a release-notes page), else, on a changelog,
    the release whose heading it sits under, or (series, None) when its path names no release (an export that
    flattened its headings: "Changelog > Bug Fixes"), history all the same; None for a passage of no notes."""
    if (version := parse_version(row["series_version"] or "")) is not None:
        return row["series_name"] or "", version
    if row["document_id"] not in changelogs:
        return None
    for heading in reversed((row["heading_path"] or "").split(" > ")):
        if (found := heading_release(heading)) is not None and (version := parse_version(found[0])) is not None:
            return row["series_name"] or "", version
    return row["series_name"] or "", None
