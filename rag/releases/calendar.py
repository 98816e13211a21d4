"""When each release came out: the workspace's release calendar, read from its own series pages.

Most documentation carries no version label of its own (a page of the 6.2 docs says nothing of 6.2), but a
series' pages date every release: a release-notes page names its release in its title and its date under it, a
changelog names each release in a heading (rag.releases.series, rag.releases.series_pages). Those entries, stored with
their pages, are the calendar; a page's own date stands in for an entry that states none. Staff see it in the
admin (releases, their dates, where each came from) and correct it there: a staff row dates a release or hides
one read by mistake, and outranks what the pages say.

With the calendar, "as of 6.2" becomes "written before the release after the 6.2 line", which an unlabelled
page's own date can answer.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import date as date_type
from datetime import datetime, time as dt_time
from datetime import UTC
from functools import lru_cache

from django.db import connection, transaction
from django.db.models import Min, Q
from packaging.version import Version

from rag.index_cache import index_cached
from rag.releases.cues import names_long_term_support
from rag.releases.order import parse_version, version_in_series, version_key
from rag.models import Chunk, Document, Release


@dataclass(frozen=True)
class CalendarEntry:
    series: str
    version: Version
    date: datetime
    source: str  # Release.Source


# How a calendar row is dated when its notes state no date: the page's own date stands in, below any stated one.
FILE_DATE = "the page's date"
# A release line no series page names, known from its documents' labels (the demo's 2.0: five pages labelled 2.0,
# no 2.0 notes) and dated by the earliest of them; any page or staff row of the line outranks it.
LABELLED = "its documents"
# pg_advisory_xact_lock(namespace, workspace_id) while a workspace's LABELLED rows are written again.
_LABELLED_LOCK = 0x4C41424C  # "LABL"


def _moment(day: date_type) -> datetime:
    return datetime.combine(day, dt_time.min, tzinfo=UTC)


def calendar_update(*, document_id: int) -> int:
    """The document's series entries become its calendar rows (none once it is archived or gone)."""
    return calendar_update_many(document_ids=[document_id])


def calendar_update_many(*, document_ids: Iterable[int]) -> int:
    """Each document's calendar rows, then each workspace's lines known only from labels once: a merge batch of
    50 documents refreshed the whole workspace's lines 50 times."""
    count, workspaces = 0, set()
    for document_id in document_ids:
        rows, workspace_id = _page_rows_update(document_id)
        count += rows
        if workspace_id is not None:
            workspaces.add(workspace_id)
    for workspace_id in sorted(workspaces):
        labelled_lines_refresh(workspace_id=workspace_id)
    return count


def _page_rows_update(document_id: int) -> tuple[int, int | None]:
    document = Document.objects.filter(pk=document_id).values("workspace_id", "metadata", "doc_date", "archived",
                                                               "status").first()
    Release.objects.filter(document_id=document_id, source=Release.Source.PAGE).delete()
    if document is None:
        return 0, None
    if document["archived"] or document["status"] != Document.Status.INDEXED:
        return 0, document["workspace_id"]
    rows = []
    for entry in (document["metadata"] or {}).get("release_entries") or []:
        version = parse_version(str(entry.get("version", "")))
        key = version_key(str(version)) if version else None
        if version is None or key is None:
            continue
        day = date_type.fromisoformat(entry["date"]) if entry.get("date") else None
        how = entry.get("how", "")
        if day is None and how == "title" and document["doc_date"]:
            day, how = document["doc_date"].date(), FILE_DATE  # a notes page that states no date
        rows.append(Release(workspace_id=document["workspace_id"], series=str(entry.get("series", ""))[:100],
                            version=str(version), version_key=key, date=day, document_id=document_id, how=how))
    Release.objects.bulk_create(rows)
    return len(rows), document["workspace_id"]


def labelled_lines_refresh(*, workspace_id: int) -> int:
    """The release lines the documents' labels name and no page or staff row dates, one row each dated by the
    line's earliest document: without them the calendar (and the admin's view of it) missed a release every
    "Answer as of" menu offers, and "the earliest release" named a later one. Returns how many rows."""
    with transaction.atomic():
        with connection.cursor() as cursor:  # two merges of one workspace finishing together: one refresh at a time
            cursor.execute("SELECT pg_advisory_xact_lock(%s, %s)", [_LABELLED_LOCK, workspace_id])
        return _labelled_lines_write(workspace_id)


def _labelled_lines_write(workspace_id: int) -> int:
    Release.objects.filter(workspace_id=workspace_id, how=LABELLED).delete()
    named = list(Release.objects.filter(Q(source=Release.Source.STAFF) | Q(document__archived=False),
                                        workspace_id=workspace_id).values_list("series", "version"))
    dated = {series_label(version) for _series, version in named}
    first_day: dict[str, tuple[datetime, str]] = {}  # line -> (its earliest document's date, that label)
    documents = Document.objects.active().filter(workspace_id=workspace_id, status=Document.Status.INDEXED) \
        .exclude(version_label="").exclude(doc_date=None).exclude(date_source="upload_time")
    for label, day in documents.values_list("version_label").annotate(first=Min("doc_date")).order_by():
        line = series_label(label)
        if parse_version(line) is not None and line not in dated and (line not in first_day or day < first_day[line][0]):
            first_day[line] = (day, label)
    names = best_cased(series for series, _version in named if series)
    series = next(iter(names.values())) if len(names) == 1 else ""  # the workspace's one series, where it has one
    rows = []
    for line, (day, label) in first_day.items():
        document_id = documents.filter(version_label=label, doc_date=day).values_list("pk", flat=True).first()
        rows.append(Release(workspace_id=workspace_id, series=series, version=line, version_key=version_key(line),
                            date=day.date(), document_id=document_id, how=LABELLED))
    Release.objects.bulk_create(rows)
    return len(rows)


def best_cased(names: Iterable[str]) -> dict[str, str]:
    """casefolded series -> the form it is shown in: one series however its pages case it ("LUMEN GATEWAY 3.0 -
    RELEASE NOTES" and "Lumen Gateway 2.1 Release Notes"), written as most pages write it in mixed case."""
    counted: dict[str, dict[str, int]] = {}
    for name in names:
        forms = counted.setdefault(name.casefold(), {})
        forms[name] = forms.get(name, 0) + 1
    return {key: max(forms, key=lambda form: (form != form.upper() and form != form.lower(), forms[form], form))
            for key, forms in counted.items()}


def calendar_rebuild(*, workspace_id: int) -> int:
    """Every page's calendar rows read again (`merge_duplicates`, `lineage_releases`)."""
    return calendar_update_many(document_ids=Document.objects.filter(workspace_id=workspace_id)
                                .values_list("pk", flat=True))


def release_calendar_entries(*, workspace_id: int) -> list[CalendarEntry]:
    """Every dated release of the workspace's series, oldest first: staff rows over pages', the earliest page
    (read once per change of the workspace: a search asks for it from up to four stages)."""
    return list(index_cached("calendar", workspace_id=workspace_id, compute=lambda: _calendar_entries(workspace_id)))


def _calendar_entries(workspace_id: int) -> list[CalendarEntry]:
    rows = list(Release.objects.filter(Q(source=Release.Source.STAFF) | Q(document__archived=False),
                                       workspace_id=workspace_id).values_list("series", "version", "date", "source",
                                                                              "hidden", "how"))
    staff: dict[tuple[str, str], tuple[date_type | None, bool]] = {}
    for series, version, day, source, hidden, _how in rows:
        if source == Release.Source.STAFF:
            staff[(series.casefold(), str(parse_version(version) or version))] = (day, hidden)
    read = page_dates((series, str(parse_version(version) or version), day, how)
                      for series, version, day, source, _hidden, how in rows
                      if source != Release.Source.STAFF and day is not None)
    names = best_cased(series for series, *_rest in rows)
    entries = []
    for key in sorted(set(read) | set(staff)):
        day, hidden = staff.get(key, (read[key][1] if key in read else None, False))
        version = parse_version(key[1])
        if hidden or day is None or version is None:
            continue
        entries.append(CalendarEntry(names.get(key[0], key[0]), version, _moment(day),
                                     Release.Source.STAFF if key in staff else Release.Source.PAGE))
    return sorted(entries, key=lambda entry: (entry.date, entry.version))


def page_dates(found: Iterable[tuple[str, str, date_type, str]]) -> dict[tuple[str, str], tuple[bool, date_type]]:
    """(series in any case, version) -> (a file's date stood in, the day), from the pages' (series, version, day,
    how): a date the notes state wins over any file's or documents' date, the earliest of either. A release whose page names no
    series ("Version 1.6 notes") is the one series' that names that version: its notes may state the date an older
    copy of the page left out."""
    read: dict[tuple[str, str], tuple[bool, date_type]] = {}
    for series, version, day, how in found:
        key = (series.casefold(), version)
        stood_in = how in (FILE_DATE, LABELLED)  # a file's date, or the earliest of a line's documents
        if key not in read or (stood_in, day) < read[key]:
            read[key] = (stood_in, day)
    for key in [key for key in read if not key[0]]:
        named = [other for other in read if other[0] and other[1] == key[1]]
        if len(named) == 1:
            read[named[0]] = min(read[named[0]], read.pop(key))
    return read


def release_calendar(*, workspace_id: int, series: str | None = None) -> list[tuple[Version, datetime]]:
    """The workspace's known releases and their dates, oldest first (of one series where given)."""
    found: dict[Version, datetime] = {}
    for entry in release_calendar_entries(workspace_id=workspace_id):
        if series is not None and entry.series.casefold() != series.casefold():
            continue
        if entry.version not in found or entry.date < found[entry.version]:
            found[entry.version] = entry.date
    return sorted(found.items())


def series_names(*, workspace_id: int) -> list[str]:
    """The series the workspace documents, by how many of their releases it holds pages of, most first."""
    counted: dict[str, int] = {}
    for entry in release_calendar_entries(workspace_id=workspace_id):
        if entry.series:
            counted[entry.series] = counted.get(entry.series, 0) + 1
    return sorted(counted, key=lambda name: (-counted[name], name))


def _series(label: str) -> Version | None:
    """The major.minor line a label belongs to: "8.1.0" and "8.1" both name the 8.1 docs."""
    version = parse_version(label)
    if version is None:
        return None
    return parse_version(".".join(str(part) for part in version.release[:2]))


@lru_cache(maxsize=4096)
def series_label(label: str) -> str:
    series = _series(label)
    return str(series) if series is not None else label


def release_window(calendar: Iterable[tuple[Version, datetime]], label: str) -> tuple[datetime | None, datetime | None]:
    """[first release of the line, first final release after it): when the line `label` names was current."""
    series = _series(label)
    if series is None:
        return None, None
    calendar = list(calendar)
    inside = [date for version, date in calendar if version == series or version_in_series(version, series)]
    later = [date for version, date in calendar
             if not version.is_prerelease and version > series and not version_in_series(version, series)]
    return (min(inside) if inside else None), (min(later) if later else None)


def series_end(calendar: Iterable[tuple[Version, datetime]], label: str) -> datetime | None:
    """When the line `label` names stopped being current: the date of the first final release after it."""
    return release_window(calendar, label)[1]


def newest_release_pages(*, workspace_id: int, question: str, line: str = "", long_term: bool = False) -> list[int]:
    """The pages that speak for the newest release a question asks about ("the latest Django release", "the last
    4.2 patch", "the current LTS"), by version order, never by file date: every release's notes ship with the
    newest docs. Of the series the question names where it names one; within the line `line`; of a release whose
    own page calls it long-term support (`long_term`)."""
    rows = index_cached("release pages", workspace_id=workspace_id, compute=lambda: _release_pages(workspace_id))
    named = {series.casefold() for series in {series for series, _v, _pk in rows if series}
             if re.search(rf"(?<!\w){re.escape(series)}(?!\w)", question, re.I)}
    if named:
        rows = [row for row in rows if row[0].casefold() in named]
    if line and (within := parse_version(line)) is not None:
        rows = [row for row in rows if row[1] == within or version_in_series(row[1], within)]
    if long_term:
        pages = frozenset(pk for _s, _v, pk in rows)
        said = index_cached("long-term releases", workspace_id=workspace_id, key=pages,
                            compute=lambda: _long_term_releases(pages))
        rows = [row for row in rows if (row[2], row[1]) in said]
    if not rows:
        return []
    newest = max(version for _s, version, _pk in rows)
    return sorted({pk for _s, version, pk in rows if version == newest})


def _release_pages(workspace_id: int) -> list[tuple[str, Version, int]]:
    """(series, release, page) of every final release an indexed page of the workspace speaks for."""
    rows = [(series, parse_version(version), document_id) for series, version, document_id in Release.objects.filter(
        workspace_id=workspace_id, source=Release.Source.PAGE, hidden=False, document__archived=False,
        document__status=Document.Status.INDEXED).exclude(how=LABELLED).values_list("series", "version", "document_id")]
    return [(series, version, pk) for series, version, pk in rows if version is not None and not version.is_prerelease]


def changelog_pages(*, workspace_id: int) -> frozenset[int]:
    """The pages whose headings name releases (a changelog, a chapter of release notes): each section under such a
    heading speaks for that release (read once per change of the workspace: every question about the present asks)."""
    return index_cached("changelog pages", workspace_id=workspace_id, compute=lambda: frozenset(
        Release.objects.filter(workspace_id=workspace_id, source=Release.Source.PAGE, how="heading")
        .values_list("document_id", flat=True)))


def _long_term_releases(document_ids: frozenset[int]) -> set[tuple[int, Version]]:
    """(page, release) where a passage of the page calls that very release long-term support."""
    found = set()
    for document_id, text in Chunk.objects.filter(document_id__in=document_ids, text__iregex=r"\mLTS\M|long.term.support") \
            .values_list("document_id", "text"):
        for sentence in re.split(r"(?<=[.!?])\s+", text):
            if names_long_term_support(sentence):
                found |= {(document_id, version) for version in map(parse_version, re.findall(r"\d+\.\d+(?:\.\d+)?",
                                                                                               sentence)) if version}
    return found
