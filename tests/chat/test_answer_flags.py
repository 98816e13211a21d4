"""Flags that mean what they say (issue 36): "Documents disagree" only for a contradiction among the cited
passages, the duplicates line only when something was hidden."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from chat.citations import contradictions_mark
from chat.templatetags.chat_tags import duplicates_hidden
from rag.models import Contradiction
from tests.rag.factories import ChunkFactory, DocumentFactory

pytestmark = pytest.mark.django_db


def cited(chunk, *, flagged: bool = True) -> dict:
    return {"n": chunk.pk, "chunk_id": chunk.pk, "has_contradictions": flagged}


def test_documents_disagree_only_for_a_pending_or_decided_contradiction_among_the_cited_passages(workspace):
    new, old, merged, elsewhere = (ChunkFactory(document=DocumentFactory(workspace=workspace)) for _ in range(4))
    Contradiction.objects.create(workspace=workspace, chunk_a=new, chunk_b=old, similarity=0.9)
    Contradiction.objects.create(workspace=workspace, chunk_a=merged, chunk_b=elsewhere, similarity=0.9)
    # Both sides cited: the flag. One side cited (the other not in the answer), or none at all: no flag, whatever
    # search or an older version's citation said.
    marked = contradictions_mark([cited(new), cited(old), cited(merged)])
    assert [c["has_contradictions"] for c in marked] == [True, True, False]
    assert [c["has_contradictions"] for c in contradictions_mark([cited(new), cited(merged)])] == [False, False]
    Contradiction.objects.filter(chunk_a=new).update(status=Contradiction.Status.RESOLVED, resolution="kept_a")
    assert contradictions_mark([cited(new), cited(old)])[0]["has_contradictions"]  # decided: still said
    Contradiction.objects.filter(chunk_a=new).update(status=Contradiction.Status.DISMISSED)
    assert not contradictions_mark([cited(new), cited(old)])[0]["has_contradictions"]  # dismissed: not a disagreement


def test_the_duplicates_line_only_when_something_was_hidden():
    def message(**stats) -> SimpleNamespace:
        return SimpleNamespace(metadata={"search": {"options": {"dedup": True}, "stats": stats}})

    assert duplicates_hidden(message(variants_filtered=2, near_duplicates_removed=1)) == "3 duplicate passages hidden"
    assert duplicates_hidden(message(variants_filtered=0, near_duplicates_removed=0)) == ""
    assert duplicates_hidden(SimpleNamespace(metadata={"search": {"options": {"dedup": False}, "stats": {}}})) == ""
