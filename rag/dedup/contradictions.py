"""Contradictions: what a reviewer must decide, never what a newer version changed.

A pending Contradiction is a near-duplicate pair of chunks whose facts differ, from two documents
current at the same time: two current documents of different families (or in none), or two copies
of one version. Two versions of one family differ because the document changed: that is shown on
the family's timeline and compare page, never queued for review. When lineage learns later that two
documents are versions of one another (or that one is no longer current), their pending rows go.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from django.conf import settings
from django.db.models import Q

from rag.dedup.facts import fact_differences
from rag.lineage import different_releases_of_a_series
from rag.models import Chunk, Contradiction


def near_pairs(candidates: list[tuple[int, int, float]]) -> list[tuple[int, int, float]]:
    """The neighbour pairs close enough to be compared fact by fact (the search reaches further, for families)."""
    return [pair for pair in candidates if pair[2] >= settings.CONTRADICTION_THRESHOLD]


@dataclass(frozen=True)
class _Side:
    document: int
    family: int | None
    latest: bool
    root: int  # the document it copies, or itself
    title: str
    version_key: str


def _current_together(chunk_ids: Iterable[int]) -> dict[int, _Side]:
    return {pk: _Side(document_id, family_id, latest, copy_of or document_id, title, key)
            for pk, document_id, family_id, latest, copy_of, title, key in Chunk.objects.filter(
                pk__in=set(chunk_ids)).values_list(
                "pk", "document_id", "document__family_id", "document__is_latest_version", "document__copy_of_id",
                "document__title", "document__version_key")}


def _reviewable(a: _Side, b: _Side) -> bool:
    """Two documents, both current, and not two versions of one family (two copies of one version still count)
    nor two releases' pages of a series (1.4.2's release notes do not contradict 1.4.3's)."""
    if not (a.latest and b.latest) or a.document == b.document:
        return False
    if different_releases_of_a_series(a.title, a.version_key, b.title, b.version_key):
        return False
    if a.family is None or a.family != b.family:
        return True
    return a.root == b.root or a.root == b.document or b.root == a.document


def contradictions_raise(workspace_id: int, candidates: list[tuple[int, int, float]], *, everything: bool) -> int:
    """A pending Contradiction for each near-duplicate pair of current documents whose facts differ, never twice
    for a pair."""
    pairs: dict[tuple[int, int], float] = {}
    for a, b, similarity in candidates:
        pairs[(min(a, b), max(a, b))] = similarity
    if not pairs:
        return 0
    known = Contradiction.objects.filter(workspace_id=workspace_id)
    if not everything:
        known = known.filter(chunk_a_id__in={a for a, _ in pairs}, chunk_b_id__in={b for _, b in pairs})
    fresh = pairs.keys() - set(known.values_list("chunk_a_id", "chunk_b_id"))
    if not fresh:
        return 0
    state = _current_together({c for pair in fresh for c in pair})
    fresh = {(a, b) for a, b in fresh if a in state and b in state and _reviewable(state[a], state[b])}
    texts = dict(Chunk.objects.filter(pk__in={c for pair in fresh for c in pair}).values_list("pk", "text"))
    raised = []
    for a, b in sorted(fresh):
        if a in texts and b in texts and (differences := fact_differences(texts[a], texts[b])):
            raised.append(Contradiction(workspace_id=workspace_id, chunk_a_id=a, chunk_b_id=b,
                                        similarity=pairs[(a, b)], differences=differences))
    Contradiction.objects.bulk_create(raised, ignore_conflicts=True, batch_size=settings.MERGE_WRITE_BATCH_SIZE)
    return len(raised)


def contradictions_prune(*, workspace_id: int, document_ids: Iterable[int] | None = None) -> int:
    """Drop pending contradictions of these documents (all, with None) that are now version changes or involve a
    document that is no longer current; reviewed ones stay as history."""
    rows = Contradiction.objects.filter(workspace_id=workspace_id, status=Contradiction.Status.PENDING)
    if document_ids is not None:
        ids = list(document_ids)
        rows = rows.filter(Q(chunk_a__document_id__in=ids) | Q(chunk_b__document_id__in=ids))
    pending = list(rows.values_list("pk", "chunk_a_id", "chunk_b_id"))
    if not pending:
        return 0
    state = _current_together({c for _pk, a, b in pending for c in (a, b)})
    gone = [pk for pk, a, b in pending if a in state and b in state and not _reviewable(state[a], state[b])]
    Contradiction.objects.filter(pk__in=gone).delete()
    return len(gone)
