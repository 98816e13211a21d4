"""Contradictions on the whole demo corpus, real encoder: every seeded true contradiction is pending for review,
and no pair of one family's versions is (what a newer version changed is not a contradiction)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rag.bootstrap import demo_corpus_prepare
from rag.dedup.merge import document_merge, workspace_merge
from rag.models import Contradiction, Document
from rag.jobs.run import job_item_run
from rag.uploads import indexing_job_create
from tests.rag.retrieval_helpers import encoder, minilm, retrieval_isolation  # noqa: F401 (fixtures)

pytestmark = [pytest.mark.django_db, pytest.mark.real_encoder]

DEMO = Path(__file__).resolve().parents[2] / "demo"


def pending_pairs(workspace) -> list[tuple[Document, str, Document, str]]:
    rows = Contradiction.objects.filter(workspace=workspace, status=Contradiction.Status.PENDING).select_related(
        "chunk_a__document", "chunk_b__document")
    return [(c.chunk_a.document, c.chunk_a.text, c.chunk_b.document, c.chunk_b.text) for c in rows]


def is_pending(pending: list[tuple[Document, str, Document, str]], corpus: Path, seeded: dict) -> bool:
    """A pending pair with one side in each seeded document, each saying what the file says it says."""
    (path_a, says_a), (path_b, says_b) = ((str(corpus / seeded[side]["path"]), seeded[side]["says"])
                                          for side in ("a", "b"))
    for a, text_a, b, text_b in pending:
        sides = {(a.path, text_a), (b.path, text_b)}
        if any(path == path_a and says_a in text for path, text in sides) \
                and any(path == path_b and says_b in text for path, text in sides):
            return True
    return False


def test_seeded_contradictions_are_pending_and_version_changes_are_not(workspace, encoder):
    corpus = demo_corpus_prepare()
    job = indexing_job_create(workspace=workspace, paths=[corpus], enqueue=False)
    for item_id in job.items.order_by("pk").values_list("pk", flat=True):
        assert job_item_run(item_id=item_id) == "indexed"
    for document_id in Document.objects.filter(workspace=workspace).order_by("path").values_list("pk", flat=True):
        document_merge(document_id=document_id)

    def check() -> None:
        pending = pending_pairs(workspace)
        for seeded in json.loads((DEMO / "contradictions.json").read_text())["pairs"]:
            assert is_pending(pending, corpus, seeded), f"not pending: {seeded['subject']}"
        for a, _, b, _ in pending:  # two versions of one family are never for review (copies of one version are)
            assert a.family_id is None or a.family_id != b.family_id or b.copy_of_id == a.pk or a.copy_of_id == b.pk
            assert a.is_latest_version and b.is_latest_version

    check()
    workspace_merge(workspace_id=workspace.pk)  # a rebuild keeps it so
    check()
    # The versions are there, and their changes too: the API reference is one family of three.
    api = Document.objects.filter(workspace=workspace, path__contains="api").exclude(path__contains="adr")
    assert len({d.family_id for d in api} - {None}) == 1
