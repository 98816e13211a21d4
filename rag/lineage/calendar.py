"""When each release came out, read from the workspace's own changelogs and release notes.

Most documentation carries no version label of its own (a page of the 6.2 docs says nothing of
6.2), but changelogs date every release: "Release 7.4.7 (released Jul 20, 2024)", "## [2.1.0] -
2025-02-04", "Lumen Gateway 3.0.0 was released on September 9, 2025". With those dates, "as of
6.2" becomes "written before the release after the 6.2 series", which an unlabelled page's own
date can answer.
"""

from __future__ import annotations

import re
import threading
from functools import lru_cache
import time
from datetime import datetime, time as dt_time
from datetime import timezone as dt_timezone

from django.db import connection
from packaging.version import Version

from rag.lineage.labels import parse_version, version_in_series
from rag.models import Chunk

_DATE = r"(?P<date>[A-Z][a-z]{2,8}\.? \d{1,2},? \d{4}|\d{4}-\d{2}-\d{2})"
_VERSION = r"(?P<version>v?\d+(?:\.\d+)+(?:(?:a|b|rc|\s?beta|\s?alpha)\d*)?)"
_PATTERNS = (
    re.compile(rf"{_VERSION}\s*\(\s*(?:released\s+(?:on\s+)?)?{_DATE}\s*\)", re.I),  # Release 7.4.7 (released Jul 20, 2024)
    re.compile(rf"\[{_VERSION}\]\s*[-–]\s*{_DATE}", re.I),  # ## [2.1.0] - 2025-02-04
    re.compile(rf"{_VERSION}\s+(?:was\s+)?released\s+(?:on\s+)?{_DATE}", re.I),  # 3.0.0 was released on September 9, 2025
)
_DATE_FORMATS = ("%Y-%m-%d", "%b %d, %Y", "%B %d, %Y", "%b %d %Y", "%B %d %Y", "%b. %d, %Y")
_CACHE_SECONDS = 300  # a new changelog shows up within five minutes; a search never rescans the chunks
_cache: dict[int, tuple[float, list[tuple[Version, datetime]]]] = {}
_lock = threading.Lock()


def _parse_date(text: str) -> datetime | None:
    text = " ".join(text.replace(",", ", ").split()).replace(" ,", ",")
    for fmt in _DATE_FORMATS:
        try:
            return datetime.combine(datetime.strptime(text, fmt).date(), dt_time.min, tzinfo=dt_timezone.utc)
        except ValueError:
            continue
    return None


def releases_in_text(text: str) -> dict[Version, datetime]:
    """Every (version, release date) a text states; the earliest date wins for a version named twice."""
    found: dict[Version, datetime] = {}
    for pattern in _PATTERNS:
        for match in pattern.finditer(text):
            version = parse_version(match.group("version").replace(" ", ""))
            date = _parse_date(match.group("date"))
            if version is not None and date is not None and (version not in found or date < found[version]):
                found[version] = date
    return found


def release_calendar(*, workspace_id: int) -> list[tuple[Version, datetime]]:
    """The workspace's known releases and their dates, oldest first (cached for a few minutes)."""
    now = time.monotonic()
    with _lock:
        hit = _cache.get(workspace_id)
    if hit and now - hit[0] < _CACHE_SECONDS:
        return hit[1]
    found: dict[Version, datetime] = {}
    with connection.cursor() as cursor:
        # Only rows that mention a release are read: a changelog's headings, a release note's first lines.
        cursor.execute(
            f"SELECT heading_path, text FROM {Chunk._meta.db_table} "
            "WHERE workspace_id = %s AND (heading_path ILIKE %s OR text ILIKE %s OR heading_path ~ %s)",
            [workspace_id, "%released%", "%released%", r"\[v?\d+(\.\d+)+\]"],
        )
        for heading_path, text in cursor.fetchall():
            for version, date in {**releases_in_text(text), **releases_in_text(heading_path)}.items():
                if version not in found or date < found[version]:
                    found[version] = date
    calendar = sorted(found.items())
    with _lock:
        _cache[workspace_id] = (now, calendar)
    return calendar


def release_calendar_reset() -> None:
    with _lock:
        _cache.clear()


def _series(label: str) -> Version | None:
    """The major.minor series a label belongs to: "8.1.0" and "8.1" both name the 8.1 docs."""
    version = parse_version(label)
    if version is None:
        return None
    return parse_version(".".join(str(part) for part in version.release[:2]))


@lru_cache(maxsize=4096)
def series_label(label: str) -> str:
    series = _series(label)
    return str(series) if series is not None else label


def release_window(calendar: list[tuple[Version, datetime]], label: str) -> tuple[datetime | None, datetime | None]:
    """[first release of the series, first final release after it): when the series `label` names was current."""
    series = _series(label)
    if series is None:
        return None, None
    inside = [date for version, date in calendar if version == series or version_in_series(version, series)]
    later = [date for version, date in calendar
             if not version.is_prerelease and version > series and not version_in_series(version, series)]
    return (min(inside) if inside else None), (min(later) if later else None)


def series_end(calendar: list[tuple[Version, datetime]], label: str) -> datetime | None:
    """When the series `label` names stopped being current: the date of the first final release after it."""
    return release_window(calendar, label)[1]
