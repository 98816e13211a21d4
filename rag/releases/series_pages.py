"""The releases a series page speaks for, with the date it states for each (rag.releases.series reads the titles).

A release-notes page names its release in its title and states its date in its first lines, in whatever form its
project writes ("*April 11, 2022*", "Released 2023-09-30", "Release 7.4.7 (released Jul 20, 2024)", ":release-date:
2024-01-01"); a changelog names each release in a heading and dates it there or right under it. Only those places
count, or a date the notes call the release's in so many words ("Release date: 12 March 2024", "Released on ..."),
and a table of releases with their dates. A release its notes call future is none. Stored with the document (metadata["release_entries"]), they
are the workspace's release calendar (rag.releases.calendar).
"""

from __future__ import annotations

import re
from collections import Counter
from datetime import datetime
from typing import TYPE_CHECKING

from rag.dates import parse_loose_date
from rag.releases.order import parse_version
from rag.releases.series import (
    FUTURE, SERIES_TITLE, WRITTEN_DATE, SeriesRelease, heading_series_release, history_series, mentioned_releases,
    series_of,
)

if TYPE_CHECKING:  # what a parser hands over; releases sit below ingest and never load it
    from rag.parsers import ParsedDocument

NAMES_KEPT = 12  # the capitalised words a page uses most: enough to tell which project's docs it is
FIRST_LINES_CHARACTERS = 300  # where a page states its own release's date: under its title, before its text
NAMED_RUN = 3  # headings naming releases of one series, newest first, that make a page its changelog
MOSTLY = 0.8  # of its release headings, and of their steps from one to the next, newest first
STATED_CHARACTERS = 1500  # how far down a release's notes may say "Release date: ..." in so many words
# A date said to be the release's in so many words: "Release date: 12 March 2024", "Released on 2023-11-02",
# ":release-date: 2024-01-01", "Date of release: ...".
_STATED = re.compile(r"(?:\brelease[-_ ]?date|\breleased(?:\s+on)?|\bdate\s+of\s+(?:the\s+)?release)\s*[:\-\u2013\u2014]?\s*",
                     re.I)
_STATED_KEYS = ("release date", "release-date", "release_date", "released", "date of release")
# Said under a release's heading: the release has not come out ("Not yet released", "Release date: TBD").
_NOT_OUT = re.compile(r"\b(?:unreleased|not\s+(?:yet\s+)?released|in\s+development|release\s+date\W+(?:tbd|tba|unknown))\b",
                      re.I)
# A row of a table of releases, as any parser reads one back: "3.2 | 2024-03-12", "3.2: Release date: 2024-03-12."
_TABLE_ROW = re.compile(r"^\W{0,3}(?:(?-i:[A-Z][\w.+-]*)\s+){0,2}v?(?P<version>\d+(?:\.\d+){1,3})(?![\w.]*\d)(?P<rest>.{0,80})$",
                        re.I | re.M)


def first_date(text: str) -> datetime | None:
    """The first date written in `text` that a person would read as one."""
    for match in WRITTEN_DATE.finditer(text):
        found = parse_loose_date(match.group(0).replace(".", " ") if not match.group(0)[:1].isdigit()
                                 else match.group(0))
        if found is not None:
            return found
    return None


def stated_date(text: str) -> datetime | None:
    """The date `text` says its release came out on, in so many words ("Release date: 12 March 2024")."""
    for match in _STATED.finditer(text[:STATED_CHARACTERS]):
        if (found := first_date(text[match.end():match.end() + 40])) is not None:
            return found
    return None


def _release_date(*texts: str) -> str:
    """The release's date: stated in so many words under it, else the first date right under it."""
    found = next((date for text in texts if (date := stated_date(text)) is not None), None) or next(
        (date for text in texts if (date := first_date(text[:FIRST_LINES_CHARACTERS])) is not None), None)
    return found.date().isoformat() if found else ""


def _field_date(parsed: ParsedDocument) -> str:
    """A release date in the page's fields (reST docinfo ":Release date: 12 March 2024", frontmatter)."""
    fields = {str(key).casefold(): value for key, value in (parsed.metadata or {}).items()}
    for key in _STATED_KEYS:
        if isinstance(fields.get(key), str) and (found := first_date(fields[key]) or parse_loose_date(fields[key])):
            return found.date().isoformat()
    return ""


def _table_entries(text: str, series: str) -> list[dict]:
    """A table of releases with their dates (two rows at least): each row a release of the series."""
    rows = []
    for match in _TABLE_ROW.finditer(text):
        date = first_date(match["rest"])
        if date is None or FUTURE.search(match.group(0)) or parse_version(match["version"]) is None:
            continue
        rows.append({"series": series, "version": str(parse_version(match["version"])),
                     "date": date.date().isoformat(), "how": "table"})
    return rows if len(rows) >= 2 else []


def release_entries(parsed: ParsedDocument) -> list[dict]:
    """[{series, version, date, how}] for the page's own release (its title), each release heading of a changelog
    and each row of a table of releases; date "" where its notes state none. A release its notes call future
    ("4.0 (unreleased)", "Release date: TBD") is none."""
    entries: list[dict] = []
    own = series_of(parsed.title)
    # Under the title, before any heading: a release heading's date below is that release's, not the page's.
    body = parsed.sections[0].text if parsed.sections and len(parsed.sections[0].heading_path) <= 1 else ""
    # A title that is only a release ("NetworkX 3.4.2") with "Release date: ..." right under it: that release's notes.
    if own is None and (titled := heading_series_release(parsed.title or "")) is not None and not titled.rest \
            and stated_date(body[:FIRST_LINES_CHARACTERS]) is not None:
        own = SeriesRelease(titled.series, titled.version)
    if own is not None and not _NOT_OUT.search(body[:FIRST_LINES_CHARACTERS]):
        entries.append({"series": own.series, "version": own.version,
                        "date": _field_date(parsed) or _release_date(body), "how": "title"})
    series = own.series if own is not None else ""
    headed, tabled = [], []
    for section in parsed.sections:
        heading = section.heading_path[-1] if section.heading_path else ""
        found = heading_series_release(heading) if len(section.heading_path) >= 2 or (
            heading and heading != parsed.title) else None
        in_notes = SERIES_TITLE.search(parsed.title or "") or any(
            SERIES_TITLE.search(ancestor) for ancestor in section.heading_path[:-1])
        if in_notes or (heading and SERIES_TITLE.search(heading)):
            tabled += _table_entries(section.text, series)
        if found is None or _NOT_OUT.search(section.text[:FIRST_LINES_CHARACTERS]) \
                or any(entry["version"] == found.version for entry in [*entries, *headed]):
            continue
        # A heading that is itself a release's notes title ("What's New in Astropy 4.3?"): pages joined into one
        # file (a PDF chapter) keep each page's title as a heading.
        notes_title = series_of(heading) is not None
        # A bare release heading is of the series its nearest history heading names ("PyFITS Changelog" over
        # "3.0.1 (2011-09-12)"), else the page's own release's: a bundled history never dates the project's releases.
        named = next((name for ancestor in reversed(section.heading_path[:-1]) if (name := history_series(ancestor))), "")
        headed.append({"series": found.series or named or series, "version": found.version,
                       "date": _release_date(found.rest, section.text), "how": "heading",
                       "in_notes": bool(in_notes) or notes_title})
    # A changelog: its title or a heading above says so, or it dates several releases in its headings ("2.1" alone
    # is a section number), or its headings name releases of one named series newest first ("8.x Series" over
    # "IPython 8.29", "IPython 8.28", ...: section numbers count up, and a name before each is no section's).
    several = sum(bool(entry["date"]) for entry in headed) >= 3
    run = "" if several else _named_run(headed)
    entries.extend({key: value for key, value in entry.items() if key != "in_notes"}
                   for entry in headed if entry["in_notes"] or several or (run and entry["series"] == run))
    known = {entry["version"] for entry in entries}
    entries.extend(entry for entry in tabled if entry["version"] not in known and not known.add(entry["version"]))
    return entries


def _named_run(headed: list[dict]) -> str:
    """The series whose releases most of the headings name, newest first for the most part (a backport's heading
    may stand out of order), three at least; "" where none."""
    counted = Counter(entry["series"] for entry in headed)
    series, count = counted.most_common(1)[0] if counted else ("", 0)
    versions = [parse_version(entry["version"]) for entry in headed if entry["series"] == series]
    falling = sum(newer > older for newer, older in zip(versions, versions[1:]) if newer and older)
    # A name, not a phrase: "Issues closed in 7.17" heads a list of issues, "Lumen Gateway 3.0" a release.
    phrase = any(word[:1].islower() for word in series.split()[1:])
    named = series and not phrase and count >= NAMED_RUN and count >= MOSTLY * len(headed) and falling >= MOSTLY * (count - 1)
    return series if named else ""


def releases_mentioned(parsed: ParsedDocument) -> list[str]:
    """"New in version 2.0" and the like, in any format: the page's release is at least the newest of them."""
    return mentioned_releases("\n".join(section.text for section in parsed.sections))


_NAME_WORD = re.compile(r"(?<![.!?]\s)(?<!^)\b[A-Z][a-z]{2,}\b", re.M)


def frequent_names(parsed: ParsedDocument) -> dict[str, int]:
    """The capitalised words a page uses most, sentence starts aside ("Django": 41): which series it documents
    (rag.releases.inference), where its folder holds several projects' docs."""
    counted: dict[str, int] = {}
    for section in parsed.sections:
        for word in _NAME_WORD.findall(section.text):
            counted[word] = counted.get(word, 0) + 1
    return dict(sorted(counted.items(), key=lambda item: (-item[1], item[0]))[:NAMES_KEPT])


def series_metadata(parsed: ParsedDocument) -> dict:
    """What a page says of its series, stored with it: the releases it speaks for (the calendar's entries), the
    releases it mentions, the names it uses most."""
    stored = {"release_entries": release_entries(parsed), "releases_mentioned": releases_mentioned(parsed),
              "names": frequent_names(parsed)}
    return {key: value for key, value in stored.items() if value}
