"""Siblings kept: documents made from one template for different subjects, and the subject each one names.

Found with a document's versions (rag.lineage.families reads the evidence, rag.lineage.subjects the names):
the pairs are stored like relations, from the later document's merge, and each document's subject is the name
it fills the template with most often against its siblings. The siblings of a document are its template group
(the document page and the admin list them); contradictions never pair two subjects, and search reads the
subject where a question names one.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass

from django.db.models import Q

from rag.lineage.evidence import PairEvidence
from rag.models import Document, DocumentSibling


NAMES_JOINER = "; "  # a pair's names on one side, in the order the template names them
SUBJECT_SHARE = 0.9  # a name is part of the subject when it differs in this share of the pairs the top name does


@dataclass(frozen=True)
class SiblingPair:
    a: int  # the smaller document id
    b: int
    subject_a: str
    subject_b: str


def sibling_pair(me: int, other: int, evidence: PairEvidence) -> SiblingPair | None:
    """The pair as two siblings, from `me`'s side of the evidence; None when they are not."""
    if not evidence.blanks:
        return None
    mine = NAMES_JOINER.join(dict.fromkeys(blank.ours for blank in evidence.blanks))[:300]
    theirs = NAMES_JOINER.join(dict.fromkeys(blank.theirs for blank in evidence.blanks))[:300]
    return SiblingPair(me, other, mine, theirs) if me < other else SiblingPair(other, me, theirs, mine)


def siblings_store(*, workspace_id: int, document_id: int, candidates: Iterable[int],
                   found: list[SiblingPair]) -> set[int]:
    """The document's sibling pairs among its candidates as found now; returns the documents whose subject may
    have changed."""
    others = set(candidates) - {document_id}
    DocumentSibling.objects.filter(Q(document_a_id=document_id, document_b_id__in=others)
                                   | Q(document_b_id=document_id, document_a_id__in=others)).delete()
    existing = set(Document.objects.filter(pk__in={pk for pair in found for pk in (pair.a, pair.b)})
                   .values_list("pk", flat=True))
    _pairs_create(workspace_id, [pair for pair in found if pair.a in existing and pair.b in existing])
    return {document_id} | others


def workspace_siblings_replace(*, workspace_id: int, found: list[SiblingPair]) -> None:
    """The workspace's sibling pairs become exactly these (a rebuild), and every subject follows."""
    DocumentSibling.objects.filter(workspace_id=workspace_id).delete()
    _pairs_create(workspace_id, found)
    subjects_refresh(document_ids=Document.objects.filter(workspace_id=workspace_id).values_list("pk", flat=True))


def _pairs_create(workspace_id: int, pairs: list[SiblingPair]) -> None:
    DocumentSibling.objects.bulk_create(
        [DocumentSibling(workspace_id=workspace_id, document_a_id=p.a, document_b_id=p.b, subject_a=p.subject_a,
                         subject_b=p.subject_b) for p in pairs],
        update_conflicts=True, unique_fields=["document_a", "document_b"], update_fields=["subject_a", "subject_b"],
        batch_size=1000)


def subjects_refresh(*, document_ids: Iterable[int]) -> None:
    """Each document's subject: the names it fills its template's blanks with against nearly all its siblings
    ("Acme Corp"; "Willow Creek Farms; Keystone ERP Rollout" for a statement of work, whose customer and project
    both differ), not a blank only some of them fill differently (a city two customers share)."""
    ids = set(document_ids)
    if not ids:
        return
    names: dict[int, Counter[str]] = defaultdict(Counter)
    order: dict[int, dict[str, int]] = defaultdict(dict)
    for a, b, subject_a, subject_b in DocumentSibling.objects.filter(
            Q(document_a_id__in=ids) | Q(document_b_id__in=ids)).values_list(
            "document_a_id", "document_b_id", "subject_a", "subject_b"):
        for pk, subject in ((a, subject_a), (b, subject_b)):
            for index, name in enumerate(subject.split(NAMES_JOINER)):
                names[pk][name] += 1
                order[pk][name] = min(order[pk].get(name, index), index)
    current = dict(Document.objects.filter(pk__in=ids).values_list("pk", "subject"))
    for pk, subject in current.items():
        counted = names.get(pk)
        wanted = ""
        if counted:
            top = max(counted.values())
            kept = [name for name in counted if counted[name] >= SUBJECT_SHARE * top]
            wanted = NAMES_JOINER.join(sorted(kept, key=lambda name: (order[pk][name], name)))[:300]
        if wanted != subject:
            Document.objects.filter(pk=pk).update(subject=wanted)
