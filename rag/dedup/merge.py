"""Dedup merging: near-duplicate chunks become canonical records; disagreeing ones, contradictions.

What is kept true, and what a rebuild from scratch produces:

- the merge graph: the workspace's active chunks (documents not archived), an
  edge between chunks of different documents at cosine >= MERGE_THRESHOLD
  (found by kNN, MERGE_NEIGHBOURS per chunk, never all pairs), plus the pairs a
  reviewer linked by keeping one side of a contradiction;
- one CanonicalRecord per connected component of two or more chunks;
- its canonical: the newest doc_date (unknown = oldest), ties by the latest
  indexed_at, then the highest chunk id; a chunk that lost a review to another
  member is passed over. The others are variants with their cosine to it.

Components and the canonical rule do not depend on the order chunks arrive in,
and every change takes the workspace's advisory lock, so merges run by several
workers at once end in the state a sequential run gives.
"""

from __future__ import annotations

import logging
import time
from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from datetime import UTC

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser
from django.db import connection, transaction
from django.db.models import Q
from django.utils import timezone

from rag.dedup.contradictions import contradictions_prune, contradictions_raise, near_pairs, subjects_apart
from rag.dedup.neighbours import NeighbourPlan, member_edges, neighbours, search_plan
from rag.lineage import (
    LineageEvidence,
    documents_lineage_evidence,
    documents_lineage_update,
    family_refresh,
    workspace_lineage_rebuild,
)
from rag.releases import calendar_rebuild, workspace_releases_infer
from rag.models import CanonicalRecord, Chunk, ChunkVariant, Contradiction, Document
from rag.retrieval import pair_similarities
from rag.unionfind import UnionFind

logger = logging.getLogger(__name__)

# pg_advisory_xact_lock(namespace, workspace_id): the namespace keeps our keys apart from other users of advisory locks.
_LOCK_NAMESPACE = 0x44454450  # "DEDP"
_OLDEST = datetime.min.replace(tzinfo=UTC)


@dataclass
class MergeStats:
    chunks: int = 0  # chunks whose neighbours were searched
    edges: int = 0  # neighbour pairs at or above the merge threshold
    records_created: int = 0
    records_changed: int = 0
    records_dissolved: int = 0
    contradictions_raised: int = 0
    search: str = ""  # "exact" or "hnsw"
    seconds: float = 0.0

    def add(self, other: MergeStats) -> None:
        for name in ("chunks", "edges", "records_created", "records_changed", "records_dissolved",
                     "contradictions_raised"):
            setattr(self, name, getattr(self, name) + getattr(other, name))


@dataclass
class _RecordState:
    canonical_id: int | None
    merge_count: int
    variants: dict[int, int] = field(default_factory=dict)  # chunk id -> variant row id

    @property
    def members(self) -> set[int]:
        return set(self.variants) | ({self.canonical_id} if self.canonical_id else set())


# --- locking and reviewers' links --------------------------------------------------------------


def _lock_workspace(workspace_id: int, *, timeout_seconds: float | None = None) -> None:
    """Serialize record changes per workspace until the transaction ends; workspaces run in parallel."""
    with connection.cursor() as cursor:
        if timeout_seconds is None:
            cursor.execute("SELECT pg_advisory_xact_lock(%s, %s)", [_LOCK_NAMESPACE, workspace_id])
        else:
            # Only the wait for this lock is bounded (the select list runs left to right); later row locks are not.
            cursor.execute(
                "SELECT set_config('lock_timeout', %s, true), pg_advisory_xact_lock(%s, %s), "
                "set_config('lock_timeout', '0', true)",
                [f"{int(timeout_seconds * 1000)}ms", _LOCK_NAMESPACE, workspace_id],
            )


def _reviewed_links(chunk_ids: Iterable[int] | None, workspace_id: int) -> list[tuple[int, int, int, int]]:
    """(chunk_a, chunk_b, winner, loser) for contradictions settled by keeping one side."""
    rows = Contradiction.objects.filter(workspace_id=workspace_id, status=Contradiction.Status.RESOLVED)
    if chunk_ids is not None:
        ids = list(chunk_ids)
        rows = rows.filter(chunk_a_id__in=ids, chunk_b_id__in=ids)
    links = []
    for a, b, resolution in rows.values_list("chunk_a_id", "chunk_b_id", "resolution"):
        winner, loser = (a, b) if resolution == "kept_a" else (b, a)
        links.append((a, b, winner, loser))
    return links


# --- applying a partition -----------------------------------------------------------------


def _record_states(record_ids: Iterable[int]) -> dict[int, _RecordState]:
    ids = list(record_ids)
    states = {
        pk: _RecordState(canonical_id=canonical, merge_count=count)
        for pk, canonical, count in CanonicalRecord.objects.filter(pk__in=ids).values_list(
            "pk", "canonical_chunk_id", "merge_count")
    }
    variants = ChunkVariant.objects.filter(record_id__in=ids).values_list("pk", "record_id", "chunk_id")
    for pk, record_id, chunk_id in variants:
        states[record_id].variants[chunk_id] = pk
    return states


def _records_of(chunk_ids: Iterable[int]) -> set[int]:
    ids = list(chunk_ids)
    canonical = CanonicalRecord.objects.filter(canonical_chunk_id__in=ids).values_list("pk", flat=True)
    variant = ChunkVariant.objects.filter(chunk_id__in=ids).values_list("record_id", flat=True)
    return set(canonical) | set(variant)


def _components(chunk_ids: set[int], workspace_id: int, *, anchors: Iterable[int] = ()) -> list[set[int]]:
    """Connected groups among these chunks alone, by exact cosine (bounded per member) and reviewers' links."""
    union = UnionFind()
    for a, b in member_edges(chunk_ids, anchors=anchors):
        union.union(a, b)
    for a, b, _winner, _loser in _reviewed_links(chunk_ids, workspace_id):
        union.union(a, b)
    return union.groups()


def _canonical_choice(group: set[int], ranks: dict[int, tuple], losers: dict[int, set[int]]) -> int:
    """The newest member, passing over one that a reviewer ranked below another member."""
    candidates = [chunk for chunk in group if not (losers.get(chunk, set()) & group)] or list(group)
    return max(candidates, key=lambda chunk: ranks[chunk])


def _apply(workspace_id: int, groups: list[set[int]], involved: set[int],
           states: dict[int, _RecordState] | None = None) -> MergeStats:
    """Make the records of `involved` (plus new ones) hold exactly `groups`; only differences are written.

    Every chunk of `groups` is free or a member of an involved record, and every
    member of an involved record not in a group ends up free.
    """
    stats = MergeStats()
    states = _record_states(involved) if states is None else states
    members = set().union(*groups) if groups else set()
    rows = Chunk.objects.filter(pk__in=members, document__archived=False).values_list(
        "pk", "document__is_latest_version", "document__doc_date", "document__indexed_at")
    # The newest version of a family first, whatever the dates say (an old copy uploaded today is still old).
    ranks = {pk: (latest, doc_date is not None, doc_date or _OLDEST, indexed_at or _OLDEST, pk)
             for pk, latest, doc_date, indexed_at in rows}
    # A member that went inactive since the graph was read may have been a bridge: regroup what is left.
    canonicals = [state.canonical_id for state in states.values() if state.canonical_id]
    settled: list[set[int]] = []
    for group in groups:
        active = group & ranks.keys()
        settled.extend([active] if active == group else _components(active, workspace_id, anchors=canonicals))
    groups = [group for group in settled if len(group) > 1]
    losers: dict[int, set[int]] = defaultdict(set)
    for _a, _b, winner, loser in _reviewed_links(ranks.keys(), workspace_id):
        losers[loser].add(winner)

    # Each group keeps the involved record it overlaps most (ids stay stable); the rest are new.
    record_of = {chunk: record_id for record_id, state in states.items() for chunk in state.members}
    overlaps = sorted(
        ((overlap, -record_id, record_id, index)
         for index, group in enumerate(groups)
         for record_id, overlap in Counter(record_of[c] for c in group if c in record_of).items()),
        reverse=True,
    )
    record_for: dict[int, int] = {}
    kept: set[int] = set()
    for _overlap, _neg, overlapping_id, index in overlaps:
        if index not in record_for and overlapping_id not in kept:
            record_for[index] = overlapping_id
            kept.add(overlapping_id)
    desired = [(record_for.get(index), _canonical_choice(group, ranks, losers), group)
               for index, group in enumerate(groups)]

    dissolved = [record_id for record_id in states if record_id not in kept]
    if dissolved:
        CanonicalRecord.objects.filter(pk__in=dissolved).delete()
        stats.records_dissolved = len(dissolved)
    recanonized = [record_id for record_id, canonical, _ in desired
                   if record_id is not None and states[record_id].canonical_id != canonical]
    if recanonized:  # cleared first: canonical_chunk is unique and may move between records
        CanonicalRecord.objects.filter(pk__in=recanonized).update(canonical_chunk=None)
    stale = [variant_pk for record_id, canonical, group in desired if record_id is not None
             for chunk, variant_pk in states[record_id].variants.items() if chunk not in group or chunk == canonical]
    if stale:
        ChunkVariant.objects.filter(pk__in=stale).delete()

    now = timezone.now()
    new = [(canonical, group) for record_id, canonical, group in desired if record_id is None]
    created = CanonicalRecord.objects.bulk_create(
        [CanonicalRecord(workspace_id=workspace_id, canonical_chunk_id=canonical, merge_count=len(group) - 1)
         for canonical, group in new],
        batch_size=settings.MERGE_WRITE_BATCH_SIZE,
    )
    stats.records_created = len(created)
    changed: list[CanonicalRecord] = []
    wanted_variants: list[tuple[int, int, int]] = []  # (record, chunk, canonical)
    for record_id, canonical, group in desired:
        if record_id is None:
            continue
        state = states[record_id]
        keep = state.canonical_id == canonical
        if not keep or state.merge_count != len(group) - 1 or state.members != group:
            changed.append(CanonicalRecord(pk=record_id, canonical_chunk_id=canonical, merge_count=len(group) - 1,
                                           updated_at=now))
        wanted_variants.extend((record_id, chunk, canonical) for chunk in group - {canonical}
                               if not (keep and chunk in state.variants))
    for record, (canonical, group) in zip(created, new):
        wanted_variants.extend((record.pk, chunk, canonical) for chunk in group - {canonical})
    if changed:
        CanonicalRecord.objects.bulk_update(changed, ["canonical_chunk", "merge_count", "updated_at"],
                                            batch_size=settings.MERGE_WRITE_BATCH_SIZE)
        stats.records_changed = len(changed)
    similarity = pair_similarities([(chunk, canonical) for _, chunk, canonical in wanted_variants],
                                   batch_size=settings.MERGE_WRITE_BATCH_SIZE)
    ChunkVariant.objects.bulk_create(
        [ChunkVariant(record_id=record_id, chunk_id=chunk, similarity=similarity[(chunk, canonical)])
         for record_id, chunk, canonical in wanted_variants],
        update_conflicts=True, unique_fields=["chunk"], update_fields=["record", "similarity"],
        batch_size=settings.MERGE_WRITE_BATCH_SIZE,
    )
    return stats


def _recompute(workspace_id: int, chunk_ids: set[int], *, leaving: set[int] | frozenset[int] = frozenset()) -> MergeStats:
    """Regroup the records touching `chunk_ids`, without the `leaving` chunks."""
    involved = _records_of(chunk_ids)
    states = _record_states(involved)
    members = (set().union(*(state.members for state in states.values())) | chunk_ids) - leaving
    canonicals = [state.canonical_id for state in states.values() if state.canonical_id]
    return _apply(workspace_id, _components(members, workspace_id, anchors=canonicals), involved, states)


# --- services ----------------------------------------------------------------------------------


def document_merge(*, document_id: int) -> MergeStats:
    """Merge one document's chunks with their near-duplicates in other documents; idempotent."""
    return documents_merge(document_ids=[document_id])


def documents_merge(*, document_ids: Iterable[int]) -> MergeStats:
    """Merge documents of one workspace with their near-duplicates in one pass; idempotent.

    One neighbour search, one lineage regroup and one records update under one hold of the lock for all of them:
    a job's small files that are versions of one another each cost their own evidence, not a regroup of their
    family each (merging them one by one gave the same state, in time quadratic in the family).
    """
    started = time.monotonic()
    stats = MergeStats()
    ids = sorted(set(document_ids))
    workspaces = set(Document.objects.filter(pk__in=ids).values_list("workspace_id", flat=True))
    if not workspaces:
        logger.info("merge: document gone", extra={"document_ids": ids})
        return stats
    if len(workspaces) > 1:
        raise ValueError(f"documents of {len(workspaces)} workspaces merged together: {ids}")
    workspace_id = workspaces.pop()
    # The reads that cost (the neighbour search, lineage's evidence) run before the lock, so merges of one
    # workspace wait for each other's writes only; what they decided is re-checked under the lock.
    with transaction.atomic():  # reads, and the batch's name keys (lineage): the search's settings are local to it
        chunk_ids = _active_chunk_ids(ids)
        plan = search_plan(workspace_id)
        candidates = _document_neighbours(workspace_id, chunk_ids, plan)
        evidence: dict[int, LineageEvidence] | None = documents_lineage_evidence(neighbour_pairs=candidates)
    with transaction.atomic():
        _lock_workspace(workspace_id, timeout_seconds=settings.MERGE_LOCK_TIMEOUT_SECONDS)
        # Read again under the lock: a re-index that committed meanwhile has replaced the chunks.
        if _active_chunk_ids(ids) != chunk_ids:
            chunk_ids = _active_chunk_ids(ids)
            plan = search_plan(workspace_id)
            candidates = _document_neighbours(workspace_id, chunk_ids, plan)
            evidence = None
        merging = [pk for pk in ids if chunk_ids.get(pk)]
        if not merging:
            return stats
        # Lineage first: which member is the newest decides which chunk of a record is canonical.
        families = documents_lineage_update(document_ids=merging, neighbour_pairs=candidates, evidence=evidence)
        pairs = [pair for pk in merging for pair in candidates[pk]]
        # Two documents of the batch find each other's chunks: each pair once.
        edges = sorted({(min(a, b), max(a, b)) for a, b, similarity in pairs if similarity >= settings.MERGE_THRESHOLD})
        apart = subjects_apart(edges)  # two customers' fees are each true: never one record
        edges = [edge for edge in edges if edge not in apart]
        stats.chunks, stats.edges, stats.search = sum(map(len, chunk_ids.values())), len(edges), plan.strategy
        if edges:
            union = UnionFind()
            involved = _records_of({c for edge in edges for c in edge})
            states = _record_states(involved)
            for state in states.values():
                first, *rest = state.members
                union.find(first)
                for chunk in rest:
                    union.union(first, chunk)
            for a, b in edges:
                union.union(a, b)
            stats.add(_apply(workspace_id, union.groups(), involved, states))
        contradictions_prune(workspace_id=workspace_id, document_ids=Document.objects.filter(
            Q(pk__in=merging) | Q(family_id__in=families)).values_list("pk", flat=True))
        stats.contradictions_raised = contradictions_raise(workspace_id, near_pairs(pairs), everything=False)
    stats.seconds = time.monotonic() - started
    logger.info("merge: document merged", extra={"document_ids": merging, **stats.__dict__})
    return stats


def _active_chunk_ids(document_ids: list[int]) -> dict[int, list[int]]:
    """Each document's chunks in search (none once archived)."""
    found: dict[int, list[int]] = {pk: [] for pk in document_ids}
    for document_id, pk in Chunk.objects.filter(document_id__in=document_ids, document__archived=False) \
            .order_by("pk").values_list("document_id", "pk"):
        found[document_id].append(pk)
    return found


def _document_neighbours(workspace_id: int, chunk_ids: dict[int, list[int]],
                         plan: NeighbourPlan) -> dict[int, list[tuple[int, int, float]]]:
    """Each document's (chunk, neighbour, cosine) pairs, from one search for all their chunks."""
    owner = {chunk: pk for pk, chunks in chunk_ids.items() for chunk in chunks}
    found: dict[int, list[tuple[int, int, float]]] = {pk: [] for pk in chunk_ids}
    for pair in neighbours(workspace_id, list(owner), plan) if owner else []:
        found[owner[pair[0]]].append(pair)
    return found


def workspace_merge(*, workspace_id: int) -> MergeStats:
    """Rebuild the workspace's records from its chunks; a second run writes nothing."""
    started = time.monotonic()
    stats = MergeStats()
    with transaction.atomic():
        _lock_workspace(workspace_id)
        plan = search_plan(workspace_id)
        chunk_ids = list(Chunk.objects.filter(workspace_id=workspace_id).exclude(
            document_id__in=plan.archived_document_ids).order_by("pk").values_list("pk", flat=True))
        candidates = neighbours(workspace_id, chunk_ids, plan)
        workspace_lineage_rebuild(workspace_id=workspace_id, neighbour_pairs=candidates)
        union = UnionFind()
        edges = [(a, b) for a, b, similarity in candidates if similarity >= settings.MERGE_THRESHOLD]
        apart = subjects_apart(edges)
        for a, b in edges:
            if (a, b) not in apart:
                union.union(a, b)
                stats.edges += 1
        for a, b, _winner, _loser in _reviewed_links(None, workspace_id):
            union.union(a, b)
        stats.chunks, stats.search = len(chunk_ids), plan.strategy
        involved = set(CanonicalRecord.objects.filter(workspace_id=workspace_id).values_list("pk", flat=True))
        stats.add(_apply(workspace_id, union.groups(), involved))
        releases_settle(workspace_id=workspace_id, rebuild=True)
        stats.contradictions_raised = contradictions_raise(workspace_id, near_pairs(candidates), everything=True)
    stats.seconds = time.monotonic() - started
    logger.info("merge: workspace merged", extra={"workspace_id": workspace_id, **stats.__dict__})
    return stats


def releases_settle(*, workspace_id: int, rebuild: bool, dry_run: bool = False) -> dict[str, int]:
    """The steps after a merge or a calendar edit, in the one order that holds: the calendar (read again from the
    series pages with `rebuild`), then each unlabelled document's release, placed by the calendar's dates, then the
    families whose members' release changed ordered again (a member's release outranks its file dates), then the
    pending contradictions pruned, because two releases' passages never contradict and which release a passage
    speaks for is known only now. `dry_run`: count what inference would change, write nothing.
    Returns workspace_releases_infer's counts."""
    if rebuild and not dry_run:
        calendar_rebuild(workspace_id=workspace_id)
    changed: list[int] = []
    counts = workspace_releases_infer(workspace_id=workspace_id, dry_run=dry_run, changed=changed)
    if not dry_run:
        families = Document.objects.filter(pk__in=changed, family__isnull=False) if changed else Document.objects.none()
        for family_id in sorted(set(families.values_list("family_id", flat=True))):
            family_refresh(family_id=family_id)
        contradictions_prune(workspace_id=workspace_id)
    return counts


def chunks_detach(*, chunk_ids: list[int]) -> None:
    """Take chunks out of their records before they are deleted or archived.

    Runs inside the caller's transaction (the pipeline's, per document) so that
    the records never point at chunks that are gone. A record whose canonical
    leaves promotes its newest remaining member; one left with a single chunk
    dissolves; one whose bridge left splits in two. Pending contradictions of
    the chunks go too; reviewed ones stay as history.
    """
    if not chunk_ids:
        return
    leaving = set(chunk_ids)
    with transaction.atomic():
        by_workspace: dict[int, set[int]] = defaultdict(set)
        for pk, workspace_id in Chunk.objects.filter(pk__in=leaving).values_list("pk", "workspace_id"):
            by_workspace[workspace_id].add(pk)
        for workspace_id in sorted(by_workspace):  # a fixed order: two callers never wait on each other crosswise
            _lock_workspace(workspace_id)
        Contradiction.objects.filter(status=Contradiction.Status.PENDING).filter(
            Q(chunk_a_id__in=leaving) | Q(chunk_b_id__in=leaving)).delete()
        for workspace_id, chunks in sorted(by_workspace.items()):
            _recompute(workspace_id, chunks, leaving=chunks)


def reviews_carry_over(*, old_chunk_ids: list[int], new_chunks: list[Chunk]) -> int:
    """Move reviewed contradictions from a re-indexed document's old chunks to its new chunks of the same text.

    Call it in the pipeline's transaction, after the new chunks exist and before the old
    ones are deleted (their contradictions would go with them): an edit elsewhere in a
    file must not bring back a contradiction somebody dismissed or settled.
    """
    new_by_hash: dict[str, int] = {}
    for chunk in new_chunks:
        new_by_hash.setdefault(chunk.text_hash, chunk.pk)
    moved = {old: new_by_hash[digest] for old, digest in
             Chunk.objects.filter(pk__in=old_chunk_ids).values_list("pk", "text_hash") if digest in new_by_hash}
    reviewed = list(Contradiction.objects.exclude(status=Contradiction.Status.PENDING).filter(
        Q(chunk_a_id__in=moved) | Q(chunk_b_id__in=moved)))
    for contradiction in reviewed:
        a, b = moved.get(contradiction.chunk_a_id, contradiction.chunk_a_id), moved.get(
            contradiction.chunk_b_id, contradiction.chunk_b_id)
        if a > b:  # pairs are stored smaller id first: the sides swap, and so does what was kept
            a, b = b, a
            contradiction.resolution = {"kept_a": "kept_b", "kept_b": "kept_a"}.get(
                contradiction.resolution, contradiction.resolution)
            contradiction.differences = [
                {**d, "a": d["b"], "b": d["a"], "a_spans": d.get("b_spans", []), "b_spans": d.get("a_spans", [])}
                for d in contradiction.differences]
        contradiction.chunk_a_id, contradiction.chunk_b_id = a, b
    Contradiction.objects.bulk_update(reviewed, ["chunk_a", "chunk_b", "resolution", "differences"],
                                      batch_size=settings.MERGE_WRITE_BATCH_SIZE)
    return len(reviewed)


CONTRADICTION_ACTIONS = {"keep_a": "kept_a", "keep_b": "kept_b", "dismiss": "dismissed"}


def contradiction_resolve(*, contradiction_id: int, action: str, user: AbstractBaseUser, note: str = "") -> Contradiction:
    """Record a reviewer's decision; keeping one side makes it the canonical and demotes the other.

    The decision is a lasting preference of one chunk over the other: it holds
    through later merges, until a newer version of the text arrives.
    """
    if action not in CONTRADICTION_ACTIONS:
        raise ValueError(f"unknown action {action!r}: use keep_a, keep_b or dismiss")
    workspace_id = Contradiction.objects.filter(pk=contradiction_id).values_list("workspace_id", flat=True).first()
    if workspace_id is None:
        raise Contradiction.DoesNotExist(f"no contradiction {contradiction_id}")
    with transaction.atomic():
        _lock_workspace(workspace_id)
        contradiction = Contradiction.objects.select_for_update().get(pk=contradiction_id)
        contradiction.status = (Contradiction.Status.DISMISSED if action == "dismiss"
                                else Contradiction.Status.RESOLVED)
        contradiction.resolution = CONTRADICTION_ACTIONS[action]
        contradiction.reviewed_by = user
        contradiction.reviewed_at = timezone.now()
        contradiction.note = note
        contradiction.save(update_fields=["status", "resolution", "reviewed_by", "reviewed_at", "note"])
        _recompute(workspace_id, {contradiction.chunk_a_id, contradiction.chunk_b_id})
    logger.info("contradiction reviewed", extra={"contradiction_id": contradiction_id, "action": action,
                                                 "user_id": getattr(user, "pk", None)})
    return contradiction
