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

from rag.facts import fact_differences
from rag.lineage import different_releases_of_a_series
from rag.releases import series_of, version_key
from rag.models import Chunk, Contradiction, DocumentSibling


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
    subject: str  # whom its template was filled in for (rag.lineage.subjects), "" for most documents
    release: str  # the release it speaks for: its own label, else the one inferred for it ("" when unknown)
    series_page: bool  # a release's own notes: they speak for that release wherever they were shipped


def _current_together(chunk_ids: Iterable[int]) -> dict[int, _Side]:
    return {pk: _Side(document_id, family_id, latest, copy_of or document_id, title, key, subject,
                      version_key(label or inferred or "") or "", series_of(title) is not None)
            for pk, document_id, family_id, latest, copy_of, title, key, subject, label, inferred in Chunk.objects.filter(
                pk__in=set(chunk_ids)).values_list(
                "pk", "document_id", "document__family_id", "document__is_latest_version", "document__copy_of_id",
                "document__title", "document__version_key", "document__subject", "document__version_label",
                "document__metadata__release__label")}


def _sibling_pairs(document_ids: set[int]) -> set[tuple[int, int]]:
    return set(DocumentSibling.objects.filter(document_a_id__in=document_ids, document_b_id__in=document_ids)
               .values_list("document_a_id", "document_b_id"))


def _reviewable(a: _Side, b: _Side, siblings: set[tuple[int, int]]) -> bool:
    """Two documents, both current, and not two versions of one family (two copies of one version still count)
    nor two releases' pages of a series (1.4.2's release notes do not contradict 1.4.3's) nor two siblings (one
    template filled in for two customers: each fee is its own customer's) nor two passages that speak for two
    releases (the 2.0 install guide's port and the 3.0 operations guide's: a change, even across families)."""
    if not (a.latest and b.latest) or a.document == b.document:
        return False
    if (min(a.document, b.document), max(a.document, b.document)) in siblings or (
            a.subject and b.subject and a.subject.casefold() != b.subject.casefold()):
        return False
    if a.release and b.release and a.release != b.release:
        return False  # two releases' statements: a change between them, shown as one, never a contradiction
    if (a.series_page or b.series_page) and not (a.release and a.release == b.release):
        return False  # a release's notes state what was true at that release, not beside today's pages
    if different_releases_of_a_series(a.title, a.version_key, b.title, b.version_key):
        return False
    if a.family is None or a.family != b.family:
        return True
    return a.root == b.root or a.root == b.document or b.root == a.document


def subjects_apart(edges: list[tuple[int, int]]) -> set[tuple[int, int]]:
    """The near-duplicate edges that join two subjects' different statements (Acme's fee and Fjord's): never one
    record, since each is true for its own subject. Two subjects' identical clauses still are one."""
    state = _current_together({c for edge in edges for c in edge})
    siblings = _sibling_pairs({side.document for side in state.values()})
    apart = {(a, b) for a, b in edges if a in state and b in state and state[a].document != state[b].document
             and ((min(state[a].document, state[b].document), max(state[a].document, state[b].document)) in siblings
                  or (state[a].subject and state[b].subject and state[a].subject != state[b].subject))}
    if not apart:
        return set()
    texts = dict(Chunk.objects.filter(pk__in={c for edge in apart for c in edge}).values_list("pk", "text"))
    return {(a, b) for a, b in apart if texts.get(a) != texts.get(b) and fact_differences(texts[a], texts[b])}


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
    siblings = _sibling_pairs({side.document for side in state.values()})
    fresh = {(a, b) for a, b in fresh if a in state and b in state and _reviewable(state[a], state[b], siblings)}
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
    siblings = _sibling_pairs({side.document for side in state.values()})
    gone = [pk for pk, a, b in pending if a in state and b in state and not _reviewable(state[a], state[b], siblings)]
    Contradiction.objects.filter(pk__in=gone).delete()
    return len(gone)
