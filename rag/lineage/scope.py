"""Which documents were current at a version or a date: the scope of a question about the past."""

from __future__ import annotations

from collections import defaultdict
from datetime import datetime

from rag.lineage.calendar import release_calendar, series_end, series_label
from rag.lineage.labels import parse_version, version_key, within_version
from rag.models import Document


def workspace_version_labels(*, workspace_id: int) -> list[str]:
    """The versions a question may name: the active documents' labels and the releases their changelogs date,
    oldest first."""
    labels = set(Document.objects.filter(workspace_id=workspace_id, archived=False).exclude(version_label="")
                 .order_by().values_list("version_label", flat=True).distinct())
    labels |= {str(version) for version, _date in release_calendar(workspace_id=workspace_id)}
    return sorted(labels, key=lambda label: (version_key(label) or "", label))


def documents_as_of(*, workspace_id: int, version: str = "", date: datetime | None = None) -> set[int]:
    """Active documents as a reader saw them at `version` (or `date`): the family member current then, and
    every document outside a family that existed then (no label or date counts as always there)."""
    bound = series_end(release_calendar(workspace_id=workspace_id), version) if version else None
    version = series_label(version) if version else version  # "8.1.0" asks for the 8.1 docs, 8.1.3 included
    rows = Document.objects.filter(workspace_id=workspace_id, archived=False, status=Document.Status.INDEXED) \
        .values_list("pk", "family_id", "family_position", "version_label", "doc_date", "copy_of_id")
    families: dict[int, list[tuple]] = defaultdict(list)
    allowed: set[int] = set()
    for pk, family_id, position, label, doc_date, copy_of in rows:
        if family_id is None:
            if _existed(label, doc_date, version=version, date=date, release_end=bound):
                allowed.add(pk)
        else:
            families[family_id].append((position if position is not None else 0, pk, label, doc_date, copy_of))
    for members in families.values():
        members.sort()
        current: int | None = None
        for _position, pk, label, doc_date, copy_of in members:
            if copy_of is not None:
                continue  # a copy stands with its original
            if not _existed(label, doc_date, version=version, date=date, release_end=bound):
                break  # members are in order: everything after this one is newer still
            current = pk
        if current is not None:
            allowed.add(current)
            # Its copies too, unless a copy was made after that time (the same text in a later release).
            allowed.update(pk for _p, pk, label, doc_date, copy_of in members if copy_of == current
                           and _existed(label, doc_date, version=version, date=date, release_end=bound))
    return allowed


def _existed(label: str, doc_date: datetime | None, *, version: str, date: datetime | None,
             release_end: datetime | None) -> bool:
    """Whether a document was there at `version` (its label says, else its date against the next release's) or
    at `date`; with nothing to tell, it counts as always there."""
    if version and label and parse_version(label) is not None:
        return within_version(label, version)
    if version and release_end and doc_date:
        return doc_date < release_end
    if date and doc_date:
        return doc_date <= date
    return True
