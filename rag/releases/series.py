"""A series' pages: release notes, changelogs and "what's new" pages, which each speak for one release.

A project's documentation ships a page per release ("Django 2.2.28 release notes", "What's new in Celery 5.2",
"Lumen Gateway 3.0.0 Release Notes") or a changelog whose headings name releases ("Release 7.4.7 (released Jul
20, 2024)", "## [2.1.0] - 2025-02-04", "5.2.7" with ":release-date:" under it). Such a page speaks for its own
release wherever it was shipped: the 1.8 notes inside the 5.2 documentation speak for 1.8. Its title names the
release and, before the version, the series ("Django"); a version named in passing in a sentence ("requires
PostgreSQL 12", "... 3.8.9 (released ...)") is never one of the series'.

Pure text work: the pipeline reads a page's own release here (with its date, rag.releases.series_pages), lineage and
search read what was stored.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from rag.releases.order import parse_version

# Words that make a title a page written once per release.
SERIES_TITLE = re.compile(
    r"\b(?:release\s+notes?|changelog|change\s+log|changes|what'?s\s+new|news|history|released)\b"
    r"|^\s*(?:release|version)\s+v?\d", re.I)
_VERSION = r"v?(?P<version>\d+(?:\.\d+){1,3}(?:(?:a|b|rc)\d{1,2})?)"
# The series' name: capitalised words right before the version ("Django 2.2.28", "Lumen Gateway 3.0.0").
_NAMED = re.compile(rf"(?P<name>(?:[A-Z][\w.+-]*\s+){{1,3}}){_VERSION}(?![\w.]*\d)")
_BARE = re.compile(rf"(?<![\w.]){_VERSION}(?![\w.]*\d)")
_CUE_WORDS = {"release", "releases", "version", "versions", "what's", "whats", "new", "in", "notes", "the", "of",
              "changes", "changelog", "history", "news", "upgrading", "to"}
# A heading that is a release of a changelog: "[2.1.0] - 2025-02-04", "Release 7.4.7 (released Jul 20, 2024)",
# "v1.2.3 — 2024-03-01", "5.2.7", "Version 2.1.0".
_HEADING = re.compile(rf"^\W*(?:(?:release|version)\s+)?\[?{_VERSION}\]?(?P<rest>\W.*)?$", re.I)
# "New in version 2.0", "Changed in Django 4.1", ".. versionadded:: 3.0", "Deprecated since version 5.0".
_DIRECTIVE = re.compile(
    r"\b(?:new|changed|added|deprecated|removed)\s+(?:in|since)\s+(?:version\s+|[A-Z][\w-]*\s+)?v?(\d+\.\d+(?:\.\d+)?)"
    r"|\bversion(?:added|changed)::\s*v?(\d+\.\d+(?:\.\d+)?)", re.I)


@dataclass(frozen=True)
class SeriesRelease:
    """The release a series page speaks for, with the series' name where the title gives one."""

    series: str  # "Django"; "" when the title names no series ("Release 7.4.7")
    version: str  # as packaging prints it: "2.2.28"


def series_of(title: str) -> SeriesRelease | None:
    """The one release a page's title says it is written for, when the title is a series page's."""
    if not title or not SERIES_TITLE.search(title):
        return None
    named = [match for match in _NAMED.finditer(title) if parse_version(match["version"])]
    for match in named:
        words = [word for word in match["name"].split() if word.lower().strip(":,") not in _CUE_WORDS]
        if words:
            return SeriesRelease(" ".join(words).strip(":,"), str(parse_version(match["version"])))
    bare = [parse_version(match["version"]) for match in _BARE.finditer(title)]
    bare = [version for version in bare if version is not None]
    if len(bare) == 1:
        return SeriesRelease("", str(bare[0]))
    return None


def heading_release(heading: str) -> tuple[str, str] | None:
    """(version, the rest of the heading) where a heading is a changelog's release ("[2.1.0] - 2025-02-04")."""
    match = _HEADING.match(heading.strip())
    if match is None or parse_version(match["version"]) is None:
        return None
    rest = (match["rest"] or "").strip()
    if rest and re.search(r"[A-Za-z]{4,}", re.sub(r"\b(?:released|release|on|\w{3,9}\.?\s+\d{1,2},?\s+\d{4})\b", "", rest,
                                                flags=re.I)):
        return None  # "2.1 Configuration reference": a version in a heading's words, not a release heading
    return str(parse_version(match["version"])), rest


def mentioned_releases(text: str) -> list[str]:
    """The versions a page says something is new, changed or deprecated in: its release is at least the newest."""
    found = {str(version) for match in _DIRECTIVE.finditer(text)
             if (version := parse_version(match.group(1) or match.group(2)))}
    return sorted(found, key=parse_version)
