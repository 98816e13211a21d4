"""Which release a page of the corpora speaks for: the ground truth the release-variant benchmark judges by.

A documentation bundle (the docs of Django 5.1.4) is one release, but it also ships its project's *series
pages*, the release notes and changelogs of every earlier release: the 1.8 notes inside the 5.1.4 docs speak
for 1.8 (issue 35, "a series page speaks for its own release"). This module knows them by the source tree's
layout (`docs/releases/1.8.txt`, `docs/history/changelog-4.4.rst`), never by how Docent reads a page, so
that the benchmark stays independent of the product's phrasing rules.

- a *release page* speaks for one release (Django's `releases/4.2.17.txt`, Celery's `whatsnew-5.3.rst`);
- a *line page* speaks for one release line and lists its patch releases (Celery's
  `history/changelog-5.0.rst`, Sphinx's `doc/changes/7.4.rst`): its line is known, its exact release is not;
- a *changelog* is the project's whole changelog as a bundle ships it, newest release first (Sphinx's
  `CHANGES.rst`): it speaks for the bundle's release, which is its first entry;
- every other page speaks for the bundle it was shipped in.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime

from packaging.version import InvalidVersion, Version

# project -> [(pattern on the path inside the sdist, "release" | "line")]; the pattern's `v` group is the version.
SERIES_PATHS: dict[str, list[tuple[re.Pattern[str], str]]] = {
    "django": [(re.compile(r"docs/releases/(?P<v>\d+(?:\.\d+)+(?:-(?:alpha|beta|rc)(?:-\d+)?)?)\.txt"), "release")],
    "celery": [(re.compile(r"docs/(?:history/)?whatsnew-(?P<v>\d+\.\d+)\.rst"), "release"),
               (re.compile(r"docs/history/changelog-(?P<v>\d+\.\d+)\.rst"), "line")],
    "sphinx": [(re.compile(r"doc/changes/(?P<v>\d+\.\d+)\.rst"), "line"),
               (re.compile(r"CHANGES\.rst"), "changelog")],
    "flask": [],  # its changelog is an `include` of a file outside docs/: no series page ships
}


@dataclass(frozen=True)
class Expected:
    """The release a page speaks for: its line ("4.2") and, where one release is meant, that release."""

    line: str
    release: str | None  # None: a line page, which speaks for every patch release of its line
    series: str  # "release", "line" (a series page) or "bundle" (any other page: its bundle's release)


def release_line(version: str) -> str:
    """"4.2.17" -> "4.2", "5.4" -> "5.4", "1.0a1" -> "1.0": the line a release belongs to."""
    parsed = Version(version)
    release = (*parsed.release, 0)[:2]
    return f"{release[0]}.{release[1]}"


def parsed_version(text: str) -> Version | None:
    try:
        return Version(text)
    except InvalidVersion:
        return None


def series_page(project: str, path: str) -> tuple[str, str] | None:
    """(kind, version) of a series page ("release", "line", or "changelog" with no version of its own), or None
    for any other page."""
    for pattern, kind in SERIES_PATHS.get(project, []):
        if not (match := pattern.fullmatch(path)):
            continue
        if kind == "changelog":
            return kind, ""
        if parsed_version(match["v"]) is not None:
            return kind, str(Version(match["v"]))
    return None


def expected_release(*, project: str, path: str, release: str) -> Expected:
    """What a page of the bundle `release` (e.g. "5.1.4") should be assigned: its own release for a series page,
    the bundle's otherwise."""
    found = series_page(project, path)
    if found is None or found[0] == "changelog":
        return Expected(line=release_line(release), release=release, series="bundle")
    kind, version = found
    return Expected(line=release_line(version), release=version if kind == "release" else None, series=kind)


def label_matches(label: str, expected: Expected) -> tuple[bool, bool]:
    """(the label names the expected line, the label is the expected release) — "2.2.28" for a page of the 2.2.28
    docs is both, "2.2" the line only, "40b8594" neither. Versions compare as packaging does ("5.4" == "5.4.0")."""
    version = parsed_version(label.strip().lstrip("vV")) if label else None
    if version is None:
        return False, False
    prerelease_expected = expected.release is not None and Version(expected.release).is_prerelease
    line_ok = (len(version.release) >= 2 and release_line(str(version)) == expected.line
               and (not version.is_prerelease or prerelease_expected))  # "2.2b1" is not the 2.2.28 docs
    exact = expected.release is not None and version == Version(expected.release)
    return line_ok, exact


# How the series pages of the corpora date their release near their top: Django's "*April 11, 2022*", Sphinx's
# "Release 8.1.3 (released Oct 13, 2024)", Celery's ":release-date: 2021-06-28".
_RELEASE_DATES = (
    (re.compile(r"\*([A-Z][a-z]+ \d{1,2}, \d{4})\*"), "%B %d, %Y"),
    (re.compile(r"\(released ([A-Z][a-z]{2}) (\d{1,2}), (\d{4})\)"), "%b %d %Y"),
    (re.compile(r":release-date: (\d{4}-\d{2}-\d{2})"), "%Y-%m-%d"),
)
TOP_CHARACTERS = 2000  # a series page states its newest release's date this close to its top


def release_written(text: str) -> datetime | None:
    """The newest release date a series page states near its top (None: it states none), from the source text:
    when its release happened, so that the page was last touched then."""
    found = []
    for pattern, form in _RELEASE_DATES:
        for match in pattern.finditer(text[:TOP_CHARACTERS]):
            try:
                found.append(datetime.strptime(" ".join(match.groups()), form).replace(tzinfo=UTC))
            except ValueError:
                continue
    return max(found, default=None)
