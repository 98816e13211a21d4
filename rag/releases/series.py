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

from rag.dates import MONTH_NAMES
from rag.releases.order import parse_version

# Words that make a title a page written once per release.
SERIES_TITLE = re.compile(
    r"\b(?:release\s+notes?|changelog|change\s+log|changes|what'?s\s+new|news|history|released|releases)\b"
    r"|^\s*(?:release|version)\s+v?\d", re.I)
_VERSION = r"v?(?P<version>\d+(?:\.\d+){1,3}(?:(?:a|b|rc)\d{1,2})?)"
# The series' name: capitalised words right before the version ("Django 2.2.28", "Lumen Gateway 3.0.0").
_NAMED = re.compile(rf"(?P<name>(?:[A-Z][\w.+-]*\s+){{1,3}}){_VERSION}(?![\w.]*\d)")
_BARE = re.compile(rf"(?<![\w.]){_VERSION}(?![\w.]*\d)")
_CUE_WORDS = {"release", "releases", "version", "versions", "what's", "whats", "new", "in", "notes", "the", "of",
              "changes", "changelog", "history", "news", "upgrading", "to"}
# A heading that is a release of a changelog: "[2.1.0] - 2025-02-04", "Release 7.4.7 (released Jul 20, 2024)",
# "v1.2.3 — 2024-03-01", "5.2.7", "Version 2.1.0", "Lumen 3.2", "What's new in Lumen 3.2", "Lumen 3.2 release notes".
_HEADING = re.compile(
    rf"^\W*(?:(?:what'?s\s+new\s+in|changes\s+in|release\s+notes\s+for)\s+)?"
    rf"(?P<name>(?:[A-Za-z][\w.+-]*\s+){{0,3}}?)(?:(?:release|version)\s+)?\[?{_VERSION}\]?(?P<rest>\W.*)?$", re.I)
# Words before a version that make a heading something else than a release's ("Upgrading to 3.0", "Python 3.8
# support", "Removed in 2.0").
_NOT_A_NAME = {"upgrading", "upgrade", "migrating", "migration", "porting", "from", "support", "supported", "requires",
               "requirements", "python", "deprecated", "removed", "added", "fixed", "changed", "since", "before",
               "after", "until", "for", "and", "or", "with", "without", "using", "see", "between"}
# What a release heading may say besides its version: that it is a release, its notes, its date.
_HEADING_WORDS = re.compile(r"\b(?:released|release|notes?|on|changes|changelog|what'?s\s+new)\b", re.I)
# A date as release notes write one: "2024-03-12", "Mar 12, 2024", "12 March 2024", "12.03.2024".
WRITTEN_DATE = re.compile(
    rf"\b\d{{4}}-\d{{2}}-\d{{2}}\b"
    rf"|\b(?:{MONTH_NAMES})\.?\s+\d{{1,2}}(?:st|nd|rd|th)?,?\s+\d{{4}}\b"
    rf"|\b\d{{1,2}}(?:st|nd|rd|th)?\s+(?:{MONTH_NAMES})\.?,?\s+\d{{4}}\b"
    rf"|\b\d{{1,2}}\.\d{{1,2}}\.\d{{4}}\b", re.I)
# A version that has not come out: "(unreleased)", "planned for 4.0", a roadmap, "4.0.dev0", "in development".
FUTURE = re.compile(
    r"\b(?:unreleased|not\s+(?:yet\s+)?released|to\s+be\s+released|upcoming|planned|roadmap|in\s+development"
    r"|under\s+development|development\s+version|dev\d*|tbd|tba|future|next\s+release|nightly|in\s+progress)\b", re.I)

# "New in version 2.0", "Changed in Django 4.1", ".. versionadded:: 3.0", "Deprecated since version 5.0".
_DIRECTIVE = re.compile(
    r"\b(?P<verb>new|changed|added|deprecated|removed)\s+(?:in|since)\s+(?:version\s+|[A-Z][\w-]*\s+)?"
    r"v?(?P<version>\d+\.\d+(?:\.\d+)?)"
    r"|\bversion(?:added|changed)::\s*v?(?P<directive>\d+\.\d+(?:\.\d+)?)"
    # "shipped with Lumen Gateway 3.0", "introduced in 3.0": the page is of that release or later.
    r"|\b(?:shipped|introduced)\s+(?:with|in)\s+(?:version\s+|(?-i:[A-Z][\w-]*)\s+){0,2}v?(?P<shipped>\d+\.\d+(?:\.\d+)?)",
    re.I)
# Words before a mention that make it a promise, not a release: "will be removed in 4.0", "to be changed in 5.0",
# "scheduled for removal in 6.0"; "deprecated since 3.2, removed in 4.0" names the removal's release ahead of it.
_PROMISE = re.compile(r"\b(?:will|shall|would|to\s+be|going\s+to|scheduled|planned|slated|expected|pending|until"
                      r"|deprecat\w*)\b(?:[^.;:\n]|\.(?=\d))*$", re.I)
_PROMISE_AFTER = re.compile(r"^\W{0,3}\(?\s*(?:unreleased|upcoming|planned|future|not\s+yet\s+released)", re.I)


# A history's title that names whose releases its headings list: "PyFITS Changelog", "astropy.io.fits History",
# "Router release notes". A project's docs may bundle the history of a package they absorbed: its bare release
# headings ("3.4.0 (2016-01-29)") are that package's, never the project's.
_HISTORY_TITLE = re.compile(r"^\W*(?P<name>[\w.+-]+(?:\s+[\w.+-]+){0,2}?)\s+(?:release\s+notes|release\s+history"
                            r"|changelog|change\s+log|changes|history|news)\W*$", re.I)
# Words before "changelog" that describe it, not whose it is ("Full changelog", "Release history").
_DESCRIBING = {"full", "complete", "detailed", "project", "recent", "old", "older", "past", "previous", "legacy",
               "archived", "our", "your", "its", "this", "major", "minor"}


def history_series(heading: str) -> str:
    """The series a history's title names ("PyFITS Changelog": "PyFITS"); "" where it names none ("Changelog",
    "Full changelog", "Changes in 2.0")."""
    match = _HISTORY_TITLE.match(heading.strip())
    if match is None or any(word.lower().strip(":,") in _CUE_WORDS | _DESCRIBING | _NOT_A_NAME
                            or parse_version(word) is not None for word in match["name"].split()):
        return ""
    return match["name"].strip(":,")


@dataclass(frozen=True)
class SeriesRelease:
    """The release a series page speaks for, with the series' name where the title gives one."""

    series: str  # "Django"; "" when the title names no series ("Release 7.4.7")
    version: str  # as packaging prints it: "2.2.28"


def series_of(title: str) -> SeriesRelease | None:
    """The one release a page's title says it is written for, when the title is a series page's."""
    if not title or not SERIES_TITLE.search(title) or FUTURE.search(title):
        return None  # "Roadmap for 4.0", "4.0 release notes (unreleased)": not a release yet
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
    """(version, the rest of the heading) where a heading is a changelog's release ("[2.1.0] - 2025-02-04", "Lumen
    3.2", "Version 3.0 (released 2023-06-01)"); never one the heading calls future ("4.0 (unreleased)")."""
    release = heading_series_release(heading)
    return (release.version, release.rest) if release is not None else None


@dataclass(frozen=True)
class HeadingRelease:
    """A changelog heading's release: the series its heading names ("" where none), the version, the rest."""

    series: str
    version: str
    rest: str


def heading_series_release(heading: str) -> HeadingRelease | None:
    """The release a heading names, with the series' name written before the version ("Lumen 3.2")."""
    match = _HEADING.match(heading.strip())
    if match is None or parse_version(match["version"]) is None or FUTURE.search(heading):
        return None
    rest = (match["rest"] or "").strip()
    if rest and re.search(r"[A-Za-z]{4,}", _HEADING_WORDS.sub("", WRITTEN_DATE.sub("", rest))):
        return None  # "2.1 Configuration reference": a version in a heading's words, not a release heading
    if any(word.lower().strip(":,") in _NOT_A_NAME for word in match["name"].split()):
        return None
    words = [word for word in match["name"].split() if word.lower() not in _CUE_WORDS]
    name = " ".join(words).strip(":,")
    return HeadingRelease(name, str(parse_version(match["version"])), rest)


def mentioned_releases(text: str) -> list[str]:
    """The versions a page says something is new, changed or deprecated in: its release is at least the newest.
    A promise is no release: "will be removed in 4.0", "deprecated since 3.2, removed in 4.0" name 4.0 ahead."""
    found = set()
    for match in _DIRECTIVE.finditer(text):
        if match["version"] and (_PROMISE.search(text[max(0, match.start() - 80):match.start()])
                                 or _PROMISE_AFTER.match(text[match.end():match.end() + 30])):
            continue
        if (version := parse_version(match["version"] or match["directive"] or match["shipped"])) is not None:
            found.add(str(version))
    return sorted(found, key=parse_version)
