"""The release an unlabelled document belongs to, with where that came from and how sure it is.

Most documentation names no release (a page of the 3.2 docs says nothing of 3.2), yet the files of one release
arrive together: one upload, zip, folder or sync, one format, one way of dating them (an *export*). A pile may
hold several exports of one series side by side (four releases' docs flattened into one folder, one format):
there, versions of one page tell them apart, since a family holds one member per release: walking the export's
files by date, a page met again starts the next release, cut where the dates leave their widest gap.

Each export (or part of one) is then placed by its own evidence, strongest first:

- its series pages: the newest release a page of the series speaks for (a release-notes title, a changelog
  heading) is the release the export documents, exactly ("2.2.28"): the docs of a release ship no newer notes;
- the newest "New in X" / "Changed in X" it mentions: the release is at least the X line;
- its labelled files ("3.2" in a frontmatter): their unlabelled neighbours are of their release;
- its newest date against the release calendar (rag.releases.calendar): the first release of its series at or
  after it, when something else ties it to the series.

A document outside any series (an e-mail about a room, a spreadsheet of quotas) gets no release. The inference is
stored in the Document.inferred_* columns (label, line, series, source, confidence, evidence, after); the
document's own `version_label` stays what its file or a person said, and scope (rag.releases.scope) reads this where it has none.
It runs for the workspace once a job's last merge is done (rag.jobs.merging), and by `manage.py lineage_releases`.
"""

from __future__ import annotations

import json
import os
from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime

from django.conf import settings
from django.db import connection
from packaging.version import Version

from rag.releases.calendar import CalendarEntry, release_calendar_entries, series_label
from rag.releases.order import parse_version
from rag.models import Document, IndexingJobItem

_NO_DATE = datetime.min.replace(tzinfo=UTC)
# Dates a tool or an author wrote into the file (rag.ingest.dates): a copy keeps them, where a file time is the
# copy's (an undated Markdown copy made today).
TRUSTED_DATE_SOURCES = frozenset({"pdf_moddate", "pdf_creationdate", "office_modified", "office_created",
                                  "odf_modified", "odf_created", "html_meta_date", "frontmatter", "asciidoc_revdate",
                                  "asciidoc_date", "rst_date"})


@dataclass(frozen=True)
class ReleaseGuess:
    """A release ("2.2.28", or a line "3.2" where nothing names the exact release), how it was found and how far
    to trust it (0-1)."""

    label: str
    source: str
    confidence: float
    evidence: str
    series: str = ""
    after: str = ""  # no name for it, but newer than this release (an earlier export of the same pages is it)

    def stored(self) -> dict:
        stored = {"label": self.label, "line": series_label(self.label) if self.label else "", "series": self.series,
                  "source": self.source, "confidence": round(self.confidence, 2), "evidence": self.evidence}
        return {**stored, "after": self.after} if self.after else stored


@dataclass
class _Row:
    pk: int
    path: str
    format: str
    label: str
    doc_date: datetime | None
    date_source: str
    family_id: int | None
    release: dict | None
    entries: list[dict]  # the series releases the page speaks for (rag.releases.series_pages)
    mentioned: list[str]  # "New in X" (any format) and reST's version directives
    names: dict[str, int]  # capitalised words it uses most: which series it documents
    job_id: int | None
    series: str = ""


# Document.inferred_<name>: the stored release (ReleaseGuess.stored), one column each.
_COLUMNS = ("label", "line", "series", "source", "confidence", "evidence", "after")
_ROWS_SQL = (
    f"SELECT d.id, d.path, d.format, d.version_label, d.doc_date, d.date_source, d.family_id, "
    f"{', '.join(f'd.inferred_{name}' for name in _COLUMNS)}, d.metadata->'release_entries', d.metadata->'releases_mentioned', d.metadata->'version_directives', "
    f"d.metadata->'names', (SELECT max(i.job_id) FROM {IndexingJobItem._meta.db_table} i WHERE i.document_id = d.id) "
    f"FROM {Document._meta.db_table} d WHERE d.workspace_id = %s AND NOT d.archived AND d.status = 'indexed'"
)


def _json(value):  # noqa: ANN001, ANN202 - psycopg hands jsonb back as text or as objects
    return json.loads(value) if isinstance(value, str) else value


def _rows(workspace_id: int) -> list[_Row]:
    with connection.cursor() as cursor:
        cursor.execute(_ROWS_SQL, [workspace_id])
        fetched = cursor.fetchall()
    rows = []
    for pk, path, fmt, label, doc_date, source, family, *found in fetched:
        stored, (entries, mentioned, directives, names, job) = found[:len(_COLUMNS)], found[len(_COLUMNS):]
        directives = [entry.get("version", "") for entry in _json(directives) or [] if isinstance(entry, dict)]
        rows.append(_Row(pk, path, fmt, label, doc_date, source, family, _stored_release(stored),
                         _json(entries) or [], [*(_json(mentioned) or []), *directives], _json(names) or {}, job))
    return rows


# --- which series a document documents ------------------------------------------------------------------------


def _attribute(rows: list[_Row], calendar: list[CalendarEntry]) -> None:
    """Each row's series: its own page's, else the series name it uses most (of several), else the workspace's one
    series where something ties the row to a series at all."""
    # A series is its name as its notes write it, in any case ("pytest 8.3", "Pytest 4.0"): its most used spelling.
    spellings = Counter(entry.series for entry in calendar if entry.series) + Counter(
        str(entry["series"]) for row in rows for entry in row.entries if entry.get("series"))
    spelled: dict[str, str] = {}
    for name, _count in spellings.most_common():
        spelled.setdefault(name.casefold(), name)
    named = sorted(spelled.values())
    histories: set[int] = set()  # rows whose series only their release headings name: a changelog's
    for row in rows:
        # Its own page's series: its title's, else the one its release headings name most (a changelog).
        own = [entry.get("series", "") for entry in row.entries if entry.get("how") == "title"]
        if not own:
            own = [name for name, _count in Counter(str(entry["series"]) for entry in row.entries
                                                    if entry.get("series")).most_common(1)]
            histories |= {row.pk} if own else set()
        if own:
            row.series = spelled.get(own[0].casefold(), own[0])
        elif len(named) == 1:
            row.series = named[0] if _uses(row, named[0]) or _in_a_series(row) else ""
        elif named:
            counts = {name: _uses(row, name) for name in named}
            best = max(counts.values())
            row.series = next(name for name in named if counts[name] == best) if best else ""
    # A page that names no series, in an export of one series (one folder, format and way of dating), is of it: a
    # project whose pages write its name in lowercase ("pytest") leaves no capitalised name to count.
    # Of an export whose pages name several series (a bundled component's history beside the project's pages),
    # it is of the one most of them name.
    # A changelog whose headings name another series than most of its export's pages (a package the project
    # absorbed, "pywcs Version 1.11") shipped with that export: it is of the export's project, and its releases,
    # of another series, place nothing.
    companions: dict[tuple, Counter] = defaultdict(Counter)
    others: dict[tuple, Counter] = defaultdict(Counter)  # of the pages that are not changelogs
    for row in rows:
        if row.series:
            companions[export_key(row)[1:]][row.series] += 1
            if row.pk not in histories:
                others[export_key(row)[1:]][row.series] += 1
    for row in rows:
        found = others.get(export_key(row)[1:]) if row.pk in histories else (
            None if row.series else others.get(export_key(row)[1:]) or companions.get(export_key(row)[1:]))
        if found:
            ranked = found.most_common(2)
            if len(ranked) == 1 or ranked[0][1] > ranked[1][1]:
                row.series = ranked[0][0]


def _uses(row: _Row, series: str) -> int:
    """How often the row's page names the series, in any case."""
    return sum(count for word, count in row.names.items() if word.casefold() == series.casefold())


def _in_a_series(row: _Row) -> bool:
    return bool(row.entries or row.mentioned or row.family_id or row.label)


# --- exports and their releases ----------------------------------------------------------------------------------


def export_key(row: _Row) -> tuple:
    """Files that arrived together and look alike: one folder (one upload job for browser uploads), one format, one
    way of being dated."""
    folder = os.path.dirname(row.path)
    arrival = row.job_id if row.path.startswith("uploads/") else None
    return row.series, folder, arrival, row.format, row.date_source


def releases_apart(rows: list[_Row]) -> list[list[_Row]]:
    """An export cut where one page comes again: a family holds one member per release, so a second member of one
    family in the same stretch of dates starts the next release, at the widest gap between the two."""
    dated = sorted((row for row in rows if row.doc_date is not None), key=lambda row: (row.doc_date, row.pk))
    parts: list[list[_Row]] = []
    current: list[_Row] = []
    for row in dated:
        met = [index for index, other in enumerate(current) if row.family_id and other.family_id == row.family_id]
        if met:
            start = met[-1]
            gaps = [((current[i + 1].doc_date - current[i].doc_date), i) for i in range(start, len(current) - 1)]
            gaps.append((row.doc_date - current[-1].doc_date, len(current) - 1))
            cut = max(gaps, key=lambda gap: (gap[0], gap[1]))[1]
            parts.append(current[: cut + 1])
            current = current[cut + 1:]
        current.append(row)
    if current:
        parts.append(current)
    return parts


def _newest(versions: Iterable[str]) -> Version | None:
    parsed = [version for text in versions if (version := parse_version(str(text))) is not None]
    return max(parsed, default=None)


def export_release(rows: list[_Row], calendar: list[CalendarEntry], series: str) -> ReleaseGuess | None:
    """The release one export documents, from its strongest evidence."""
    pages = _newest(entry.get("version", "") for row in rows for entry in row.entries
                    if str(entry.get("series", "")).casefold() in (series.casefold(), ""))
    mentioned = _newest(version for row in rows for version in row.mentioned)
    if pages is not None:
        agree = mentioned is None or series_label(str(mentioned)) == series_label(str(pages))
        evidence = f"its newest series page speaks for {pages}" + (f"; newest 'new in': {mentioned}" if mentioned else "")
        return ReleaseGuess(str(pages), "release_notes", 0.9 if agree else 0.75, evidence, series)
    labelled = Counter(series_label(row.label) for row in rows if row.label and parse_version(row.label))
    if labelled:
        line, count = labelled.most_common(1)[0]
        if count >= 2 and count / sum(labelled.values()) >= 0.8:
            return ReleaseGuess(line, "sibling", 0.8, f"{count} labelled file(s) of its export say {line}", series)
    if mentioned is not None:
        line = series_label(str(mentioned))
        return ReleaseGuess(line, "directives", 0.6, f"newest 'new in' it mentions: {mentioned}", series)
    if not any(row.doc_date for row in rows) or not any(_in_a_series(row) for row in rows):
        return None  # nothing ties it to a series: an e-mail, a spreadsheet
    # Dates weighed by trust: a date its tool wrote into the file over a file time (a copy made today).
    trusted = [row.doc_date for row in rows if row.doc_date and row.date_source in TRUSTED_DATE_SOURCES]
    newest = max(trusted or [row.doc_date for row in rows if row.doc_date])
    later = [entry for entry in calendar if entry.date >= newest.replace(hour=0, minute=0, second=0, microsecond=0)
             and (entry.series.casefold() == series.casefold() or not series) and not entry.version.is_prerelease]
    if not later:
        return None
    release = min(later, key=lambda entry: (entry.date, entry.version))
    return ReleaseGuess(str(release.version), "calendar", 0.4 if trusted else 0.3,
                        f"dated {newest:%Y-%m-%d}; the next release of its series is {release.version}", series)


def _decide(rows: list[_Row], calendar: list[CalendarEntry]) -> dict[int, dict | None]:
    """pk -> the release to store, for every unlabelled row whose stored release differs."""
    _attribute(rows, calendar)
    exports: dict[tuple, list[_Row]] = defaultdict(list)
    for row in rows:
        exports[export_key(row)].append(row)
    placed: list[tuple[list[_Row], ReleaseGuess]] = []
    for key, members in exports.items():
        series = key[0]
        if len(members) < settings.RELEASE_BATCH_MIN_SIZE and not any(row.entries for row in members) \
                and not any(row.mentioned for row in members):
            continue  # a few files with nothing to say: too little to place
        for part in releases_apart(members):
            guess = export_release(part, calendar, series)
            if guess is not None:
                placed.append((part, guess))
    guesses: dict[int, ReleaseGuess] = {}
    for part, guess in _later_claims(placed):
        guesses.update({row.pk: guess for row in part})
    guesses |= _after_older_members(rows, guesses)
    changes: dict[int, dict | None] = {}
    for row in rows:
        wanted = None if row.label else (guesses[row.pk].stored() if row.pk in guesses else None)
        if wanted != row.release:
            changes[row.pk] = wanted
    return changes


def _later_claims(placed: list[tuple[list[_Row], ReleaseGuess]]) -> list[tuple[list[_Row], ReleaseGuess]]:
    """Two exports of the same pages cannot both be one release: the earlier keeps it, a later one that no page of
    its own names is only known to be newer (a release's docs that mention no newer version than the last)."""
    claimed: dict[tuple[str, str], set[int]] = defaultdict(set)  # (series, label) -> families of earlier exports
    result = []
    for part, guess in sorted(placed, key=lambda item: max((row.doc_date for row in item[0] if row.doc_date),
                                                              default=_NO_DATE)):
        families = {row.family_id for row in part if row.family_id}
        key = (guess.series, guess.label)
        if guess.source != "release_notes" and families & claimed[key]:
            guess = ReleaseGuess("", guess.source, round(guess.confidence * 0.8, 2),
                                 f"{guess.evidence}; an earlier export of the same pages is {guess.label}",
                                 guess.series, after=guess.label)
        else:
            claimed[key] |= families
        result.append((part, guess))
    return result


def _after_older_members(rows: list[_Row], guesses: dict[int, ReleaseGuess]) -> dict[int, ReleaseGuess]:
    """A family member nothing else places comes after its older members' release: newer than the newest of them
    (else a question about that release would read it as current then)."""
    by_family: dict[int, list[_Row]] = defaultdict(list)
    for row in rows:
        if row.family_id:
            by_family[row.family_id].append(row)
    placed: dict[int, ReleaseGuess] = {}
    for members in by_family.values():
        members.sort(key=lambda row: (row.doc_date or _NO_DATE, row.pk))
        newest: Version | None = None
        for row in members:
            known = row.label or (guesses[row.pk].label if row.pk in guesses else "")
            if not known and row.pk not in guesses and newest is not None:
                line = series_label(str(newest))
                placed[row.pk] = ReleaseGuess("", "family", 0.5, f"after {line} in its family", row.series,
                                              after=line)
            version = parse_version(known) if known else None
            if version is not None and (newest is None or version > newest):
                newest = version
    return placed


def _stored_release(columns: list) -> dict | None:
    """The release the columns hold, as ReleaseGuess.stored gives it; None where none was inferred."""
    release = dict(zip(_COLUMNS, columns, strict=True))
    if not release["source"]:
        return None
    after = release.pop("after")
    return {**release, "after": after} if after else release


def _store(changes: dict[int, dict | None]) -> int:
    """Write the inferred releases (None removes one); one statement per distinct value."""
    by_value: dict[tuple, list[int]] = defaultdict(list)
    for pk, value in changes.items():
        release = value or {}
        by_value[tuple(release.get(name, None if name == "confidence" else "") for name in _COLUMNS)].append(pk)
    for values, pks in by_value.items():
        Document.objects.filter(pk__in=sorted(pks)).update(
            **{f"inferred_{name}": column for name, column in zip(_COLUMNS, values, strict=True)})
    return len(changes)


def workspace_releases_infer(*, workspace_id: int, dry_run: bool = False,
                             changed: list[int] | None = None) -> dict[str, int]:
    """Infer (again) the release of every active document of a workspace; a second run changes nothing. The ids
    whose release changed are added to `changed`: their families' order follows their release (rag.lineage)."""
    rows = _rows(workspace_id)
    changes = _decide(rows, release_calendar_entries(workspace_id=workspace_id))
    if not dry_run:
        _store(changes)
        if changed is not None:
            changed.extend(sorted(changes))
    inferred = Counter()
    for row in rows:
        release = changes[row.pk] if row.pk in changes else row.release
        inferred[release["source"] if release else ("label" if row.label else "none")] += 1
    return {"documents": len(rows), "changed": len(changes), **dict(sorted(inferred.items()))}


def batch_members(*, document_ids: Iterable[int]) -> list[int]:
    """The documents' whole exports (one folder, upload, format and way of dating): what a staff correction of a
    batch applies to."""
    asked = set(document_ids)
    selected = list(Document.objects.filter(pk__in=asked).values_list("workspace_id", flat=True).distinct())
    ids: set[int] = set()
    for workspace_id in selected:
        rows = _rows(workspace_id)
        _attribute(rows, release_calendar_entries(workspace_id=workspace_id))
        wanted = {export_key(row) for row in rows if row.pk in asked}
        ids.update(row.pk for row in rows if export_key(row) in wanted)
    return sorted(ids)
