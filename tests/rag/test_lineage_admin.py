"""Families in the admin: reorder, split and join by hand; hand-set labels and dates; deletion updates the family."""

from __future__ import annotations

from datetime import UTC, datetime
from html.parser import HTMLParser

import pytest

from rag.lineage.families import family_refresh
from rag.releases import version_key
from rag.models import Chunk, Document, DocumentFamily
from tests.factories import WorkspaceFactory
from tests.rag.factories import ChunkFactory, DocumentFactory

pytestmark = pytest.mark.django_db


def _version(workspace, family, label: str, position: int, limit: int) -> Document:
    title = f"Lumen Gateway {label} Admin Guide"
    document = DocumentFactory(workspace=workspace, family=family, family_position=position, title=title,
                               path=f"/guide/guide-{label}.md", version_label=label, version_key=version_key(label),
                               version_source="title", doc_date=datetime(2024 + position, 3, 1, tzinfo=UTC),
                               chunk_count=2)
    ChunkFactory(document=document, heading_path=f"{title} > Limits", chunk_index=0, total_chunks=2,
                 text=f"The gateway accepts {limit} connections per worker in release {label}.")
    ChunkFactory(document=document, heading_path=f"{title} > Release {label} notes", chunk_index=1, total_chunks=2,
                 text=f"Release {label} notes: items particular to {label} and nothing else {limit * 7}.")
    return document


@pytest.fixture
def family() -> DocumentFamily:
    workspace = WorkspaceFactory()
    family = DocumentFamily.objects.create(workspace=workspace, name="Lumen Gateway Admin Guide")
    for position, (label, limit) in enumerate([("1.0", 100), ("2.0", 200), ("3.0", 300)]):
        _version(workspace, family, label, position, limit)
    family_refresh(family_id=family.pk)
    return family


def _labels(family_id: int) -> list[str]:
    return list(Document.objects.filter(family_id=family_id).order_by("family_position")
                .values_list("version_label", flat=True))


def _latest(family_id: int) -> list[str]:
    return list(Document.objects.filter(family_id=family_id, is_latest_version=True)
                .values_list("version_label", flat=True))


class _FormFields(HTMLParser):
    """The named fields of a page's forms with their values, as a browser would submit them unchanged."""

    def __init__(self) -> None:
        super().__init__()
        self.data: dict[str, str] = {}
        self._textarea: str | None = None
        self._select: str | None = None

    def handle_starttag(self, tag: str, attrs: list) -> None:
        a = dict(attrs)
        if tag == "input" and a.get("name") and a.get("type") not in ("submit", "checkbox", "file"):
            self.data[a["name"]] = a.get("value") or ""
        elif tag == "input" and a.get("type") == "checkbox" and "checked" in a:
            self.data[a["name"]] = a.get("value") or "on"
        elif tag == "textarea":
            self._textarea = a.get("name")
            self.data[self._textarea] = ""
        elif tag == "select":
            self._select = a.get("name")
        elif tag == "option" and self._select and "selected" in a:
            self.data[self._select] = a.get("value") or ""

    def handle_endtag(self, tag: str) -> None:
        if tag == "textarea":
            self._textarea = None
        elif tag == "select":
            self._select = None

    def handle_data(self, data: str) -> None:
        if self._textarea:
            self.data[self._textarea] += data.removeprefix("\n")


def _change_form(client, url: str) -> dict[str, str]:
    parser = _FormFields()
    parser.feed(client.get(url).content.decode())
    return {k: v for k, v in parser.data.items() if k not in ("q", "workspace", "next")}


def test_reorder_by_editing_positions(staff_client, family):
    url = f"/admin/rag/documentfamily/{family.pk}/change/"
    data = _change_form(staff_client, url)
    positions = {data[f"members-{i}-id"]: i for i in range(3)}
    ids = {label: str(pk) for label, pk in Document.objects.filter(family=family).values_list("version_label", "pk")}
    for label, position in (("1.0", 2), ("2.0", 0), ("3.0", 1)):  # 1.0 is really the newest, say
        data[f"members-{positions[ids[label]]}-family_position"] = str(position)
    response = staff_client.post(url, {**data, "_save": "Save"})
    assert response.status_code == 302, response.content.decode()[:2000]
    family.refresh_from_db()
    assert family.edited_by_hand and _labels(family.pk) == ["2.0", "3.0", "1.0"] and _latest(family.pk) == ["1.0"]
    three = Document.objects.get(family=family, version_label="3.0")
    assert set(three.chunks.values_list("lineage", flat=True)) != {""}  # 3.0 is an older version now


def test_split_selected_members_into_a_new_family(staff_client, family):
    newest = Document.objects.get(family=family, version_label="3.0")
    response = staff_client.post("/admin/rag/document/", {"action": "split_family", "_selected_action": [newest.pk]})
    assert response.status_code == 302
    newest.refresh_from_db()
    family.refresh_from_db()
    assert newest.family_id != family.pk and newest.family.edited_by_hand and family.edited_by_hand
    assert _labels(family.pk) == ["1.0", "2.0"] and _latest(family.pk) == ["2.0"]
    assert newest.family_position == 0 and newest.is_latest_version
    two = Document.objects.get(family=family, version_label="2.0")
    assert set(two.chunks.values_list("lineage", flat=True)) == {""}  # nothing newer supersedes it any more


def test_split_of_members_from_two_families_is_refused(staff_client, family):
    other = DocumentFamily.objects.create(workspace=family.workspace, name="Other")
    stray = _version(family.workspace, other, "9.0", 0, 900)
    one = Document.objects.get(family=family, version_label="1.0")
    response = staff_client.post("/admin/rag/document/", {"action": "split_family",
                                                          "_selected_action": [one.pk, stray.pk]}, follow=True)
    assert "Choose members of one family to split off." in response.content.decode()
    assert _labels(family.pk) == ["1.0", "2.0", "3.0"]


def test_join_selected_families(staff_client, family):
    other = DocumentFamily.objects.create(workspace=family.workspace, name="Lumen Gateway Admin Guide (old)")
    _version(family.workspace, other, "0.9", 0, 90)
    response = staff_client.post("/admin/rag/documentfamily/", {"action": "join_families",
                                                                "_selected_action": [family.pk, other.pk]})
    assert response.status_code == 302
    assert not DocumentFamily.objects.filter(pk=other.pk).exists()
    family.refresh_from_db()
    assert family.edited_by_hand and _labels(family.pk) == ["0.9", "1.0", "2.0", "3.0"]
    assert _latest(family.pk) == ["3.0"]


def test_join_across_workspaces_is_refused(staff_client, family):
    elsewhere = DocumentFamily.objects.create(workspace=WorkspaceFactory(), name="Elsewhere")
    response = staff_client.post("/admin/rag/documentfamily/", {"action": "join_families",
                                                                "_selected_action": [family.pk, elsewhere.pk]},
                                 follow=True)
    assert "different workspaces" in response.content.decode()
    assert DocumentFamily.objects.filter(pk=elsewhere.pk).exists()


def test_hand_set_label_and_date_are_recorded_with_the_user(staff_client, staff_user, family):
    oldest = Document.objects.get(family=family, version_label="1.0")
    url = f"/admin/rag/document/{oldest.pk}/change/"
    data = _change_form(staff_client, url)
    data.update({"version_label": "4.0", "doc_date_0": "2026-02-01", "doc_date_1": "09:30:00"})
    response = staff_client.post(url, {**data, "_save": "Save"})
    assert response.status_code == 302, response.content.decode()[:2000]
    oldest.refresh_from_db()
    assert (oldest.version_label, oldest.version_source, oldest.version_set_by) == ("4.0", "set_by_hand", staff_user)
    assert oldest.version_key and oldest.version_key > Document.objects.get(version_label="3.0").version_key
    assert oldest.doc_date.date().isoformat() == "2026-02-01"
    assert (oldest.date_source, oldest.date_set_by) == ("set_by_hand", staff_user)
    assert _labels(family.pk) == ["2.0", "3.0", "4.0"] and _latest(family.pk) == ["4.0"]  # the family re-ordered
    page = staff_client.get(url).content.decode()
    assert "set by hand" in page


def test_an_unchanged_save_sets_nothing_by_hand(staff_client, family):
    oldest = Document.objects.get(family=family, version_label="1.0")
    url = f"/admin/rag/document/{oldest.pk}/change/"
    assert staff_client.post(url, {**_change_form(staff_client, url), "_save": "Save"}).status_code == 302
    oldest.refresh_from_db()
    assert oldest.version_source == "title" and oldest.date_source == "frontmatter" and oldest.date_set_by is None


def test_deleting_the_newest_member_updates_the_family(staff_client, family):
    newest = Document.objects.get(family=family, version_label="3.0")
    response = staff_client.post(f"/admin/rag/document/{newest.pk}/delete/", {"post": "yes"})
    assert response.status_code == 302
    assert _labels(family.pk) == ["1.0", "2.0"] and _latest(family.pk) == ["2.0"]
    assert not Chunk.objects.filter(document__family=family, superseded_by__isnull=False,
                                    superseded_by__document__version_label="3.0").exists()


def test_deleting_selected_members_updates_the_family(staff_client, family):
    doomed = list(Document.objects.filter(family=family, version_label__in=["2.0", "3.0"]).values_list("pk", flat=True))
    staff_client.post("/admin/rag/document/", {"action": "delete_selected", "_selected_action": doomed, "post": "yes"})
    assert not Document.objects.filter(pk__in=doomed).exists()
    # One member left: no family any more, and its chunks are current.
    one = Document.objects.get(version_label="1.0")
    assert one.family_id is None and one.is_latest_version
    assert set(one.chunks.values_list("lineage", flat=True)) == {""}


def test_admin_pages_show_lineage(staff_client, family):
    older = Document.objects.get(family=family, version_label="2.0")
    changelist = staff_client.get("/admin/rag/document/").content.decode()
    assert changelist.count(f'href="/admin/rag/documentfamily/{family.pk}/change/">#{family.pk}</a>') == 3
    assert '<td class="field-version_from">title</td>' in changelist
    change = staff_client.get(f"/admin/rag/document/{older.pk}/change/").content.decode()
    assert "superseded by" in change.lower() and "Superseded" in change
    family_page = staff_client.get(f"/admin/rag/documentfamily/{family.pk}/change/").content.decode()
    assert f"?family__id__exact={family.pk}" in family_page
    filtered = staff_client.get(f"/admin/rag/document/?family__id__exact={family.pk}")
    assert filtered.status_code == 200 and filtered.content.decode().count('name="_selected_action"') == 3


def test_largest_families_first_with_their_titles_counted(staff_client, family):
    small = DocumentFamily.objects.create(workspace=family.workspace, name="A small family")
    for position, label in enumerate(["1.0", "2.0"]):
        DocumentFactory(workspace=family.workspace, family=small, family_position=position, title=f"Page {label}",
                        title_key="page" if position else "another page", path=f"/small/{label}.md")
    Document.objects.filter(family=family).update(title_key="lumen gateway admin guide")
    page = staff_client.get("/admin/rag/documentfamily/").content.decode()
    family.refresh_from_db()
    assert page.index(family.name) < page.index("A small family")  # 3 members before 2
    assert '<td class="field-title_count">1</td>' in page and '<td class="field-title_count">2</td>' in page


def test_split_the_ticked_members_from_the_family_page(staff_client, family):
    url = f"/admin/rag/documentfamily/{family.pk}/change/"
    data = _change_form(staff_client, url)
    assert "members-0-split_off" in staff_client.get(url).content.decode()
    newest = Document.objects.get(family=family, version_label="3.0")
    row = next(i for i in range(3) if data[f"members-{i}-id"] == str(newest.pk))
    response = staff_client.post(url, {**data, f"members-{row}-split_off": "on", "_save": "Save"})
    assert response.status_code == 302, response.content.decode()[:2000]
    newest.refresh_from_db()
    assert newest.family_id != family.pk and newest.family.edited_by_hand and newest.is_latest_version
    assert _labels(family.pk) == ["1.0", "2.0"] and _latest(family.pk) == ["2.0"]


def test_staff_date_and_hide_releases_in_the_calendar(staff_client, staff_user):
    """The calendar is shown to staff and editable: a staff row dates a release, hides a wrong one, and refuses a
    version that is none."""
    from datetime import date

    from rag.releases import release_calendar_entries
    from rag.models import Release

    workspace = WorkspaceFactory()
    notes = DocumentFactory(workspace=workspace, title="Lumen Gateway 2.1.0 release notes", path="/notes/2.1.md")
    read = Release.objects.create(workspace=workspace, series="Lumen Gateway", version="2.1.0",
                                  version_key=version_key("2.1.0"), date=date(2025, 2, 4), document=notes, how="title")
    wrong = Release.objects.create(workspace=workspace, series="Lumen Gateway", version="3.8.9",
                                   version_key=version_key("3.8.9"), date=date(2015, 4, 8), document=notes, how="title")
    listing = staff_client.get("/admin/rag/release/")
    assert listing.status_code == 200 and "Lumen Gateway 2.1.0" in listing.content.decode()

    url = f"/admin/rag/release/{read.pk}/change/"
    form = {"series": "Lumen Gateway", "version": "2.1.0", "date": "2025-02-06"}
    assert staff_client.post(url, form).status_code == 302
    assert staff_client.post(f"/admin/rag/release/{wrong.pk}/change/",
                             {"series": "Lumen Gateway", "version": "3.8.9", "date": "2015-04-08", "hidden": "on"}
                             ).status_code == 302
    read.refresh_from_db()
    assert (read.source, read.set_by) == (Release.Source.STAFF, staff_user)
    entries = release_calendar_entries(workspace_id=workspace.pk)
    assert [(str(e.version), e.date.date(), e.source) for e in entries] == [
        ("2.1.0", date(2025, 2, 6), Release.Source.STAFF)]

    refused = staff_client.post(url, {**form, "version": "40b08594"})
    assert refused.status_code == 200 and "Not a release version" in refused.content.decode()
