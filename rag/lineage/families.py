"""Document families: which documents are versions of one another, in what order, and what each
older passage became.

Evidence that two active documents are versions of one another (`_related`), any of:

- a large share of either one's chunks has a counterpart (cosine >= FAMILY_COUNTERPART_THRESHOLD)
  in the other, and their sizes are comparable;
- their titles are equal once version labels and dates are stripped, or their paths are equal
  once a version segment is replaced, and the content agrees a little (generic titles such as
  "Introduction" would otherwise tie unrelated pages together); never for documents written once
  per release (release notes, "what's new", a page titled only "Product 8.0"), which share a name
  but not a text.

Candidates come from the merge's pgvector neighbour search and from titles and paths, never from
all pairs; the decision for a pair is computed from both documents' vectors, so an incremental
update and a rebuild reach the same families.

Within a family, members are ordered by version label where both have one, else by date (an
explicit date before a file mtime before an upload time). A member whose content repeats an
earlier member is a copy: it takes that member's place whatever its own date, because a newer
version is one whose content changed. Each chunk of a member that is not the newest is then
superseded (it has a counterpart in a newer member: same heading once labels are stripped, else
the nearest chunk above the threshold) or retired (its content left the later versions).
"""

from __future__ import annotations

import logging
import re
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from functools import cached_property
from datetime import timezone as dt_timezone

import numpy as np
from django.conf import settings
from django.db import connection, transaction
from django.db.models import Q

from rag.lineage.labels import strip_versions, version_key, version_stem_key
from rag.models import Chunk, Document, DocumentFamily
from rag.unionfind import UnionFind

logger = logging.getLogger(__name__)

_OLDEST = datetime.min.replace(tzinfo=dt_timezone.utc)
# Documents written once per release ("2.1 Release Notes", "What's new in 3.0") share a title, not a text:
# a name alone does not make them versions of one another (a cumulative changelog still joins by content).
_PER_RELEASE = re.compile(r"\b(release notes?|changelog|change log|changes|what'?s new|news|history)\b", re.I)


@dataclass
class _Member:
    id: int
    title: str
    path: str
    version_label: str
    version_key: str
    version_source: str
    doc_date: datetime | None
    date_confidence: int
    indexed_at: datetime | None
    chunk_count: int
    family_id: int | None
    family_position: int | None

    @cached_property
    def title_key(self) -> str:
        return strip_versions(self.title)

    @property
    def per_release(self) -> bool:
        """Written once per release ("2.1 Release Notes", "Sphinx 8.0"): named like the others, never a version
        of them."""
        return bool(_PER_RELEASE.search(self.title)) or bool(self.version_key and len(self.title_key.split()) <= 2
                                                            and self.version_source == "title")

    @cached_property
    def repository_key(self) -> str | None:
        """A Git source's document (git/SOURCE/REF/path, rag.sources): SOURCE/path, the one file across refs."""
        parts = self.path.split("/", 3)
        return f"{parts[1]}/{parts[3]}" if len(parts) == 4 and parts[0] == "git" else None

    @cached_property
    def path_key(self) -> str | None:
        return self.repository_key or version_stem_key(self.path)


@dataclass
class _Vectors:
    """One document's chunks: ids, unit vectors, heading paths with labels stripped, text hashes."""

    ids: list[int]
    matrix: np.ndarray
    headings: list[str]
    hashes: list[str]


_MEMBER_FIELDS = ("id", "title", "path", "version_label", "version_key", "version_source", "doc_date",
                  "date_source", "indexed_at", "chunk_count", "family_id", "family_position")


def _members(queryset) -> dict[int, _Member]:
    rows = queryset.filter(archived=False, status=Document.Status.INDEXED).values_list(*_MEMBER_FIELDS)
    found = {}
    for row in rows:
        values = dict(zip(_MEMBER_FIELDS, row))
        date_source = values.pop("date_source")
        values["date_confidence"] = Document.WEAK_DATE_SOURCES.get(date_source, 2)
        found[values["id"]] = _Member(**values)
    return found


class _VectorCache:
    def __init__(self) -> None:
        self._by_document: dict[int, _Vectors] = {}

    def load(self, document_ids: Iterable[int]) -> None:
        missing = [pk for pk in document_ids if pk not in self._by_document]
        if not missing:
            return
        grouped: dict[int, list[tuple]] = defaultdict(list)
        with connection.cursor() as cursor:
            # As real[]: psycopg's C loader reads it, where a vector would be parsed from text in Python.
            cursor.execute(
                f"SELECT document_id, id, embedding::real[], heading_path, text_hash FROM {Chunk._meta.db_table} "
                "WHERE document_id = ANY(%s) ORDER BY document_id, chunk_index", [missing])
            for row in cursor.fetchall():
                grouped[row[0]].append(row[1:])
        for pk in missing:
            rows = grouped.get(pk, [])
            matrix = np.array([row[1] for row in rows], dtype=np.float32).reshape(len(rows), -1)
            if len(rows):
                matrix /= np.maximum(np.linalg.norm(matrix, axis=1, keepdims=True), 1e-9)
            self._by_document[pk] = _Vectors(
                ids=[row[0] for row in rows],
                matrix=matrix,
                headings=[_heading_key(row[2]) for row in rows],
                hashes=[row[3] for row in rows],
            )

    def __getitem__(self, document_id: int) -> _Vectors:
        self.load([document_id])
        return self._by_document[document_id]


def _heading_key(heading_path: str) -> str:
    """The heading path below the title, labels stripped: "Lumen 3.0 API > Limits" and "Lumen API v2.1 > Limits"
    name the same section."""
    parts = [part for part in heading_path.split(" > ") if part.strip()]
    return " > ".join(strip_versions(part) for part in parts[1:])


def _similarity(a: _Vectors, b: _Vectors) -> np.ndarray:
    if not len(a.ids) or not len(b.ids):
        return np.zeros((len(a.ids), len(b.ids)), dtype=np.float32)
    return a.matrix @ b.matrix.T


@dataclass(frozen=True)
class _PairEvidence:
    share_a: float  # share of a's chunks with a counterpart in b
    share_b: float
    identical: bool  # each one's chunks all have a near-identical counterpart in the other
    close_share: float = 0.0  # the larger share counting close texts only, not same-heading rewrites


def _pair_evidence(a: _Vectors, b: _Vectors) -> _PairEvidence:
    similarity = _similarity(a, b)
    if similarity.size == 0:
        return _PairEvidence(0.0, 0.0, False)
    # A counterpart: a close text, or a looser one under the same heading (a section rewritten for a release).
    same_heading = np.array([[bool(x) and x == y for y in b.headings] for x in a.headings], dtype=bool)
    close = similarity >= settings.FAMILY_COUNTERPART_THRESHOLD
    counterpart = close | (same_heading & (similarity >= settings.FAMILY_HEADING_COUNTERPART_THRESHOLD))
    share_a = float(counterpart.any(axis=1).mean())
    share_b = float(counterpart.any(axis=0).mean())
    close_share = max(float(close.any(axis=1).mean()), float(close.any(axis=0).mean()))
    identical = (set(a.hashes) == set(b.hashes)) or bool(
        (similarity.max(axis=1) >= settings.MERGE_THRESHOLD).all()
        and (similarity.max(axis=0) >= settings.MERGE_THRESHOLD).all()
    )
    return _PairEvidence(share_a, share_b, identical, close_share)


def _related(a: _Member, b: _Member, evidence: _PairEvidence) -> bool:
    """Whether two documents are versions (or copies) of one another."""
    if a.version_key and a.version_key == b.version_key and not evidence.identical:
        return False  # two different documents of the same release
    if a.repository_key and a.repository_key == b.repository_key:
        return True  # one file of one repository at two refs: the surest lineage there is, whatever it says
    sizes = sorted((max(a.chunk_count, 1), max(b.chunk_count, 1)))
    comparable = sizes[0] / sizes[1] >= settings.FAMILY_MIN_SIZE_RATIO
    per_release = a.per_release or b.per_release
    # Notes written once per release repeat their headings ("Bugs fixed") with other items: only close
    # texts count for them (a cumulative changelog still repeats its older entries word for word).
    share = evidence.close_share if per_release else max(evidence.share_a, evidence.share_b)
    if comparable and share >= settings.FAMILY_CONTENT_SHARE:
        return True
    named = (a.title_key and a.title_key == b.title_key) or (a.path_key and a.path_key == b.path_key)
    return bool(named) and not per_release and share >= settings.FAMILY_NAMED_CONTENT_SHARE


def _named_candidates(member: _Member, others: Iterable[_Member]) -> set[int]:
    title_key, path_key = member.title_key, member.path_key
    return {
        other.id for other in others
        if other.id != member.id and ((title_key and other.title_key == title_key)
                                      or (path_key and other.path_key == path_key))
    }


def _content_candidates(neighbour_pairs: Iterable[tuple[int, int, float]], chunk_document: dict[int, int]) -> set[tuple[int, int]]:
    """Document pairs that share at least one chunk above the counterpart threshold."""
    threshold = settings.FAMILY_COUNTERPART_THRESHOLD
    pairs = set()
    for a, b, similarity in neighbour_pairs:
        if similarity >= threshold and a in chunk_document and b in chunk_document:
            doc_a, doc_b = chunk_document[a], chunk_document[b]
            if doc_a != doc_b:
                pairs.add((min(doc_a, doc_b), max(doc_a, doc_b)))
    return pairs


def _chunk_documents(chunk_ids: Iterable[int]) -> dict[int, int]:
    return dict(Chunk.objects.filter(pk__in=set(chunk_ids)).values_list("pk", "document_id"))


# --- the entry points -------------------------------------------------------------------------


def document_lineage_update(*, document_id: int, neighbour_pairs: list[tuple[int, int, float]]) -> set[int]:
    """Put one (re-)indexed document in its family; returns the families refreshed.

    Runs inside the merge's transaction and workspace lock, with the merge's neighbour pairs.
    """
    document = Document.objects.filter(pk=document_id).values("workspace_id").first()
    if document is None:
        return set()
    workspace_id = document["workspace_id"]
    everyone = _members(Document.objects.filter(workspace_id=workspace_id))
    me = everyone.get(document_id)
    if me is None:  # archived or failed since: it leaves its family
        return _refresh_all(documents_leave_families(document_ids=[document_id]))
    hand_made = set(DocumentFamily.objects.filter(workspace_id=workspace_id, edited_by_hand=True)
                    .values_list("pk", flat=True))
    if me.family_id in hand_made:
        return _refresh_all({me.family_id})
    chunk_document = _chunk_documents({c for pair in neighbour_pairs for c in pair[:2]})
    candidates = {b if a == document_id else a for a, b in _content_candidates(neighbour_pairs, chunk_document)
                  if document_id in (a, b)}
    candidates |= _named_candidates(me, everyone.values())
    candidates = {pk for pk in candidates if pk in everyone}
    vectors = _VectorCache()
    vectors.load([document_id, *candidates])
    related = {pk for pk in candidates
               if _related(me, everyone[pk], _pair_evidence(vectors[document_id], vectors[pk]))}
    families = {everyone[pk].family_id for pk in related} - {None}
    if families & hand_made:  # a person drew that family: join it, never reshape it
        target = min(families & hand_made)
        Document.objects.filter(pk=document_id).update(family_id=target)
        return _refresh_all({target, me.family_id} - {None}, vectors)
    loose = [pk for pk in related if everyone[pk].family_id is None]
    touched = set(families) | ({me.family_id} if me.family_id else set())
    if not related:
        if me.family_id is not None:
            Document.objects.filter(pk=document_id).update(family=None, family_position=None,
                                                           is_latest_version=True, copy_of=None)
            _chunks_current([document_id])
        return _refresh_all(touched, vectors)
    target = min(families) if families else None
    if target is None:
        target = me.family_id or DocumentFamily.objects.create(workspace_id=workspace_id, name=_family_name(me)).pk
    Document.objects.filter(Q(pk=document_id) | Q(pk__in=loose) | Q(family_id__in=families)).update(family_id=target)
    touched.add(target)
    emptied = touched - {target}
    refreshed = _refresh_all(touched, vectors)
    DocumentFamily.objects.filter(pk__in=emptied, members__isnull=True).delete()
    return refreshed


def workspace_lineage_rebuild(*, workspace_id: int, neighbour_pairs: list[tuple[int, int, float]]) -> set[int]:
    """Families of the whole workspace from scratch, keeping ids where members stay; a second run writes nothing."""
    everyone = _members(Document.objects.filter(workspace_id=workspace_id))
    hand_made = set(DocumentFamily.objects.filter(workspace_id=workspace_id, edited_by_hand=True)
                    .values_list("pk", flat=True))
    free = {pk: member for pk, member in everyone.items() if member.family_id not in hand_made}
    chunk_document = _chunk_documents({c for pair in neighbour_pairs for c in pair[:2]})
    pairs = {pair for pair in _content_candidates(neighbour_pairs, chunk_document)
             if pair[0] in free and pair[1] in free}
    by_title: dict[str, list[int]] = defaultdict(list)
    by_path: dict[str, list[int]] = defaultdict(list)
    for member in free.values():
        if member.title_key:
            by_title[member.title_key].append(member.id)
        if member.path_key:
            by_path[member.path_key].append(member.id)
    for group in [*by_title.values(), *by_path.values()]:
        pairs |= {(a, b) for a in group for b in group if a < b}
    vectors = _VectorCache()
    vectors.load({pk for pair in pairs for pk in pair})  # one query, not one per document
    union = UnionFind()
    for a, b in sorted(pairs):
        if _related(free[a], free[b], _pair_evidence(vectors[a], vectors[b])):
            union.union(a, b)
    groups = union.groups()

    # Each group keeps the family it overlaps most, so ids survive a rebuild.
    current: dict[int, set[int]] = defaultdict(set)
    for member in free.values():
        if member.family_id is not None:
            current[member.family_id].add(member.id)
    taken: set[int] = set()
    wanted: dict[int, int] = {}  # document -> its family after the rebuild
    plans: list[tuple[int | None, set[int]]] = []
    for group in sorted(groups, key=min):
        overlaps = sorted(((len(group & members), -family_id, family_id) for family_id, members in current.items()
                           if family_id not in taken and group & members), reverse=True)
        family_id = overlaps[0][2] if overlaps else None
        if family_id is not None:
            taken.add(family_id)
        plans.append((family_id, group))
    touched: set[int] = set(hand_made)
    with transaction.atomic():
        for family_id, group in plans:
            if family_id is None:
                family_id = DocumentFamily.objects.create(workspace_id=workspace_id,
                                                          name=_family_name(free[min(group)])).pk
            wanted.update({pk: family_id for pk in group})
            touched.add(family_id)
        moved = [pk for pk, member in free.items() if member.family_id != wanted.get(pk)]
        for family_id in set(wanted.values()):
            ids = [pk for pk in moved if wanted.get(pk) == family_id]
            if ids:
                Document.objects.filter(pk__in=ids).update(family_id=family_id)
        alone = [pk for pk in moved if pk not in wanted]
        if alone:
            Document.objects.filter(pk__in=alone).update(family=None, family_position=None,
                                                         is_latest_version=True, copy_of=None)
            _chunks_current(alone)
        refreshed = _refresh_all(touched, vectors)
        DocumentFamily.objects.filter(workspace_id=workspace_id, members__isnull=True).delete()
    return refreshed


def documents_leave_families(*, document_ids: list[int]) -> set[int]:
    """Take documents out of their families (archived, failed, about to be deleted); returns the families to refresh."""
    families = set(Document.objects.filter(pk__in=document_ids, family__isnull=False)
                   .values_list("family_id", flat=True))
    Document.objects.filter(pk__in=document_ids).update(family=None, family_position=None,
                                                        is_latest_version=True, copy_of=None)
    _chunks_current(document_ids)
    Chunk.objects.filter(superseded_by__document_id__in=document_ids).update(superseded_by=None)
    return families


def family_refresh(*, family_id: int, vectors: _VectorCache | None = None) -> None:
    """Order, latest flag, copies and chunk supersession of one family, from its members as they are now."""
    family = DocumentFamily.objects.filter(pk=family_id).first()
    if family is None:
        return
    members = _members(Document.objects.filter(family_id=family_id))
    gone = list(Document.objects.filter(family_id=family_id).exclude(pk__in=members).values_list("pk", flat=True))
    if gone:  # archived or failed members leave the family
        documents_leave_families(document_ids=gone)
    if len(members) < 2 and not family.edited_by_hand:
        documents_leave_families(document_ids=list(members))
        family.delete()
        return
    vectors = vectors or _VectorCache()
    vectors.load(members)
    copies = _copies(members, vectors)
    floors = _version_floors(members)
    order = _hand_order(members) if family.edited_by_hand else _order(members, copies, floors)
    position = {pk: index for index, pk in enumerate(order)}
    newest = order[-1]
    related = _relations(members, copies, vectors, everyone=family.edited_by_hand)
    root = {pk: copies.get(pk, pk) for pk in members}
    # Latest: no newer member is a version of it. A family can have several (a manual split into
    # pages: each page is current), and a member is superseded only by members it is related to.
    latest = {pk for pk in members if not any(position[other] > position[root[pk]] for other in related[root[pk]])}
    notes = _order_notes(members, order)
    updates = []
    for pk, member in members.items():
        updates.append(Document(pk=pk, family_position=position[pk], is_latest_version=pk in latest,
                                copy_of_id=copies.get(pk), lineage_note=notes.get(pk, "")))
    Document.objects.bulk_update(updates, ["family_position", "is_latest_version", "copy_of", "lineage_note"])
    if not family.edited_by_hand:
        name = _family_name(members[newest])
        if name != family.name:
            DocumentFamily.objects.filter(pk=family_id).update(name=name)
    _supersession(order, latest, copies, related, vectors)


def _relations(members: dict[int, _Member], copies: dict[int, int], vectors: _VectorCache, *,
               everyone: bool) -> dict[int, set[int]]:
    """Which members are versions of which, by the same evidence that formed the family; a copy stands for its
    original. A family is connected, but two of its members need not be related (a page split in two)."""
    root = {pk: copies.get(pk, pk) for pk in members}
    related: dict[int, set[int]] = defaultdict(set)
    ids = sorted(members)
    for index, a in enumerate(ids):
        for b in ids[index + 1:]:
            if root[a] == root[b] or root[b] in related[root[a]]:
                continue
            if everyone or _related(members[a], members[b], _pair_evidence(vectors[a], vectors[b])):
                related[root[a]].add(root[b])
                related[root[b]].add(root[a])
    return related


def _refresh_all(family_ids: Iterable[int], vectors: _VectorCache | None = None) -> set[int]:
    refreshed = set()
    for family_id in sorted(set(family_ids) - {None}):
        family_refresh(family_id=family_id, vectors=vectors)
        refreshed.add(family_id)
    return refreshed


def _family_name(member: _Member) -> str:
    return (member.title or member.path)[:500]


# --- order, copies, supersession ----------------------------------------------------------------


def _date_rank(member: _Member) -> tuple:
    """An explicit date beats a file mtime, which beats an upload time; unknown dates are oldest."""
    return (member.date_confidence > 0, member.doc_date or _OLDEST, member.indexed_at or _OLDEST, member.id)


def _copies(members: dict[int, _Member], vectors: _VectorCache) -> dict[int, int]:
    """copy -> original: a later arrival whose content repeats a member with the same (or no) label."""
    copies: dict[int, int] = {}
    ids = sorted(members)
    for index, pk in enumerate(ids):
        for original in ids[:index]:
            if original in copies:
                continue
            a, b = members[original], members[pk]
            if b.version_key and a.version_key and a.version_key != b.version_key:
                continue
            if _pair_evidence(vectors[original], vectors[pk]).identical:
                copies[pk] = original
                break
    return copies


def _version_floors(members: dict[int, _Member]) -> dict[int, str]:
    """The newest version a member's Sphinx directives name ("Changed in version 5.3"): it is at least that new."""
    floors = {}
    for pk, metadata in Document.objects.filter(pk__in=members).values_list("pk", "metadata"):
        keys = [version_key(str(entry.get("version", ""))) for entry in (metadata or {}).get("version_directives", [])
                if isinstance(entry, dict)]
        floors[pk] = max((key for key in keys if key), default="")
    return floors


def _order(members: dict[int, _Member], copies: dict[int, int], floors: dict[int, str]) -> list[int]:
    """Oldest first: labels decide between labelled members; the rest are ordered by date (then by the versions
    their directives name) and placed among the labelled ones by date."""
    originals = [m for pk, m in members.items() if pk not in copies]
    labelled = sorted((m for m in originals if m.version_key), key=lambda m: (m.version_key, _date_rank(m)))
    # A trustworthy date orders them; the newest version their directives name breaks ties and orders those
    # with no trustworthy date (a page without a directive is not older for it).
    unlabelled = sorted((m for m in originals if not m.version_key),
                        key=lambda m: (m.date_confidence > 0, (m.doc_date or _OLDEST) if m.date_confidence > 0
                                       else _OLDEST, floors.get(m.id, ""), _date_rank(m)))
    order: list[_Member] = []
    pending = list(unlabelled)
    for member in labelled:
        # An unlabelled member older than this labelled one (by a trustworthy date) comes before it.
        while pending and pending[0].date_confidence > 0 and member.doc_date and pending[0].doc_date \
                and pending[0].doc_date < member.doc_date:
            order.append(pending.pop(0))
        order.append(member)
    order.extend(pending)
    result: list[int] = []
    for member in order:
        result.append(member.id)
        result.extend(sorted((pk for pk, original in copies.items() if original == member.id),
                             key=lambda pk: _date_rank(members[pk])))
    return result


def _hand_order(members: dict[int, _Member]) -> list[int]:
    return sorted(members, key=lambda pk: (members[pk].family_position is None,
                                           members[pk].family_position or 0, _date_rank(members[pk])))


def _order_notes(members: dict[int, _Member], order: list[int]) -> dict[int, str]:
    """Where a trustworthy date says a member is older than one its label puts it after."""
    notes = {}
    for index, pk in enumerate(order):
        member = members[pk]
        if not member.version_key or not member.doc_date or member.date_confidence == 0:
            continue
        for later_pk in order[index + 1:]:
            later = members[later_pk]
            if later.version_key and later.version_key != member.version_key and later.doc_date \
                    and later.date_confidence > 0 and later.doc_date < member.doc_date:
                notes[pk] = (f"version {member.version_label} is dated {member.doc_date.date().isoformat()}, "
                             f"after {later.version_label} ({later.doc_date.date().isoformat()}): "
                             "the version label decides the order")
                break
    return notes


def _supersession(order: list[int], latest: set[int], copies: dict[int, int], related: dict[int, set[int]],
                  vectors: _VectorCache) -> None:
    """Each chunk of an older member: superseded by its counterpart in the newest related member that has one,
    or retired."""
    threshold = settings.FAMILY_COUNTERPART_THRESHOLD
    superseded: dict[int, int] = {}
    retired: list[int] = []
    current: list[int] = []
    for index, pk in enumerate(order):
        older = vectors[pk]
        if pk in latest:
            current.extend(older.ids)
            continue
        versions_of = related[copies.get(pk, pk)]
        counterpart: dict[int, int] = {}
        for other in reversed(order[index + 1:]):  # the newest member with a counterpart supersedes
            if copies.get(other, other) not in versions_of:
                continue
            newer = vectors[other]
            if not newer.ids:
                continue
            similarity = _similarity(older, newer)
            by_heading: dict[str, list[int]] = defaultdict(list)
            for position, heading in enumerate(newer.headings):
                if heading:
                    by_heading[heading].append(position)
            for row, chunk_id in enumerate(older.ids):
                if chunk_id in counterpart:
                    continue
                same_heading = by_heading.get(older.headings[row]) if older.headings[row] else None
                if same_heading:
                    best = max(same_heading, key=lambda column: similarity[row, column])
                    counterpart[chunk_id] = newer.ids[best]
                    continue
                best = int(similarity[row].argmax())
                if similarity[row, best] >= threshold:
                    counterpart[chunk_id] = newer.ids[best]
        for chunk_id in older.ids:
            if chunk_id in counterpart:
                superseded[chunk_id] = counterpart[chunk_id]
            else:
                retired.append(chunk_id)
    # A counterpart in a middle member may itself be superseded: point at the newest text of the passage.
    for chunk_id, target in superseded.items():
        seen = {chunk_id}
        while target in superseded and target not in seen:
            seen.add(target)
            target = superseded[target]
        superseded[chunk_id] = target
    _chunks_current(chunk_ids=current, by_chunk=True)
    if retired:
        Chunk.objects.filter(pk__in=retired).exclude(lineage=Chunk.Lineage.RETIRED, superseded_by=None).update(
            lineage=Chunk.Lineage.RETIRED, superseded_by=None)
    stored = dict(((pk, (lineage, target)) for pk, lineage, target
                   in Chunk.objects.filter(pk__in=superseded).values_list("pk", "lineage", "superseded_by_id")))
    changed = [Chunk(pk=pk, lineage=Chunk.Lineage.SUPERSEDED, superseded_by_id=target)
               for pk, target in superseded.items() if stored.get(pk) != (Chunk.Lineage.SUPERSEDED, target)]
    Chunk.objects.bulk_update(changed, ["lineage", "superseded_by"], batch_size=1000)  # only what changed


def _chunks_current(document_ids: Iterable[int] = (), *, chunk_ids: Iterable[int] = (), by_chunk: bool = False) -> None:
    """Chunks that are nobody's older version any more."""
    query = Q(pk__in=list(chunk_ids)) if by_chunk else Q(document_id__in=list(document_ids))
    Chunk.objects.filter(query).exclude(lineage=Chunk.Lineage.CURRENT, superseded_by=None).update(
        lineage=Chunk.Lineage.CURRENT, superseded_by=None)
