"""The release calendar knows every release line a reader may pick (issue 54): the demo's 2.0 has five pages and no
release notes, so no series page dated it and the calendar (and its admin) listed only 2.1 and 3.0."""

from __future__ import annotations

import shutil
from datetime import date
from pathlib import Path

import pytest

from rag.models import Document, Release
from rag.releases import release_calendar, series_names
from rag.releases.calendar import LABELLED, best_cased, calendar_update
from tests.chat.conftest import index_folder
from tests.factories import WorkspaceFactory

DEMO = Path(__file__).resolve().parents[2] / "demo" / "corpus"
# The demo's two release notes (one titled in capitals) and two of its 2.0 pages, dated 2024-04-10 and 2024-05-02.
PAGES = ("release-notes/RELEASE_NOTES_3.0.txt", "release-notes/release-notes-2.1.md", "v2.0/install-guide.md",
         "v2.0/architecture-overview.rst")


@pytest.fixture
def lumen(db, tmp_path):
    workspace = WorkspaceFactory(slug="lumen")
    folder = tmp_path / "lumen"
    for name in PAGES:
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(DEMO / name, folder / name)
    index_folder(workspace, folder)
    return workspace


def test_a_release_line_known_only_from_its_documents_is_in_the_calendar(lumen):
    calendar = [(str(version), moment.date()) for version, moment in release_calendar(workspace_id=lumen.pk)]
    assert calendar == [("2.0", date(2024, 4, 10)), ("2.1", date(2025, 2, 4)), ("3.0", date(2025, 9, 9))]
    row = Release.objects.get(workspace=lumen, version="2.0")
    assert row.how == LABELLED and row.document.path.endswith("install-guide.md")  # the line's earliest page
    # "LUMEN GATEWAY 3.0 - RELEASE NOTES" and "Lumen Gateway 2.1 Release Notes": one series, as most pages write it.
    assert series_names(workspace_id=lumen.pk) == ["Lumen Gateway"]


def test_the_labelled_row_follows_its_documents_and_never_outranks_a_page(lumen):
    earliest = Document.objects.get(workspace=lumen, path__endswith="install-guide.md")
    earliest.archived = True
    earliest.save(update_fields=["archived"])
    calendar_update(document_id=earliest.pk)
    dated = {str(version): moment.date() for version, moment in release_calendar(workspace_id=lumen.pk)}
    assert dated["2.0"] == date(2024, 5, 2)  # now the line's earliest page is the architecture overview
    # The 2.1 line has its notes: no row from its documents' labels, whatever they are.
    assert not Release.objects.filter(workspace=lumen, how=LABELLED).exclude(version="2.0").exists()


def test_the_admin_calendar_lists_2_0_and_one_series(staff_client, lumen):
    page = staff_client.get("/admin/rag/release/").content.decode()
    assert ">Lumen Gateway 2.0</a>" in page and ">Lumen Gateway 3.0</a>" in page
    assert page.count("?series=") == 1  # one choice in the series filter
    chosen = staff_client.get("/admin/rag/release/", {"series": "lumen gateway"}).content.decode()
    assert chosen.count("Lumen Gateway 3.0") == 1 and "Lumen Gateway 2.1" in chosen


def test_best_cased_prefers_mixed_case_then_the_most_pages():
    assert best_cased(["LUMEN GATEWAY", "Lumen Gateway", "lumen gateway", "LUMEN GATEWAY"]) == {
        "lumen gateway": "Lumen Gateway"}
    assert best_cased(["Django", "DJANGO", "Django"]) == {"django": "Django"}
