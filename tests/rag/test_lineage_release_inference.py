"""The release of documents that carry no label: from their batch's release notes, directives or labelled siblings."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from django.urls import reverse

from rag.lineage.calendar import release_calendar_reset
from rag.lineage.release_inference import batch_release, document_release_infer, workspace_releases_infer
from rag.lineage.scope import documents_as_of, workspace_version_labels
from rag.models import Document, DocumentFamily
from tests.rag.retrieval_helpers import add_document

pytestmark = pytest.mark.django_db

PACKED_22 = datetime(2022, 4, 11, 7, 23, 3, tzinfo=UTC)  # every file of the 2.2 docs: the sdist's packaging time
PACKED_32 = datetime(2024, 3, 4, 7, 47, 52, tzinfo=UTC)


@pytest.fixture(autouse=True)
def fresh_calendar():
    release_calendar_reset()
    yield
    release_calendar_reset()


def row(title: str, directives: tuple[str, ...] = (), label: str = "") -> dict:
    return {"title": title, "directives": list(directives), "version_label": label}


def test_the_newest_release_notes_of_a_batch_name_its_release_and_directives_confirm():
    guess = batch_release([row("Django 2.2.28 release notes"), row("Django 2.1.15 release notes"),
                           row("Databases", ("2.2", "2.1")), row("Settings", ("2.2",)), row("Tutorial")] * 2)
    assert (guess.label, guess.source, guess.confidence) == ("2.2", "release_notes", 0.9)
    # No release notes: the newest version the batch's directives name (the docs of a release name no newer one).
    guess = batch_release([row("Config", ("2.0", "1.1")), row("CLI", ("2.0",)), row("Quickstart", ("0.10",))]
                          + [row("Page")] * 8)
    assert (guess.label, guess.source, guess.confidence) == ("2.0", "directives", 0.7)
    # Labelled files of the batch decide for their unlabelled siblings.
    guess = batch_release([row("Guide", label="3.2.1"), row("FAQ", label="3.2"), row("Django 9.9 release notes")])
    assert (guess.label, guess.source) == ("3.2", "sibling")
    assert batch_release([row("Page"), row("Other page"), row("Python 3.11 support")]) is None


def _batch(workspace, when: datetime, release: str, pages: dict[str, tuple[str, tuple[str, ...]]]) -> dict[str, Document]:
    """Unlabelled files in one flat folder, all with one mtime (an unpacked release), plus its release notes."""
    made = {}
    notes = {f"notes-{release}.txt": (f"Django {release} release notes", f"Fixes in {release}.", ())}
    for name, (title, text, directives) in {**notes, **{n: (n, *page) for n, page in pages.items()}}.items():
        made[name] = add_document(workspace, f"/corpus/{when:%Y%m%d}-{name}", [text], title=title, doc_date=when,
                                  date_source="mtime",
                                  metadata={"version_directives": [{"kind": "added", "version": v} for v in directives]})
    for filler in range(3):
        made[f"filler{filler}"] = add_document(workspace, f"/corpus/{when:%Y%m%d}-filler{filler}.txt", ["Text."],
                                               doc_date=when, date_source="mtime")
    return made


def test_unlabelled_batches_get_their_release_and_scope_questions_about_it(workspace):
    old = _batch(workspace, PACKED_22, "2.2.28", {
        "databases.txt": ("Django supports PostgreSQL 9.4 and higher.", ("2.2",)),
        "unchanged.txt": ("The cache framework stores pages.", ()),
    })
    new = _batch(workspace, PACKED_32, "3.2.25", {
        "databases.txt": ("Django supports PostgreSQL 9.6 and higher.", ("3.2",)),
        "new-in-32.txt": ("Default primary key fields are BigAutoField.", ("3.2",)),
    })
    group = DocumentFamily.objects.create(workspace=workspace, name="Databases")
    for position, document in enumerate((old["databases.txt"], new["databases.txt"])):
        Document.objects.filter(pk=document.pk).update(family=group, family_position=position,
                                                       is_latest_version=position == 1)
    labelled = add_document(workspace, "/elsewhere/guide.md", ["Guide."], version_label="1.0", version_key="1",
                            doc_date=PACKED_22, date_source="frontmatter")

    counts = workspace_releases_infer(workspace_id=workspace.pk)

    assert counts["release_notes"] == len(old) + len(new) and counts["label"] == 1
    page = Document.objects.get(pk=old["databases.txt"].pk)
    assert page.inferred_release["label"] == "2.2" and page.inferred_release["source_label"] == "dates and release notes"
    assert Document.objects.get(pk=new["filler0"].pk).metadata["release"]["label"] == "3.2"
    assert "release" not in Document.objects.get(pk=labelled.pk).metadata  # its own label says
    assert {"2.2", "3.2"} <= set(workspace_version_labels(workspace_id=workspace.pk))

    at_22 = documents_as_of(workspace_id=workspace.pk, version="2.2")
    at_32 = documents_as_of(workspace_id=workspace.pk, version="3.2")
    assert old["databases.txt"].pk in at_22 and new["databases.txt"].pk not in at_22
    assert new["databases.txt"].pk in at_32 and old["databases.txt"].pk not in at_32
    # A page unchanged since 2.2 answers a 3.2 question; a page first written for 3.2 does not answer a 2.2 one.
    assert old["unchanged.txt"].pk in at_32 and new["new-in-32.txt"].pk not in at_22

    assert workspace_releases_infer(workspace_id=workspace.pk)["changed"] == 0  # idempotent


def test_indexing_one_file_updates_its_batch_only(workspace):
    old = _batch(workspace, PACKED_22, "2.2.28", {"a.txt": ("A.", ("2.2",))})
    new = _batch(workspace, PACKED_32, "3.2.25", {"a.txt": ("A.", ("3.2",))})

    assert document_release_infer(document_id=old["a.txt"].pk) == len(old)

    assert {d.metadata.get("release", {}).get("label") for d in Document.objects.filter(pk__in=[d.pk for d in old.values()])} \
        == {"2.2"}
    assert not any("release" in d.metadata for d in Document.objects.filter(pk__in=[d.pk for d in new.values()]))


def test_staff_set_the_release_of_a_whole_batch_at_once(staff_client, workspace):
    batch = _batch(workspace, PACKED_22, "2.2.28", {"a.txt": ("A.", ())})
    other = _batch(workspace, PACKED_32, "3.2.25", {"a.txt": ("A.", ())})
    workspace_releases_infer(workspace_id=workspace.pk)

    response = staff_client.post(reverse("admin:rag_document_changelist"),
                                 {"action": "release_set_batches", "release": "2.2.1",
                                  "_selected_action": [batch["a.txt"].pk]}, follow=True)

    assert response.status_code == 200
    corrected = Document.objects.filter(pk__in=[d.pk for d in batch.values()])
    assert {(d.version_label, d.version_source) for d in corrected} == {("2.2.1", "set_by_hand")}
    assert not Document.objects.filter(pk__in=[d.pk for d in other.values()]).exclude(version_label="").exists()
    assert workspace_releases_infer(workspace_id=workspace.pk)["label"] == len(batch)  # hand labels now decide

    refused = staff_client.post(reverse("admin:rag_document_changelist"),
                                {"action": "release_set_batches", "release": "three",
                                 "_selected_action": [other["a.txt"].pk]}, follow=True)
    assert b"is not a version" in refused.content
    assert not Document.objects.filter(pk=other["a.txt"].pk).exclude(version_label="").exists()


def test_the_document_page_says_where_an_inferred_release_came_from(logged_in_client, workspace):
    batch = _batch(workspace, PACKED_22, "2.2.28", {"a.txt": ("A.", ("2.2",))})
    workspace_releases_infer(workspace_id=workspace.pk)

    page = logged_in_client.get(reverse("document-detail", args=[batch["a.txt"].pk]))

    assert page.status_code == 200
    assert "2.2 <span class=\"muted\">(from dates and release notes; confidence 0.9)" in page.content.decode()


def test_a_later_batch_that_names_no_newer_release_is_only_newer_than_the_earlier(workspace):
    """Flask 3.0's docs carry no 3.0 directive: their newest names 2.3, which the 2.3 batch of the same pages is."""
    made = {}
    for when, name in ((PACKED_22, "2.3"), (PACKED_32, "3.0")):
        made[name] = [add_document(workspace, f"/flat/{name}-{page}.rst", [f"Page {page}."], title=f"Page {page}",
                                   doc_date=when, date_source="mtime",
                                   metadata={"version_directives": [{"kind": "changed", "version": "2.3"}]})
                      for page in range(5)]
    for page in range(5):
        group = DocumentFamily.objects.create(workspace=workspace, name=f"Page {page}")
        for position, name in enumerate(("2.3", "3.0")):
            Document.objects.filter(pk=made[name][page].pk).update(family=group, family_position=position)

    assert document_release_infer(document_id=made["2.3"][0].pk) == 5
    assert document_release_infer(document_id=made["3.0"][0].pk) == 5  # index time: the earlier batch is seen
    newer = Document.objects.get(pk=made["3.0"][0].pk)
    assert newer.metadata["release"]["after"] == "2.3" and newer.inferred_release["label"] == "newer than 2.3"
    for document in Document.objects.filter(pk__in=[d.pk for d in made["3.0"]]):
        document.metadata.pop("release")
        document.save(update_fields=["metadata"])
    workspace_releases_infer(workspace_id=workspace.pk)  # the sweep decides the same
    assert Document.objects.get(pk=made["3.0"][1].pk).metadata["release"]["after"] == "2.3"

    at_23 = documents_as_of(workspace_id=workspace.pk, version="2.3")
    assert {d.pk for d in made["2.3"]} <= at_23 and not at_23 & {d.pk for d in made["3.0"]}


def test_a_member_nothing_else_places_is_newer_than_its_older_members(workspace):
    old = _batch(workspace, PACKED_22, "2.2.28", {"a.txt": ("A.", ("2.2",))})
    lone = add_document(workspace, "/loose/a.txt", ["A, later."], doc_date=PACKED_32, date_source="mtime")
    group = DocumentFamily.objects.create(workspace=workspace, name="A")
    for position, document in enumerate((old["a.txt"], lone)):
        Document.objects.filter(pk=document.pk).update(family=group, family_position=position)

    workspace_releases_infer(workspace_id=workspace.pk)

    assert Document.objects.get(pk=lone.pk).metadata["release"] | {"evidence": ""} == {
        "label": "", "after": "2.2", "source": "family", "confidence": 0.5, "evidence": ""}
    assert lone.pk not in documents_as_of(workspace_id=workspace.pk, version="2.2")
    assert old["a.txt"].pk in documents_as_of(workspace_id=workspace.pk, version="2.2")
