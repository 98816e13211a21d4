"""A document's arrival regroups its whole relation component, so the families never depend on arrival order."""

from __future__ import annotations

from datetime import UTC, datetime
from itertools import permutations

import pytest

from rag.lineage.families import LineageEvidence, document_lineage_update
from rag.lineage.grouping import Relation, pair_key
from rag.models import Document, DocumentRelation
from tests.factories import WorkspaceFactory

pytestmark = pytest.mark.django_db

R1, R2 = datetime(2023, 4, 25, 11, 0, 22, tzinfo=UTC), datetime(2024, 7, 20, 14, 6, 38, tzinfo=UTC)
# A and D come with release 1, B and C with release 2 (one archive's file time each).
PAGES = {"a": R1, "b": R2, "c": R2, "d": R1}
STRENGTHS = {("a", "b"): 0.9, ("a", "c"): 0.7, ("b", "d"): 0.95}


def families_after(order: str) -> set[frozenset[str]]:
    """Documents arrive in `order`; each one's relations (to those already there) are stored and it is regrouped."""
    workspace = WorkspaceFactory()
    ids: dict[str, int] = {}
    for name in order:
        document = Document.objects.create(workspace=workspace, path=f"/pile/{name}.rst", title=f"Page {name}",
                                           format="rst", doc_date=PAGES[name], date_source="mtime")
        ids[name] = document.pk
        relations = [Relation(*pair_key(ids[x], ids[y]), strength, False) for (x, y), strength in STRENGTHS.items()
                     if name in (x, y) and x in ids and y in ids]
        others = {pk for relation in relations for pk in (relation.a, relation.b)} - {document.pk}
        document_lineage_update(document_id=document.pk,
                                evidence=LineageEvidence(document.pk, candidates=others, relations=relations))
    names = {pk: name for name, pk in ids.items()}
    groups: dict[int, set[str]] = {}
    for pk, family_id in Document.objects.filter(workspace=workspace, family__isnull=False).values_list(
            "pk", "family_id"):
        groups.setdefault(family_id, set()).add(names[pk])
    assert DocumentRelation.objects.filter(workspace=workspace).count() == len(STRENGTHS)
    return {frozenset(group) for group in groups.values()}


def test_a_member_freed_by_a_stronger_pair_joins_its_other_relation_whatever_the_order():
    # Strongest first: B joins D; A cannot join B then (A and D are one release), so A joins C.
    # In the order a, b, c, d: C arrives while A is with B (C and B are one release: apart); D then takes B,
    # and A must be regrouped with C, which D's arrival does not relate to directly.
    expected = {frozenset("bd"), frozenset("ac")}
    for order in permutations("abcd"):
        assert families_after("".join(order)) == expected, "".join(order)
