"""The release an unlabelled document belongs to, with where that came from and how sure it is.

Most documentation names no release (a page of the 3.2 docs says nothing of 3.2), yet the files
of one release usually arrive together: unpacked from one archive, uploaded at once, copied into
one folder, so they share a folder and a file date to the second (a *batch*). A batch says which
release it is through its own text:

- its release notes and changelogs ("Django 2.2.28 release notes", "What's new in Celery 5.2"):
  the newest release a batch describes is the release it documents;
- its Sphinx directives (`versionadded:: 2.0`, "Changed in version 2.0"): the docs of a release
  mention no newer release;
- a labelled file among them ("3.2" in a frontmatter): its unlabelled siblings are of its release.

A document in no batch gets the release whose window (release calendar) holds its date, when only
one does. The inference is stored in `Document.metadata["release"]` ({label, source, confidence,
evidence}): the document's own `version_label` stays what its file or a person said, and family
decisions (which compare labels) are not moved by a guess. Scope ("in 3.2", rag.lineage.scope) reads it
where a document has no label of its own.
"""

from __future__ import annotations

import json
import os
import re
from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime

from django.conf import settings
from django.db import connection
from packaging.version import Version

from rag.lineage.calendar import release_calendar, release_window, series_label
from rag.lineage.labels import parse_version
from rag.models import Document

_WEAK_DATE_SOURCES = {"mtime", "upload_time", "git_commit"}  # a date a batch of files shares, not one a page wrote
_NOTES_TITLE = re.compile(r"release notes|changelog|change history|changes|what'?s new|\brelease\b|history", re.I)
_TITLE_VERSION = re.compile(r"(?<![\w.])v?(\d+(?:\.\d+){1,3})(?![\w.]*\d)")


@dataclass(frozen=True)
class ReleaseGuess:
    """A release label (a series: "3.2"), how it was found and how far to trust it (0-1)."""

    label: str
    source: str
    confidence: float
    evidence: str
    after: str = ""  # no name for it, but newer than this release (an earlier batch of the same documents is it)

    def stored(self) -> dict:
        stored = {"label": self.label, "source": self.source, "confidence": round(self.confidence, 2),
                  "evidence": self.evidence}
        return {**stored, "after": self.after} if self.after else stored


def batch_key(path: str, doc_date: datetime | None, date_source: str) -> tuple[str, str] | None:
    """Files of one unpacked release share a folder and a file date to the second; a written date is no batch."""
    if doc_date is None or date_source not in _WEAK_DATE_SOURCES:
        return None
    return os.path.dirname(path), doc_date.isoformat()


def _versions_in_title(title: str) -> list[Version]:
    if not _NOTES_TITLE.search(title or ""):
        return []
    return [version for match in _TITLE_VERSION.finditer(title) if (version := parse_version(match.group(1)))]


def batch_release(rows: Iterable[dict]) -> ReleaseGuess | None:
    """The release a batch documents, from its labelled members, release notes and version directives.

    rows: dicts with title, version_label, directives (a list of versions as written).
    """
    rows = list(rows)
    labelled = Counter(series_label(row["version_label"]) for row in rows
                       if row["version_label"] and parse_version(row["version_label"]))
    if labelled:
        label, count = labelled.most_common(1)[0]
        share = count / sum(labelled.values())
        if count >= 2 and share >= 0.8:
            return ReleaseGuess(label, "sibling", round(min(0.95, 0.6 + 0.35 * share), 2),
                                f"{count} labelled file(s) of the batch say {label}")
    notes = [version for row in rows for version in _versions_in_title(row["title"])]
    directive_docs: Counter[Version] = Counter()
    for row in rows:
        directive_docs.update({version for text in row["directives"] if (version := parse_version(str(text)))})
    directives = list(directive_docs)
    newest_note = max(notes, default=None)
    newest_directive = max(directives, default=None)
    if newest_note is None and newest_directive is None:
        return None
    note_series = series_label(str(newest_note)) if newest_note else ""
    directive_series = series_label(str(newest_directive)) if newest_directive else ""
    if note_series and (not directive_series or note_series == directive_series
                        or parse_version(note_series) >= parse_version(directive_series)):
        agree = note_series == directive_series
        return ReleaseGuess(note_series, "release_notes", 0.9 if agree else 0.75,
                            f"newest release notes of the batch: {newest_note}"
                            + (f"; newest version directive: {newest_directive}" if newest_directive else ""))
    return ReleaseGuess(directive_series, "directives", 0.7 if not note_series else 0.6,
                        f"newest version directive of the batch: {newest_directive} ({directive_docs[newest_directive]}"
                        " file(s))")


def calendar_release(calendar: list[tuple[Version, datetime]], doc_date: datetime | None) -> ReleaseGuess | None:
    """The one release series whose window holds the date; none when two series were current at once."""
    if doc_date is None or not calendar:
        return None
    series = sorted({series_label(str(version)) for version, _date in calendar if not version.is_prerelease})
    holding = []
    for label in series:
        start, end = release_window(calendar, label)
        if start and start <= doc_date and (end is None or doc_date < end):
            holding.append(label)
    if len(holding) != 1:
        return None
    return ReleaseGuess(holding[0], "calendar", 0.4, f"dated {doc_date:%Y-%m-%d}, while {holding[0]} was current")


_ROWS_SQL = (
    f"SELECT id, path, title, version_label, doc_date, date_source, family_id, family_position, "
    f"COALESCE(metadata->'version_directives', '[]'::jsonb), metadata->'release' "
    f"FROM {Document._meta.db_table} WHERE workspace_id = %s AND NOT archived AND status = 'indexed'"
)


def _rows(workspace_id: int, extra: str = "", params: Iterable = ()) -> list[dict]:
    with connection.cursor() as cursor:
        cursor.execute(_ROWS_SQL + extra, [workspace_id, *params])
        fetched = cursor.fetchall()
    rows = []
    for pk, path, title, label, doc_date, date_source, family_id, position, directives, release in fetched:
        directives = json.loads(directives) if isinstance(directives, str) else directives
        release = json.loads(release) if isinstance(release, str) else release
        rows.append({"pk": pk, "path": path, "title": title, "version_label": label, "doc_date": doc_date,
                     "date_source": date_source, "release": release or None, "family_id": family_id,
                     "family_position": position,
                     "directives": [entry.get("version", "") for entry in directives or [] if isinstance(entry, dict)]})
    return rows


def _store(changes: dict[int, dict | None]) -> int:
    """Write the inferred releases (None removes one); one statement per distinct value."""
    by_value: dict[str, list[int]] = defaultdict(list)
    for pk, value in changes.items():
        by_value[json.dumps(value, sort_keys=True)].append(pk)
    with connection.cursor() as cursor:
        for value, pks in by_value.items():
            if value == "null":
                cursor.execute(f"UPDATE {Document._meta.db_table} SET metadata = metadata - 'release' "
                               "WHERE id = ANY(%s)", [sorted(pks)])
            else:
                cursor.execute(f"UPDATE {Document._meta.db_table} SET metadata = jsonb_set(COALESCE(metadata, "
                               "'{}'::jsonb), '{release}', %s::jsonb) WHERE id = ANY(%s)", [value, sorted(pks)])
    return len(changes)


def _decide(rows: list[dict], calendar: list[tuple[Version, datetime]]) -> dict[int, dict | None]:
    """pk -> the release to store, for every unlabelled row whose stored release differs."""
    batches: dict[tuple[str, str], list[dict]] = defaultdict(list)
    for row in rows:
        key = batch_key(row["path"], row["doc_date"], row["date_source"])
        if key is not None:
            batches[key].append(row)
    decided = {key: guess for key, members in batches.items()
               if len(members) >= settings.RELEASE_BATCH_MIN_SIZE and (guess := batch_release(members))}
    guesses: dict[int, ReleaseGuess | None] = {}
    for key, guess in _later_claims(decided, batches).items():
        for row in batches[key]:
            guesses[row["pk"]] = guess
    guesses |= _after_older_members(rows, guesses)
    changes: dict[int, dict | None] = {}
    for row in rows:
        if row["version_label"]:
            wanted = None  # its own label says; nothing to infer
        else:
            guess = guesses.get(row["pk"]) or calendar_release(calendar, row["doc_date"])
            wanted = guess.stored() if guess else None
        if wanted != row["release"]:
            changes[row["pk"]] = wanted
    return changes


def _after_older_members(rows: list[dict], guesses: dict[int, ReleaseGuess | None]) -> dict[int, ReleaseGuess]:
    """A family member nothing else places comes after its older members: newer than the newest release among them
    (else a question about that release would read it as current then)."""
    members: dict[int, list[tuple[int, str, dict]]] = defaultdict(list)
    for row in rows:
        if row["family_id"] and row["family_position"] is not None:
            guess = guesses.get(row["pk"])
            release = row["version_label"] or (guess.label or guess.after if guess else "")
            members[row["family_id"]].append((row["family_position"], release, row))
    placed: dict[int, ReleaseGuess] = {}
    for family in members.values():
        newest: Version | None = None
        for _position, release, row in sorted(family, key=lambda member: member[0]):
            if not release and newest is not None and not guesses.get(row["pk"]):
                label = series_label(str(newest))
                placed[row["pk"]] = ReleaseGuess("", "family", 0.5, f"after {label} in its family", after=label)
            version = parse_version(release) if release else None
            if version is not None and (newest is None or version > newest):
                newest = version
    return placed


def _later_claims(decided: dict[tuple[str, str], ReleaseGuess],
                  batches: dict[tuple[str, str], list[dict]]) -> dict[tuple[str, str], ReleaseGuess]:
    """Two batches of the same documents (sharing families) cannot both be one release: the earlier keeps it,
    a later one is only known to be newer (docs of a release that no directive or note names yet)."""
    by_label: dict[str, list[tuple[str, str]]] = defaultdict(list)
    for key, guess in decided.items():
        by_label[guess.label].append(key)
    for label, keys in by_label.items():
        seen: set[int] = set()
        for key in sorted(keys, key=lambda key: key[1]):  # by the batch's date
            families = {row["family_id"] for row in batches[key] if row["family_id"]}
            if families & seen:
                guess = decided[key]
                decided[key] = ReleaseGuess("", guess.source, round(guess.confidence * 0.8, 2),
                                            f"{guess.evidence}; an earlier batch of the same documents is {label}",
                                            after=label)
            seen |= families
    return decided


def workspace_releases_infer(*, workspace_id: int, dry_run: bool = False) -> dict[str, int]:
    """Infer (again) the release of every active document of a workspace: `manage.py lineage_releases`."""
    rows = _rows(workspace_id)
    changes = _decide(rows, release_calendar(workspace_id=workspace_id))
    if not dry_run:
        _store(changes)
    inferred = Counter()
    for row in rows:
        release = changes[row["pk"]] if row["pk"] in changes else row["release"]
        inferred[release["source"] if release else ("label" if row["version_label"] else "none")] += 1
    return {"documents": len(rows), "changed": len(changes), **dict(sorted(inferred.items()))}


def document_release_infer(*, document_id: int) -> int:
    """After a document is indexed: its batch's release (the batch's other members follow new evidence).

    Reads the document's batch only (same folder and file date), never the whole workspace.
    """
    document = Document.objects.filter(pk=document_id).values("workspace_id", "path", "doc_date", "date_source") \
        .first()
    if document is None:
        return 0
    key = batch_key(document["path"], document["doc_date"], document["date_source"])
    if key is None:
        rows = _rows(document["workspace_id"], " AND id = %s", [document_id])
    else:
        rows = _rows(document["workspace_id"], " AND doc_date = %s AND date_source = %s",
                     [document["doc_date"], document["date_source"]])
        rows = [row for row in rows if batch_key(row["path"], row["doc_date"], row["date_source"]) == key]
    calendar = release_calendar(workspace_id=document["workspace_id"])
    changes = _decide(rows, calendar)
    claimed = {value["label"] for value in changes.values() if value and value["label"]}
    families = {row["family_id"] for row in rows if row["family_id"]}
    for label in claimed:
        # An earlier batch of the same documents already is this release: this batch is a newer one.
        if key is not None and families and Document.objects.filter(
                workspace_id=document["workspace_id"], family_id__in=families, doc_date__lt=document["doc_date"],
                version_label="", metadata__release__label=label).exists():
            for pk, value in changes.items():
                if value and value["label"] == label:
                    changes[pk] = {**value, "label": "", "after": label,
                                   "confidence": round(value["confidence"] * 0.8, 2),
                                   "evidence": f"{value['evidence']}; an earlier batch of the same documents is {label}"}
    return _store(changes)


def batch_members(*, document_ids: Iterable[int]) -> list[int]:
    """The documents' whole batches (same folder and file date): what a staff correction of a batch applies to."""
    selected = list(Document.objects.filter(pk__in=list(document_ids))
                    .values_list("workspace_id", "path", "doc_date", "date_source"))
    ids: set[int] = set()
    for workspace_id, path, doc_date, date_source in selected:
        key = batch_key(path, doc_date, date_source)
        if key is None:
            ids.update(Document.objects.filter(workspace_id=workspace_id, path=path).values_list("pk", flat=True))
            continue
        for pk, other in Document.objects.filter(workspace_id=workspace_id, doc_date=doc_date,
                                                 date_source=date_source).values_list("pk", "path"):
            if os.path.dirname(other) == key[0]:
                ids.add(pk)
    return sorted(ids)
