"""The releases a series page speaks for, with the date it states for each (rag.releases.series reads the titles).

A release-notes page names its release in its title and states its date in its first lines, in whatever form its
project writes ("*April 11, 2022*", "Released 2023-09-30", "Release 7.4.7 (released Jul 20, 2024)", ":release-date:
2024-01-01"); a changelog names each release in a heading and dates it there or right under it. Only those places
count: a date further down is about something else. Stored with the document (metadata["release_entries"]), they
are the workspace's release calendar (rag.releases.calendar).
"""

from __future__ import annotations

import re
from datetime import datetime

from typing import TYPE_CHECKING

from rag.dates import MONTH_NAMES, parse_loose_date
from rag.releases.series import SERIES_TITLE, heading_release, mentioned_releases, series_of

if TYPE_CHECKING:  # what a parser hands over; releases sit below ingest and never load it
    from rag.parsers import ParsedDocument

NAMES_KEPT = 12  # the capitalised words a page uses most: enough to tell which project's docs it is
FIRST_LINES_CHARACTERS = 300  # where a page states its own release's date: under its title, before its text
_WRITTEN_DATE = re.compile(
    rf"\b\d{{4}}-\d{{2}}-\d{{2}}\b"
    rf"|\b(?:{MONTH_NAMES})\.?\s+\d{{1,2}}(?:st|nd|rd|th)?,?\s+\d{{4}}\b"
    rf"|\b\d{{1,2}}(?:st|nd|rd|th)?\s+(?:{MONTH_NAMES})\.?,?\s+\d{{4}}\b"
    rf"|\b\d{{1,2}}\.\d{{1,2}}\.\d{{4}}\b", re.I)


def first_date(text: str) -> datetime | None:
    """The first date written in `text` that a person would read as one."""
    for match in _WRITTEN_DATE.finditer(text):
        found = parse_loose_date(match.group(0).replace(".", " ") if not match.group(0)[:1].isdigit()
                                 else match.group(0))
        if found is not None:
            return found
    return None


def release_entries(parsed: ParsedDocument) -> list[dict]:
    """[{series, version, date, how}] for the page's own release (its title) and each release heading of a
    changelog; date "" where the page states none near it."""
    entries: list[dict] = []
    own = series_of(parsed.title)
    # Under the title, before any heading: a release heading's date below is that release's, not the page's.
    body = parsed.sections[0].text if parsed.sections and len(parsed.sections[0].heading_path) <= 1 else ""
    if own is not None:
        date = first_date(body[:FIRST_LINES_CHARACTERS])
        entries.append({"series": own.series, "version": own.version, "date": date.date().isoformat() if date else "",
                        "how": "title"})
    series = own.series if own is not None else ""
    headed = []
    for section in parsed.sections:
        found = heading_release(section.heading_path[-1]) if len(section.heading_path) >= 2 else None
        if found is None or any(entry["version"] == found[0] for entry in [*entries, *headed]):
            continue
        version, rest = found
        date = first_date(rest) or first_date(section.text[:FIRST_LINES_CHARACTERS])
        headed.append({"series": series, "version": version, "date": date.date().isoformat() if date else "",
                       "how": "heading"})
    # A changelog: its title says so, or it dates several releases in its headings ("2.1" alone is a section number).
    if SERIES_TITLE.search(parsed.title or "") or sum(bool(entry["date"]) for entry in headed) >= 3:
        entries.extend(headed)
    return entries


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
