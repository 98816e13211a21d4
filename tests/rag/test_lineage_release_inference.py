"""Every passage knows the release it speaks for (issue 35): a calendar from the workspace's own series pages, and
the release of unlabelled documents from their export's strongest evidence."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from django.urls import reverse

from rag.parsers import parse_document
from rag.releases.series_pages import release_entries, releases_mentioned
from rag.releases.calendar import calendar_update, release_calendar, release_calendar_entries
from rag.releases.inference import workspace_releases_infer
from rag.releases.scope import documents_as_of, workspace_version_labels
from rag.models import Document, DocumentFamily, Release
from tests.rag.retrieval_helpers import add_document

pytestmark = pytest.mark.django_db

PACKED_22 = datetime(2022, 4, 11, 7, 23, 3, tzinfo=UTC)
PACKED_32 = datetime(2024, 3, 4, 7, 47, 52, tzinfo=UTC)


def _parsed(name: str, text: str):
    return parse_document(Path(name), text.encode())


@pytest.mark.parametrize(("name", "text", "entries"), [
    ("2.2.28.txt", "==========================\nDjango 2.2.28 release notes\n==========================\n\n"
     "*April 11, 2022*\n\nDjango 2.2.28 fixes two security issues.\n", [("Django", "2.2.28", "2022-04-11", "title")]),
    ("CHANGES.md", "# Changelog\n\n## [2.1.0] - 2025-02-04\n\nAdded a thing.\n\n## [2.0.1] - 2024-12-01\n\nFixed.\n",
     [("", "2.1.0", "2025-02-04", "heading"), ("", "2.0.1", "2024-12-01", "heading")]),
    ("CHANGES.rst", "Changes\n=======\n\nRelease 7.4.7 (released Jul 20, 2024)\n"
     "======================================\n\nBugs fixed\n\n* One.\n",
     [("", "7.4.7", "2024-07-20", "heading")]),
    ("changelog.rst", "=============================\nChange history for Celery 5.2\n=============================\n\n"
     "5.2.7\n=====\n\n"
     ":release-date: 2022-05-29 11:00 P.M UTC+6:00\n:release-by: Omer Katz\n\n- Fixed.\n",
     [("Celery", "5.2", "", "title"), ("Celery", "5.2.7", "2022-05-29", "heading")]),
    # A version of other software in a sentence never enters the calendar, nor a numbered section.
    ("install.md", "# Installing\n\nSQLite 3.8.9 (released Apr 8, 2015) or newer is needed.\n\n## 2.1\n\nText.\n", []),
])
def test_a_series_page_says_which_release_it_is_and_when(name, text, entries):
    found = [(e["series"], e["version"], e["date"], e["how"]) for e in release_entries(_parsed(name, text))]
    assert found == entries


def test_new_in_mentions_are_read_in_every_format():
    markdown = "# Fields\n\n*New in version 2.0:* the field.\n\nChanged in Django 4.1: the default.\n"
    assert releases_mentioned(_parsed("fields.md", markdown)) == ["2.0", "4.1"]


def _notes(workspace, when, series, version, *, folder="/corpus", date=""):
    return add_document(workspace, f"{folder}/{version}-notes-{when:%Y%m%d%H%M}.txt", [f"Fixes in {version}."],
                        title=f"{series} {version} release notes", doc_date=when, date_source="mtime",
                        version_label=version, version_key=version, version_source="title",
                        metadata={"release_entries": [{"series": series, "version": version, "date": date,
                                                       "how": "title"}]})


def test_the_calendar_comes_from_series_pages_and_staff_correct_it(workspace, staff_user):
    for version, day in (("6.2.1", "2023-04-25"), ("7.0.0", "2023-07-24")):
        calendar_update(document_id=_notes(workspace, PACKED_32, "Sphinx", version, date=day).pk)
    undated = _notes(workspace, datetime(2024, 7, 20, tzinfo=UTC), "Sphinx", "7.4.7")
    calendar_update(document_id=undated.pk)

    assert [(str(v), d.date().isoformat()) for v, d in release_calendar(workspace_id=workspace.pk)] == [
        ("6.2.1", "2023-04-25"), ("7.0.0", "2023-07-24"), ("7.4.7", "2024-07-20")]  # the page's date stands in
    Release.objects.create(workspace=workspace, series="Sphinx", version="7.0.0", version_key="x", hidden=True,
                           source=Release.Source.STAFF, set_by=staff_user)
    Release.objects.create(workspace=workspace, series="Sphinx", version="6.2.1", version_key="y",
                           date=datetime(2023, 4, 26).date(), source=Release.Source.STAFF, set_by=staff_user)
    assert [(str(e.version), e.date.date().isoformat(), e.source)
            for e in release_calendar_entries(workspace_id=workspace.pk)] == [
        ("6.2.1", "2023-04-26", "staff"), ("7.4.7", "2024-07-20", "page")]
    Document.objects.filter(pk=undated.pk).update(archived=True)
    assert [str(v) for v, _ in release_calendar(workspace_id=workspace.pk)] == ["6.2.1"]


def _export(workspace, packed: datetime, release: str, pages: dict[str, tuple[str, tuple[str, ...]]],
            *, folder: str = "/corpus") -> dict[str, Document]:
    """One release's docs in a flat folder shared with other releases: every file its own date within the weeks
    before packaging, hashed names, no version anywhere but the notes' titles and 'new in' mentions."""
    made = {}
    for index, (name, (text, mentioned)) in enumerate(pages.items()):
        made[name] = add_document(workspace, f"{folder}/{abs(hash((release, name))) % 10**8:08x}_{name}", [text],
                                  title=name, doc_date=packed - timedelta(days=30 - index), date_source="mtime",
                                  metadata={"releases_mentioned": list(mentioned), "names": {"Django": 5}})
    made["notes"] = _notes(workspace, packed, "Django", release, folder=folder, date=f"{packed:%Y-%m-%d}")
    return made


def _family(workspace, *documents: Document) -> None:
    group = DocumentFamily.objects.create(workspace=workspace, name=documents[0].title)
    for position, document in enumerate(documents):
        Document.objects.filter(pk=document.pk).update(family=group, family_position=position,
                                                       is_latest_version=position == len(documents) - 1)


PAGES_22 = {"databases.txt": ("Django supports PostgreSQL 9.4 and higher.", ("2.2",)),
            "cache.txt": ("The cache framework stores pages.", ()), "forms.txt": ("Forms.", ("2.1",)),
            "admin.txt": ("The admin.", ()), "urls.txt": ("URLs.", ())}
PAGES_32 = {"databases.txt": ("Django supports PostgreSQL 9.6 and higher.", ("3.2",)),
            "cache.txt": ("The cache framework stores pages.", ()), "forms.txt": ("Forms.", ("3.1",)),
            "admin.txt": ("The admin, again.", ()), "keys.txt": ("Default primary keys are BigAutoField.", ("3.2",))}


def test_two_releases_flattened_into_one_folder_are_told_apart_and_placed_exactly(workspace):
    old = _export(workspace, PACKED_22, "2.2.28", PAGES_22)
    new = _export(workspace, PACKED_32, "3.2.25", PAGES_32)
    for page in ("databases.txt", "cache.txt", "forms.txt", "admin.txt"):
        _family(workspace, old[page], new[page])
    for document in (old["notes"], new["notes"]):
        calendar_update(document_id=document.pk)
    email = add_document(workspace, "uploads/room-change.eml", ["The meeting moves to room B."], title="Room",
                         doc_date=PACKED_32, date_source="mail_date")

    counts = workspace_releases_infer(workspace_id=workspace.pk)

    stored = {pk: label if source else None
              for pk, label, source in Document.objects.values_list("pk", "inferred_label", "inferred_source")}
    assert {stored[d.pk] for name, d in old.items() if name != "notes"} == {"2.2.28"}
    assert {stored[d.pk] for name, d in new.items() if name != "notes"} == {"3.2.25"}
    assert stored[email.pk] is None  # outside any series: no release
    assert counts["release_notes"] == len(PAGES_22) + len(PAGES_32) and counts["label"] == 2
    page = Document.objects.get(pk=old["cache.txt"].pk)
    assert page.inferred_release["line"] == "2.2" and "2.2.28" in page.inferred_release["evidence"]
    assert {"2.2.28", "3.2.25"} <= set(workspace_version_labels(workspace_id=workspace.pk))

    # "Django 2.2" is the 2.2 line: the docs of its newest release held, never what was current at 2.2.0.
    at_22 = documents_as_of(workspace_id=workspace.pk, version="2.2")
    at_32 = documents_as_of(workspace_id=workspace.pk, version="3.2")
    assert old["databases.txt"].pk in at_22 and new["databases.txt"].pk not in at_22
    assert new["databases.txt"].pk in at_32 and old["databases.txt"].pk not in at_32
    assert old["urls.txt"].pk in at_32 and new["keys.txt"].pk not in at_22
    assert workspace_releases_infer(workspace_id=workspace.pk)["changed"] == 0  # idempotent


def test_a_later_export_that_names_no_newer_release_is_only_newer_than_the_earlier(workspace):
    """Flask 3.0's docs carry no 3.0 mention: their newest names 2.3, which the 2.3 export of the same pages is."""
    made = {}
    for when, name in ((PACKED_22, "2.3"), (PACKED_32, "3.0")):
        made[name] = [add_document(workspace, f"/flat/{name}-{page}.rst", [f"Page {page}."], title=f"Page {page}",
                                   doc_date=when - timedelta(days=page), date_source="mtime",
                                   metadata={"releases_mentioned": ["2.3"]}) for page in range(5)]
    for page in range(5):
        _family(workspace, made["2.3"][page], made["3.0"][page])

    workspace_releases_infer(workspace_id=workspace.pk)

    newer = Document.objects.get(pk=made["3.0"][0].pk)
    assert newer.inferred_after == "2.3" and newer.inferred_release["label"] == "newer than 2.3"
    assert Document.objects.get(pk=made["2.3"][0].pk).inferred_label == "2.3"
    at_23 = documents_as_of(workspace_id=workspace.pk, version="2.3")
    assert {d.pk for d in made["2.3"]} <= at_23 and not at_23 & {d.pk for d in made["3.0"]}


def test_staff_set_the_release_of_a_whole_export_at_once(staff_client, workspace):
    batch = _export(workspace, PACKED_22, "2.2.28", PAGES_22, folder="/a")
    other = _export(workspace, PACKED_32, "3.2.25", PAGES_32, folder="/b")
    workspace_releases_infer(workspace_id=workspace.pk)

    response = staff_client.post(reverse("admin:rag_document_changelist"),
                                 {"action": "release_set_batches", "release": "2.2.1",
                                  "_selected_action": [batch["cache.txt"].pk]}, follow=True)

    assert response.status_code == 200
    corrected = Document.objects.filter(pk__in=[d.pk for name, d in batch.items() if name != "notes"])
    assert {(d.version_label, d.version_source) for d in corrected} == {("2.2.1", "set_by_hand")}
    assert not Document.objects.filter(pk__in=[d.pk for n, d in other.items() if n != "notes"]) \
        .exclude(version_label="").exists()
    refused = staff_client.post(reverse("admin:rag_document_changelist"),
                                {"action": "release_set_batches", "release": "three",
                                 "_selected_action": [other["cache.txt"].pk]}, follow=True)
    assert b"is not a version" in refused.content


def test_the_document_page_says_where_an_inferred_release_came_from(logged_in_client, workspace):
    batch = _export(workspace, PACKED_22, "2.2.28", PAGES_22)
    workspace_releases_infer(workspace_id=workspace.pk)

    page = logged_in_client.get(reverse("document-detail", args=[batch["cache.txt"].pk]))

    assert page.status_code == 200
    assert "2.2.28 <span class=\"muted\">(from its release&#x27;s series pages; confidence 0.9)" in page.content.decode()
