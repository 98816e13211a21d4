"""Which documents were current at a version or a date: the scope of a question about the past."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from datetime import datetime

from rag.index_cache import index_cached
from rag.releases.calendar import release_calendar, series_end, series_label
from rag.releases.order import parse_version, version_key, within_version
from rag.models import Document, Source, SourceFile


def workspace_version_labels(*, workspace_id: int) -> list[str]:
    """The versions a question may name: the active documents' labels and the releases their changelogs date,
    oldest first (read once per change of the workspace)."""
    return list(index_cached("version labels", workspace_id=workspace_id,
                             compute=lambda: _version_labels(workspace_id)))


def _version_labels(workspace_id: int) -> list[str]:
    labels = set(Document.objects.filter(workspace_id=workspace_id, archived=False).exclude(version_label="")
                 .order_by().values_list("version_label", flat=True).distinct())
    labels |= {label for label in Document.objects.filter(workspace_id=workspace_id, archived=False,
                                                           version_label="").exclude(inferred_source="")
               .order_by().values_list("inferred_label", flat=True).distinct() if label}
    labels |= {str(version) for version, _date in release_calendar(workspace_id=workspace_id)}
    labels |= {str(parse_version(tag)) for tag in _git_tags(workspace_id) if parse_version(tag) is not None}
    return sorted(labels, key=lambda label: (version_key(label) or "", label))


def documents_as_of(*, workspace_id: int, version: str = "", date: datetime | None = None) -> set[int]:
    """Active documents as a reader saw them at `version` (or `date`): the family member current then, and
    every document outside a family that existed then (no label or date counts as always there). Worked out
    once per change of the workspace."""
    return documents_as_of_each(workspace_id=workspace_id, versions=(version,), date=date)[version]


def documents_as_of_each(*, workspace_id: int, versions: Sequence[str], date: datetime | None = None) \
        -> dict[str, set[int]]:
    """`documents_as_of` at each version, the workspace's documents read at most once (the two sides of a change
    question)."""
    rows: list[list[tuple]] = []

    def current_then(version: str) -> frozenset[int]:
        if not rows:
            rows.append(index_cached("scope rows", workspace_id=workspace_id, compute=lambda: _scope_rows(workspace_id)))
        return frozenset(_current_then(rows[0], workspace_id=workspace_id, version=version, date=date))

    return {version: set(index_cached("documents as of", workspace_id=workspace_id, key=(version, date),
                                      compute=lambda version=version: current_then(version)))
            for version in versions}


def _scope_rows(workspace_id: int) -> list[tuple]:
    return list(Document.objects.filter(workspace_id=workspace_id, archived=False, status=Document.Status.INDEXED)
                .values_list("pk", "family_id", "family_position", "version_label", "doc_date", "copy_of_id", "path",
                             "inferred_label", "inferred_after"))


def _current_then(rows: list[tuple], *, workspace_id: int, version: str, date: datetime | None) -> set[int]:
    bound = series_end(release_calendar(workspace_id=workspace_id), version) if version else None
    version = series_label(version) if version else version  # "8.1.0" asks for the 8.1 docs, 8.1.3 included
    families: dict[int, list[tuple]] = defaultdict(list)
    allowed: set[int] = set()
    git_paths = _git_paths_at(workspace_id, version) if version else {}
    for pk, family_id, position, label, doc_date, copy_of, path, inferred, after in rows:
        label = label or inferred or ""  # an unlabelled document's inferred release (release_inference)
        if not label and after and version and within_version(version, after):
            continue  # known to be newer than `after`, so not there at any release up to it
        if path in git_paths:
            if git_paths[path]:  # that release's tree holds this very blob: its label may be older
                allowed.add(pk)
        elif family_id is None:
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


def _git_tags(workspace_id: int) -> list[str]:
    return [tag for state in Source.objects.filter(workspace_id=workspace_id, kind=Source.Kind.GIT)
            .values_list("state", flat=True) for tag in (state or {}).get("order", [])]


def _git_paths_at(workspace_id: int, version: str) -> dict[str, bool]:
    """Document path -> whether the tree of `version` holds it, for every Git source's document.

    `version` is a series ("1.4"): its tree is that of the newest tag within it (1.4.2), else of the
    newest tag before it. A blob only the branch holds is in no release.
    """
    decided: dict[str, bool] = {}
    for source_id, state in Source.objects.filter(workspace_id=workspace_id, kind=Source.Kind.GIT) \
            .values_list("pk", "state"):
        within = [tag for tag in (state or {}).get("order", []) if within_version(tag, version)]
        chosen = within[-1] if within else None
        for path, tags in SourceFile.objects.filter(source_id=source_id).values_list("document_path", "tags"):
            decided[path] = decided.get(path, False) or chosen in tags
    return decided


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
