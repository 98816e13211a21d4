"""Evidence that two documents are versions (or copies) of one another, from their chunks' vectors.

A pair is judged from both documents alone (never from what else is in the workspace), so the
evidence does not depend on the order documents arrive in. What counts (`relation_strength`):

- a large share of either one's chunks has a counterpart (cosine >= FAMILY_COUNTERPART_THRESHOLD,
  or a looser one under the same heading) in the other, and their sizes are comparable;
- their titles are equal once version labels and dates are stripped, or their paths are equal
  once a version segment is replaced, and the content agrees a little;
- never siblings: one template filled in for two subjects (one customer's agreement and another's), whose
  opening sentences hold different names in one place (rag.lineage.subjects);
- never two documents of one release (`shares_release`: one version label, or one exact file date
  as an archive of one release gives all its files), unless one is a copy of the other;
- pages written once per release (release notes, "what's new in X", a page titled only
  "Product 8.0") relate by close text only: copies of one release's notes shipped again with a later
  release, or a cumulative changelog that repeats its older entries word for word. Two releases'
  notes are a series, each current for its own release.
"""

from __future__ import annotations

import re
from collections import OrderedDict, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from functools import cached_property

import numpy as np
from django.conf import settings
from django.db import connection
from django.db.models import QuerySet

from rag.facts import fact_differences
from rag.releases import strip_versions, version_stem_key
from rag.lineage.subjects import Blank, opening_lines, template_blanks
from rag.models import Chunk, Document

# Documents written once per release ("2.1 Release Notes", "What's new in 3.0") share a title, not a text.
_PER_RELEASE = re.compile(r"\b(release notes?|changelog|change log|changes|what'?s new|news|history|released)\b"
                          r"|^release\s+v?\d", re.I)
OPENING_CHUNKS = 3  # a short first section (a datasheet's one-line intro) leaves the opening to the next ones
# A file date that names a release: the file system's, or one written in the file. An upload time names nothing.
_RELEASE_DATE_SOURCES = {"mtime"}


@dataclass
class Member:
    """What lineage reads of one active document."""

    id: int
    title: str
    path: str
    version_label: str
    version_key: str
    version_source: str
    doc_date: datetime | None
    date_source: str
    date_confidence: int
    indexed_at: datetime | None
    chunk_count: int
    family_id: int | None
    family_position: int | None
    title_key_stored: str = ""
    path_key_stored: str = ""
    is_latest_version: bool = True
    copy_of_id: int | None = None
    lineage_note: str = ""

    @cached_property
    def title_key(self) -> str:
        return strip_versions(self.title)[:500]

    @cached_property
    def repository_key(self) -> str | None:
        """A Git source's document (git/SOURCE/REF/path, rag.sources): SOURCE/path, the one file across refs."""
        parts = self.path.split("/", 3)
        return f"{parts[1]}/{parts[3]}" if len(parts) == 4 and parts[0] == "git" else None

    @cached_property
    def path_key(self) -> str:
        return (self.repository_key or version_stem_key(self.path) or "")[:1024]

    @cached_property
    def per_release(self) -> bool:
        """Written once per release ("2.1 Release Notes", "Sphinx 8.0"): named like the others, never a version
        of them."""
        return bool(_PER_RELEASE.search(self.title)) or bool(self.version_key and len(self.title_key.split()) <= 2
                                                            and self.version_source == "title")

    @cached_property
    def release_date(self) -> datetime | None:
        """A date exact enough to name the release the file came with (to the microsecond for a file time)."""
        if self.doc_date is None or self.date_confidence == 0:
            return None
        if self.date_source in _RELEASE_DATE_SOURCES or self.date_confidence >= 2:
            return self.doc_date
        return None


MEMBER_FIELDS = ("id", "title", "path", "version_label", "version_key", "version_source", "doc_date",
                 "date_source", "indexed_at", "chunk_count", "family_id", "family_position", "title_key", "path_key",
                 "is_latest_version", "copy_of_id", "lineage_note")


def load_members(queryset: QuerySet[Document]) -> dict[int, Member]:
    """The active, indexed documents of a queryset, by id."""
    rows = queryset.filter(archived=False, status=Document.Status.INDEXED).values_list(*MEMBER_FIELDS)
    found = {}
    for row in rows:
        values = dict(zip(MEMBER_FIELDS, row))
        values["title_key_stored"], values["path_key_stored"] = values.pop("title_key"), values.pop("path_key")
        values["date_confidence"] = Document.WEAK_DATE_SOURCES.get(values["date_source"], 2)
        found[values["id"]] = Member(**values)
    return found


def different_releases_of_a_series(title_a: str, key_a: str, title_b: str, key_b: str) -> bool:
    """Two pages written once per release (release notes, "what's new in"), of two releases: each its own
    release's page, never a version of the other nor in contradiction with it."""
    return bool(key_a and key_b and key_a != key_b and _PER_RELEASE.search(title_a) and _PER_RELEASE.search(title_b))


def shares_release(a: Member, b: Member) -> bool:
    """Two documents of one release: one version label, or one exact release date. Release notes name the release
    they describe, not the one they shipped with: for two of them only the date counts."""
    if a.version_key and a.version_key == b.version_key and not (a.per_release and b.per_release):
        return True
    return a.release_date is not None and a.release_date == b.release_date


# --- vectors ---------------------------------------------------------------------------------------


@dataclass
class Vectors:
    """One document's chunks: ids, unit vectors, heading keys (as small integers, 0 for none), text hashes, and
    its opening lines (title and first sentences: where a template names its subject, rag.lineage.subjects)."""

    ids: list[int]
    matrix: np.ndarray
    headings: np.ndarray
    hashes: frozenset[str]
    opening: tuple[str, ...] = ()
    hash_order: tuple[str, ...] = ()  # each chunk's text hash, in chunk order


class _VectorStore:
    """Documents' chunk vectors kept in this process between merges, least recently used out first: a family's
    members are compared again and again as its versions arrive, and reading vectors is most of lineage's cost.
    A document is read again when its chunk ids changed (re-indexed)."""

    def __init__(self, max_chunks: int) -> None:
        self.max_chunks = max_chunks
        self.documents: OrderedDict[int, Vectors] = OrderedDict()
        self.heading_ids: dict[str, int] = {"": 0}
        self.chunks = 0

    def get(self, document_id: int, chunk_ids: list[int]) -> Vectors | None:
        found = self.documents.get(document_id)
        if found is None or found.ids != chunk_ids:
            return None
        self.documents.move_to_end(document_id)
        return found

    def put(self, document_id: int, vectors: Vectors) -> None:
        old = self.documents.pop(document_id, None)
        self.chunks += len(vectors.ids) - (len(old.ids) if old else 0)
        self.documents[document_id] = vectors
        while self.chunks > self.max_chunks and len(self.documents) > 1:
            _, dropped = self.documents.popitem(last=False)
            self.chunks -= len(dropped.ids)
        if len(self.heading_ids) > 4 * self.max_chunks:  # headings of documents long gone: start afresh
            self.documents.clear()
            self.heading_ids = {"": 0}
            self.chunks = 0

    def heading_id(self, heading_path: str) -> int:
        return self.heading_ids.setdefault(heading_key(heading_path), len(self.heading_ids))


_STORE = _VectorStore(max_chunks=settings.LINEAGE_VECTOR_CACHE_CHUNKS)


class VectorCache:
    """Chunk vectors of the documents lineage compares: from this process's store when their chunks are the same,
    else read in one query per batch."""

    def __init__(self) -> None:
        self._by_document: dict[int, Vectors] = {}

    def load(self, document_ids: Iterable[int]) -> None:
        missing = sorted({pk for pk in document_ids if pk not in self._by_document})
        if not missing:
            return
        table = Chunk._meta.db_table
        with connection.cursor() as cursor:
            cursor.execute(f"SELECT document_id, array_agg(id ORDER BY chunk_index) FROM {table} "
                           "WHERE document_id = ANY(%s) GROUP BY document_id", [missing])
            current = {pk: list(ids) for pk, ids in cursor.fetchall()}
            unread = []
            for pk in missing:
                stored = _STORE.get(pk, current.get(pk, []))
                if stored is not None:
                    self._by_document[pk] = stored
                else:
                    unread.append(pk)
            if not unread:
                return
            # As real[]: psycopg's C loader reads it, where a vector would be parsed from text in Python.
            cursor.execute("SELECT document_id, id, embedding::real[], heading_path, text_hash, "
                           f"CASE WHEN chunk_index < {OPENING_CHUNKS} THEN text END FROM {table} "
                           "WHERE document_id = ANY(%s) ORDER BY document_id, chunk_index", [unread])
            grouped: dict[int, list[tuple]] = defaultdict(list)
            for row in cursor.fetchall():
                grouped[row[0]].append(row[1:])
        for pk in unread:
            rows = grouped.get(pk, [])
            title = rows[0][2].split(" > ")[0] if rows else ""
            opening = opening_lines(title, "\n".join(row[4] for row in rows[:OPENING_CHUNKS] if row[4])) if rows else ()
            matrix = np.array([row[1] for row in rows], dtype=np.float32).reshape(len(rows), -1) if rows \
                else np.zeros((0, 0), dtype=np.float32)  # no chunks (yet): nothing to compare
            if len(rows):
                matrix /= np.maximum(np.linalg.norm(matrix, axis=1, keepdims=True), 1e-9)
            vectors = Vectors(ids=[row[0] for row in rows], matrix=matrix,
                              headings=np.array([_STORE.heading_id(row[2]) for row in rows], dtype=np.int64),
                              hashes=frozenset(row[3] for row in rows), opening=opening,
                              hash_order=tuple(row[3] for row in rows))
            _STORE.put(pk, vectors)
            self._by_document[pk] = vectors

    def __getitem__(self, document_id: int) -> Vectors:
        self.load([document_id])
        return self._by_document[document_id]


def heading_key(heading_path: str) -> str:
    """The heading path below the title, labels stripped: "Lumen 3.0 API > Limits" and "Lumen API v2.1 > Limits"
    name the same section."""
    parts = [part for part in heading_path.split(" > ") if part.strip()]
    return " > ".join(strip_versions(part) for part in parts[1:])


def similarity(a: Vectors, b: Vectors) -> np.ndarray:
    if not len(a.ids) or not len(b.ids):
        return np.zeros((len(a.ids), len(b.ids)), dtype=np.float32)
    return a.matrix @ b.matrix.T


# --- one pair ----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class PairEvidence:
    share_a: float  # share of a's chunks with a counterpart in b
    share_b: float
    identical: bool  # each one's chunks all have a near-identical counterpart in the other
    close_share: float = 0.0  # the larger share counting close texts only, not same-heading rewrites
    blanks: tuple[Blank, ...] = ()  # a's and b's names where one template names its subject: siblings
    values_differ: bool = False  # near-identical texts, yet a value changed: a new edition or a disagreement


def pair_evidence(a: Vectors, b: Vectors) -> PairEvidence:
    return pairs_evidence([(a, b)])[0]


def pairs_evidence(pairs: Sequence[tuple[Vectors, Vectors]]) -> list[PairEvidence]:
    """Each pair's evidence; the texts that tell a copy from a new edition (`_facts_to_compare`) are read for every
    near-identical pair at once, in one query, not one per pair."""
    measured = [_measure(a, b) for a, b in pairs]
    wanted = {pk for _evidence, compare in measured for pair in compare or () for pk in pair}
    texts = dict(Chunk.objects.filter(pk__in=wanted).values_list("pk", "text")) if wanted else {}
    results = []
    for evidence, compare in measured:
        if compare is not None:  # near-identical: a copy where every differing text states the same values
            identical = not any(fact_differences(texts.get(x, ""), texts.get(y, "")) for x, y in compare)
            evidence = replace(evidence, identical=identical, blanks=() if identical else evidence.blanks,
                               values_differ=not identical)
        results.append(evidence)
    return results


def _measure(a: Vectors, b: Vectors) -> tuple[PairEvidence, list[tuple[int, int]] | None]:
    """The pair's evidence as far as the vectors tell, and the chunk pairs whose facts decide whether it is a copy
    (None: the vectors decided)."""
    scores = similarity(a, b)
    if scores.size == 0:
        return PairEvidence(0.0, 0.0, False), None
    blanks = tuple(template_blanks(a.opening, b.opening)) if a.opening and b.opening else ()
    # A counterpart: a close text, or a looser one under the same heading (a section rewritten for a release).
    same_heading = (a.headings[:, None] == b.headings[None, :]) & (a.headings[:, None] != 0)
    close = scores >= settings.FAMILY_COUNTERPART_THRESHOLD
    counterpart = close | (same_heading & (scores >= settings.FAMILY_HEADING_COUNTERPART_THRESHOLD))
    share_a = float(counterpart.any(axis=1).mean())
    share_b = float(counterpart.any(axis=0).mean())
    close_share = max(float(close.any(axis=1).mean()), float(close.any(axis=0).mean()))
    near = (a.hashes == b.hashes) or bool(
        (scores.max(axis=1) >= settings.MERGE_THRESHOLD).all() and (scores.max(axis=0) >= settings.MERGE_THRESHOLD).all())
    if not near:
        return PairEvidence(share_a, share_b, False, close_share, blanks), None
    identical = PairEvidence(share_a, share_b, True, close_share)
    # Near-identical texts that state the same values: a copy. A new edition that changed a number (43 days of
    # leave become 45) reads as near-identical to an encoder, and is a version all the same.
    differing = [index for index, chunk_hash in enumerate(a.hash_order) if chunk_hash not in b.hashes]
    if a.hashes == b.hashes or not differing:
        return identical, None
    return replace(identical, blanks=blanks), [(a.ids[index], b.ids[int(scores[index].argmax())])
                                               for index in differing]


IDENTICAL_STRENGTH = 2.0  # above any share: copies are grouped before versions
REPOSITORY_STRENGTH = 1.5  # one Git file at two refs: below a copy, above any named share (at most 1.25)
_NAMED_BONUS = 0.25  # a shared name and some shared content beat content alone


def _dated_apart(a: Member, b: Member) -> bool:
    return a.doc_date is not None and b.doc_date is not None and a.doc_date.date() != b.doc_date.date()


def relation_strength(a: Member, b: Member, evidence: PairEvidence) -> float | None:
    """How strongly two documents are versions (or copies) of one another; None when they are not."""
    if different_releases_of_a_series(a.title, a.version_key, b.title, b.version_key):
        # Two pages of one series (the release notes of 1.2.6 and of 1.3.1): each is its own release's page,
        # however alike their boilerplate. Related, they made one component of every release's notes, which
        # each arrival regrouped whole.
        return None
    if evidence.identical:
        return IDENTICAL_STRENGTH
    if evidence.blanks:
        return None  # one template filled in for two subjects: siblings, never versions (rag.lineage.subjects)
    if evidence.values_differ and not _dated_apart(a, b):
        return None  # one text, one date, two values: two current documents that disagree, for review
    if shares_release(a, b):
        return None  # two different documents of one release
    if a.repository_key and a.repository_key == b.repository_key:
        return REPOSITORY_STRENGTH  # one file of one repository at two refs: the surest lineage, whatever it says
    sizes = sorted((max(a.chunk_count, 1), max(b.chunk_count, 1)))
    comparable = sizes[0] / sizes[1] >= settings.FAMILY_MIN_SIZE_RATIO
    if a.per_release or b.per_release:
        # A series: only a close text makes two of them one page (copies, or a cumulative changelog).
        both = a.per_release and b.per_release
        return evidence.close_share if both and comparable and evidence.close_share >= settings.FAMILY_CONTENT_SHARE \
            else None
    share = max(evidence.share_a, evidence.share_b)
    named = (a.title_key and a.title_key == b.title_key) or (a.path_key and a.path_key == b.path_key)
    if named and share >= settings.FAMILY_NAMED_CONTENT_SHARE:
        return share + _NAMED_BONUS
    if comparable and share >= settings.FAMILY_CONTENT_SHARE:
        return share
    return None
