"""What a question reads again is kept per workspace generation (rag.index_cache, issue 52 item 2): every change
to documents, chunks, merges, lineage, the calendar, the dictionary or licenses sets a new generation when its
transaction commits (triggers), so the search right after a change reads it, never a kept copy. Transactional
tests: a generation is set at commit."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext

from rag.index_cache import generation_read_once, index_generation
from rag.models import Chunk, Contradiction, Document, DocumentFamily, QueryExpansion, Release, Workspace
from rag.releases import version_key
from rag.releases.calendar import calendar_update, release_calendar, release_calendar_entries
from rag.retrieval import search
from tests.rag.retrieval_helpers import add_document, chunk_of, license_workspace, make_record, options

pytestmark = pytest.mark.django_db(transaction=True, serialized_rollback=True)  # the seeded license tiers stay


def _generation(workspace) -> int:
    return index_generation(workspace_id=workspace.pk)[0]


def _release_notes(workspace, version: str, released: str):
    document = add_document(workspace, f"/notes/{version}.txt", [f"Harbor {version} adds faster harbour sync."],
                            title=f"Harbor {version} release notes",
                            metadata={"release_entries": [{"series": "Harbor", "version": version, "date": released,
                                                           "how": "title"}]})
    calendar_update(document_id=document.pk)
    return document


@pytest.mark.parametrize("change", ["document", "chunks", "merge", "family", "calendar", "license", "dictionary",
                                    "removal"])
def test_every_change_sets_a_new_generation_and_a_save_never_moves_it_back(workspace, change):
    document = add_document(workspace, "/a.txt", ["Alpha passage.", "Beta passage."])
    stale = Workspace.objects.get(pk=workspace.pk)
    before = _generation(workspace)
    if change == "document":
        Document.objects.filter(pk=document.pk).update(version_label="2.0")
    elif change == "chunks":
        add_document(workspace, "/b.txt", ["Gamma passage."])
    elif change == "merge":
        make_record(chunk_of(document, 0), chunk_of(document, 1))
    elif change == "family":
        DocumentFamily.objects.create(workspace=workspace, name="a")
    elif change == "calendar":
        Release.objects.create(workspace=workspace, series="Harbor", version="1.0", version_key="1", hidden=True,
                               source=Release.Source.STAFF)
    elif change == "license":
        license_workspace(workspace)
    elif change == "dictionary":
        QueryExpansion.objects.create(workspace=workspace, term="quay", expansions="pier")
    else:
        Chunk.objects.filter(document=document).delete()
    after = _generation(workspace)
    assert after > before
    stale.name = "Renamed"
    stale.save()  # writes back the generation it read before the change
    assert _generation(workspace) == after


def test_a_change_in_another_workspace_leaves_this_one_s_generation(workspace, django_user_model):
    other = Workspace.objects.create(slug="other", name="Other")
    before = _generation(workspace)
    add_document(other, "/b.txt", ["Gamma passage."])
    assert _generation(workspace) == before


def test_a_search_reads_the_calendar_and_labels_again_right_after_a_change(workspace):
    _release_notes(workspace, "1.0", "2024-01-10")
    _release_notes(workspace, "1.1", "2024-06-10")
    question = "What's new in the latest Harbor release?"
    first = search(question, options(workspace, top_k=3))
    assert first.stats["newest_release_pages"] == [Document.objects.get(path="/notes/1.1.txt").pk]
    assert search(question, options(workspace, top_k=3)).stats["newest_release_pages"] == \
        first.stats["newest_release_pages"]  # kept: asked again, nothing changed
    newest = _release_notes(workspace, "1.2", "2024-11-10")
    assert search(question, options(workspace, top_k=3)).stats["newest_release_pages"] == [newest.pk]

    labelled = add_document(workspace, "/guide.txt", ["The harbour pilot guide explains mooring."],
                            version_label="3.0.0", version_key=version_key("3.0"))
    assert search("harbour pilot mooring", options(workspace, top_k=1))[0].version_label == "3.0.0"
    for index in range(2):  # two more documents of the release call it "3.0": most of its documents do now
        add_document(workspace, f"/other-{index}.txt", [f"Unrelated text number {index}."], version_label="3.0",
                     version_key=version_key("3.0"))
    top = search("harbour pilot mooring", options(workspace, top_k=1))[0]
    assert (top.document_id, top.version_label) == (labelled.pk, "3.0")


def test_a_search_sees_a_merge_a_license_and_the_dictionary_right_after_them(workspace):
    canonical = add_document(workspace, "/a.txt", ["Anchor chains are inspected every spring."],
                             doc_date=datetime(2025, 3, 1, tzinfo=UTC))
    copy = add_document(workspace, "/b.txt", ["Anchor chains are inspected every spring."])
    question = "When are anchor chains inspected?"
    unlicensed = search(question, options(workspace, top_k=5))
    assert unlicensed.canonical_filtering == "unlicensed"
    license_workspace(workspace)
    assert search(question, options(workspace, top_k=5)).canonical_filtering == "applied"
    make_record(chunk_of(canonical), chunk_of(copy))
    merged = search(question, options(workspace, top_k=5, dedup=False))
    assert [result.document_id for result in merged] == [canonical.pk]  # the variant went into its record

    assert search("When is the hawser checked?", options(workspace, top_k=5)).stats["expansions"] == []
    QueryExpansion.objects.create(workspace=workspace, term="hawser", expansions="anchor chains")
    assert search("When is the hawser checked?", options(workspace, top_k=5)).stats["expansions"] == ["anchor chains"]


def test_the_calendar_is_read_once_until_the_workspace_changes(workspace):
    _release_notes(workspace, "1.0", "2024-01-10")
    assert [str(v) for v, _ in release_calendar(workspace_id=workspace.pk)] == ["1.0"]
    with CaptureQueriesContext(connection) as queries, generation_read_once():  # as within one search
        assert [str(v) for v, _ in release_calendar(workspace_id=workspace.pk)] == ["1.0"]
        assert [str(e.version) for e in release_calendar_entries(workspace_id=workspace.pk)] == ["1.0"]
    assert len(queries) == 1  # the workspace's generation, nothing else
    Release.objects.create(workspace=workspace, series="Harbor", version="1.0", version_key="1", hidden=True,
                           source=Release.Source.STAFF)
    assert release_calendar(workspace_id=workspace.pk) == []  # the next read sees the staff row


def test_a_transaction_reads_its_own_change_and_keeps_nothing_of_it_for_others(workspace):
    _release_notes(workspace, "1.0", "2024-01-10")
    before = _generation(workspace)
    assert [str(v) for v, _ in release_calendar(workspace_id=workspace.pk)] == ["1.0"]  # kept for this generation
    with transaction.atomic():
        _release_notes(workspace, "1.1", "2024-06-10")
        assert _generation(workspace) == before  # set at commit
        assert [str(v) for v, _ in release_calendar(workspace_id=workspace.pk)] == ["1.0", "1.1"]
        transaction.set_rollback(True)
    assert _generation(workspace) == before
    assert [str(v) for v, _ in release_calendar(workspace_id=workspace.pk)] == ["1.0"]  # never the rolled-back read


def test_a_search_lists_a_contradiction_raised_or_resolved_right_after_it(workspace):
    """The workspace's pending contradictions are kept per generation: raising or resolving one shows in the next
    search's provenance, and what a caller does to its copy reaches no other search."""
    license_workspace(workspace)
    first = add_document(workspace, "/limits-a.txt", ["The API rate limit is 600 requests per minute."])
    second = add_document(workspace, "/limits-b.txt", ["The API rate limit is 1000 requests per minute."])
    question = "What is the API rate limit per minute?"
    asked = options(workspace, top_k=5, dedup=False, respect_canonicals=False, include_provenance=True)

    def listed() -> list[list]:
        return sorted([c["id"], c["differences"]] for result in search(question, asked)
                      for c in result.provenance["contradictions"])

    assert listed() == []
    a, b = sorted([chunk_of(first).pk, chunk_of(second).pk])
    conflict = Contradiction.objects.create(workspace=workspace, chunk_a_id=a, chunk_b_id=b, similarity=0.9,
                                            differences=[{"kind": "number", "a": "600", "b": "1000"}])
    said = [conflict.pk, [{"kind": "number", "a": "600", "b": "1000"}]]
    assert listed() == [said, said]  # one result on each side
    search(question, asked)[0].provenance["contradictions"][0]["differences"].clear()
    assert listed() == [said, said]
    Contradiction.objects.filter(pk=conflict.pk).update(status=Contradiction.Status.RESOLVED)
    assert listed() == []
