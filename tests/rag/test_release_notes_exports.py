"""Every export placed by its own content, whatever its format and however wrong its file dates (issue 50).

Release notes are read in any common form and any format (a release's heading and "Release date: ..." under it,
"Released on ...", "(released ...)", a table of releases); a version named as future ("will be removed in 4.0",
"unreleased", "planned for") is never a release; an export speaks for the newest release its own notes describe,
whatever its file time says."""

from __future__ import annotations

import io
from datetime import UTC, date, datetime
from pathlib import Path

import pytest
from docx import Document as WordDocument
from fpdf import FPDF

from rag.parsers import parse_document
from rag.lineage import family_refresh
from rag.lineage.evidence import Member
from rag.lineage.grouping import version_order
from rag.models import Document, DocumentFamily
from rag.releases.calendar import FILE_DATE, calendar_update, page_dates, release_calendar
from rag.releases.inference import workspace_releases_infer
from rag.releases.order import version_key
from rag.releases.series import heading_release, mentioned_releases, series_of
from rag.releases.series_pages import release_entries, series_metadata
from tests.rag.retrieval_helpers import add_document

RELEASES = (("4.1", "12 March 2024"), ("4.0", "2 November 2023"), ("3.2", "21 June 2023"))
DAYS = {"4.1": "2024-03-12", "4.0": "2023-11-02", "3.2": "2023-06-21"}
EXPORTED = datetime(2025, 1, 20, 8, 0, tzinfo=UTC)


def _markdown(releases=RELEASES) -> bytes:
    parts = ["# Release notes\n"]
    for version, day in releases:
        parts.append(f"## Lumen {version}\n\nRelease date: {day}\n\n* Faster routing. The `legacy` option is "
                     f"deprecated, will be removed in 5.0.\n")
    return "\n".join(parts).encode()


def _rst(releases=RELEASES) -> bytes:
    parts = ["Release notes\n=============\n"]
    for version, day in releases:
        heading = f"Lumen {version}"
        parts.append(f"{heading}\n{'-' * len(heading)}\n\nReleased on {day}.\n\n- Deprecated since {version}, "
                     f"removed in 6.0: the ``legacy`` option.\n")
    return "\n".join(parts).encode()


def _docx(releases=RELEASES) -> bytes:
    document = WordDocument()
    document.add_heading("Release notes", 1)
    for version, day in releases:
        document.add_heading(f"Lumen {version}", 2)
        document.add_paragraph(f"Release date: {day}")
        document.add_paragraph("Faster routing; the legacy option is planned for removal in 5.0.")
    buffer = io.BytesIO()
    document.save(buffer)
    return buffer.getvalue()


def _pdf(releases=RELEASES) -> bytes:
    """A release-notes chapter of a PDF export: one release a page, its heading larger than its text."""
    pdf = FPDF()
    pdf.set_creation_date(EXPORTED)
    pdf.add_page()
    pdf.set_font("Helvetica", size=20)
    pdf.cell(0, 12, "Release notes", new_x="LMARGIN", new_y="NEXT")
    for version, day in releases:
        pdf.set_font("Helvetica", size=15)
        pdf.cell(0, 10, f"Lumen {version}", new_x="LMARGIN", new_y="NEXT")
        pdf.set_font("Helvetica", size=11)
        pdf.multi_cell(0, 6, f"Release date: {day}\n\nFaster routing for every gateway.", new_x="LMARGIN",
                       new_y="NEXT")
        pdf.add_page()
    return bytes(pdf.output())


EXPORTS = {"notes.md": _markdown, "notes.rst": _rst, "notes.docx": _docx, "notes.pdf": _pdf}


def _entries(name: str, data: bytes) -> list[tuple[str, str, str]]:
    return [(e["series"], e["version"], e["date"]) for e in release_entries(parse_document(Path(name), data))]


@pytest.mark.parametrize("name", sorted(EXPORTS))
def test_each_release_is_dated_by_its_own_notes_in_every_format(name):
    assert _entries(name, EXPORTS[name]()) == [("Lumen", version, DAYS[version]) for version, _day in RELEASES]


@pytest.mark.parametrize(("name", "text", "entries"), [
    ("changes.md", "# Changelog\n\n## Lumen 4.1 (released 2024-03-12)\n\nx\n\n## Lumen 4.0 (released 2 November "
     "2023)\n\nx\n", [("Lumen", "4.1", "2024-03-12"), ("Lumen", "4.0", "2023-11-02")]),
    ("changes.rst", "Changelog\n=========\n\nlumen 4.1 (2024-03-12)\n----------------------\n\n- x\n",
     [("lumen", "4.1", "2024-03-12")]),
    ("history.md", "# Release history\n\n| Version | Release date |\n|---|---|\n| 4.1 | 2024-03-12 |\n"
     "| 4.0 | 2023-11-02 |\n| 5.0 | planned |\n", [("", "4.1", "2024-03-12"), ("", "4.0", "2023-11-02")]),
    ("notes.rst", "Lumen 4.1 release notes\n=======================\n\n:Release date: 12 March 2024\n\nText.\n",
     [("Lumen", "4.1", "2024-03-12")]),
    # The future is not a release: an unreleased heading, a roadmap, a release date to be decided.
    ("changes.md", "# Changelog\n\n## Lumen 5.0 (unreleased)\n\nx\n\n## [Unreleased]\n\nx\n\n## Lumen 4.2\n\n"
     "Release date: TBD\n\n## Lumen 4.1\n\nRelease date: 12 March 2024\n", [("Lumen", "4.1", "2024-03-12")]),
    ("roadmap.md", "# Lumen 5.0 roadmap and release notes draft\n\nPlanned for spring.\n", []),
    # A title that is only its release, dated in so many words under it; a bare title with no such date is no notes.
    ("3.4.2.rst", "NetworkX 3.4.2\n==============\n\nRelease date: 21 October 2024\n\nBug fixes.\n",
     [("NetworkX", "3.4.2", "2024-10-21")]),
    ("guide.md", "# Lumen 3.2\n\nA guide to routing, written 2024-03-12.\n", []),
    # A page of a line's releases under a title with no release-notes word, none of them dated: its headings name
    # releases of one series newest first (a backport out of order and a subsection's name aside).
    ("version8.md", "# 8.x Series\n\n## Lumen 8.29\n\nx\n\n## Lumen 8.28\n\nx\n\n## Lumen 8.12.3\n\nx\n\n"
     "## Lumen 8.27\n\nx\n\n### Router 2.0\n\nx\n\n## Lumen 8.26\n\nx\n\n## Lumen 8.25\n\nx\n",
     [("Lumen", "8.29", ""), ("Lumen", "8.28", ""), ("Lumen", "8.12.3", ""), ("Lumen", "8.27", ""),
      ("Lumen", "8.26", ""), ("Lumen", "8.25", "")]),
    # Lists of issues per release are no release's notes, nor a page whose versions count up (section numbers).
    ("stats.md", "# GitHub stats for 7.x\n\n## Issues closed in 7.17\n\nx\n\n## Issues closed in 7.16\n\nx\n\n"
     "## Issues closed in 7.15\n\nx\n", []),
    ("guide.md", "# Guide\n\n## Lumen 1.1\n\nx\n\n## Lumen 1.2\n\nx\n\n## Lumen 1.3\n\nx\n", []),
    # Pages joined into one file (a PDF chapter) keep each page's title as a heading: a release's notes title.
    ("whatsnew.md", "# Lumen documentation: whatsnew\n\n## What's New in Lumen 4.3?\n\nx\n\n### Overview\n\nx\n\n"
     "### Contributors to the v4.3 release\n\nx\n\n## Major Release History\n\nx\n", [("Lumen", "4.3", "")]),
    # A history whose title (or the chapter heading above it) names another package: its bare release headings
    # are that package's releases, not the project's; a title that only describes the changelog names none.
    ("history.rst", "lumen.io.fits History\n=====================\n\nThe history of PyFITS.\n\n3.4.0 (2016-01-29)\n"
     "------------------\n\n- x\n\n3.0.1 (2011-09-12)\n------------------\n\n- x\n",
     [("lumen.io.fits", "3.4.0", "2016-01-29"), ("lumen.io.fits", "3.0.1", "2011-09-12")]),
    ("chapter.md", "# Lumen documentation: io\n\n## PyFITS Changelog\n\n### 3.0.1 (2011-09-12)\n\nx\n\n"
     "### 3.0.0 (2011-08-23)\n\nx\n", [("PyFITS", "3.0.1", "2011-09-12"), ("PyFITS", "3.0.0", "2011-08-23")]),
    ("changes.md", "# Full changelog\n\n## 4.1 (2024-03-12)\n\nx\n", [("", "4.1", "2024-03-12")]),
])
def test_release_notes_forms(name, text, entries):
    assert _entries(name, text.encode()) == entries


@pytest.mark.parametrize(("text", "versions"), [
    ("Deprecated since version 3.2: will be removed in 5.0.", ["3.2"]),
    ("Deprecated since 3.2, removed in 6.0.", ["3.2"]),
    ("The option is deprecated and scheduled for removal in 5.0.", []),
    ("Changed in version 4.1 (unreleased): the default.", []),
    ("New in version 4.0. Removed in version 4.1.", ["4.0", "4.1"]),
    ("Admin API v2 (shipped with Lumen Gateway 3.0) keeps v1 until it is removed in 3.2.", ["3.0"]),
])
def test_a_promised_version_is_no_mention(text, versions):
    assert mentioned_releases(text) == versions


def test_headings_that_name_no_release():
    assert heading_release("Upgrading to 4.0") is None and heading_release("Python 3.8 support") is None
    assert heading_release("4.0.dev0") is None and series_of("Lumen 5.0 release notes (unreleased)") is None
    assert heading_release("Lumen 4.1 release notes") == ("4.1", "release notes")


# --- exports placed by their own notes (the five failures of issue 50's pile, each built small) -----------------


def _export(workspace, folder: str, name: str, data: bytes, *, when: datetime, source: str, pages: int = 4,
            page_text: str = "Routing sends each request to a gateway.", names: dict | None = None) -> list[Document]:
    """One export: its release-notes file (parsed by the real parser) and a few pages that name no release."""
    parsed = parse_document(Path(name), data)
    suffix = Path(name).suffix
    notes = add_document(workspace, f"{folder}/notes{suffix}", [section.text for section in parsed.sections],
                         title=parsed.title, doc_date=when, date_source=source, format=parsed.format,
                         metadata=series_metadata(parsed))
    calendar_update(document_id=notes.pk)
    return [notes, *(add_document(workspace, f"{folder}/page{index}{suffix}", [f"{page_text} ({index})"],
                                  title=f"Page {index}", doc_date=when, date_source=source, format=parsed.format,
                                  metadata={"names": {"Lumen": 3} if names is None else names})
                    for index in range(pages))]


def _placed(documents: list[Document]) -> set[str]:
    return set(Document.objects.filter(pk__in=[d.pk for d in documents]).values_list("inferred_label", flat=True))


@pytest.mark.django_db
def test_the_calendar_takes_each_release_date_from_the_notes_not_the_word_export(workspace):
    _export(workspace, "/pile", "notes.docx", _docx(), when=EXPORTED, source="office_modified")
    assert [(str(v), d.date().isoformat()) for v, d in release_calendar(workspace_id=workspace.pk)] == [
        ("3.2", "2023-06-21"), ("4.0", "2023-11-02"), ("4.1", "2024-03-12")]


@pytest.mark.django_db
def test_a_deprecation_note_never_places_an_export_at_a_future_version(workspace):
    rst = _export(workspace, "/pile", "notes.rst", _rst(), when=datetime(2024, 3, 1, tzinfo=UTC), source="mtime",
                  page_text="Deprecated since version 4.0: will be removed in 5.0. Routing.")
    workspace_releases_infer(workspace_id=workspace.pk)
    assert _placed(rst) == {"4.1"}
    assert {str(v) for v, _d in release_calendar(workspace_id=workspace.pk)} == {"3.2", "4.0", "4.1"}


@pytest.mark.django_db
def test_word_and_pdf_exports_speak_for_the_newest_release_of_their_notes(workspace):
    word = _export(workspace, "/pile", "notes.docx", _docx(RELEASES[1:]), when=EXPORTED, source="office_modified")
    pdf = _export(workspace, "/pile", "notes.pdf", _pdf(), when=EXPORTED, source="pdf_creationdate")
    workspace_releases_infer(workspace_id=workspace.pk)
    assert _placed(word) == {"4.0"}  # not the older entries of its own notes
    assert _placed(pdf) == {"4.1"}  # nor one release too new from its export date


@pytest.mark.django_db
def test_an_undated_copy_made_today_speaks_for_where_its_notes_end(workspace):
    today = datetime.now(tz=UTC)
    rst = _export(workspace, "/pile", "notes.rst", _rst(), when=datetime(2024, 3, 1, tzinfo=UTC), source="mtime")
    copy = _export(workspace, "/pile", "notes.md", _markdown(RELEASES[2:]), when=today, source="mtime")
    workspace_releases_infer(workspace_id=workspace.pk)
    assert _placed(copy) == {"3.2"} and _placed(rst) == {"4.1"}
    # Its file time dates none of the releases its notes state.
    assert dict((str(v), d.date().isoformat()) for v, d in release_calendar(workspace_id=workspace.pk)) == DAYS


# --- a family ordered by its members' releases, a file's date only within one release ---------------------------


def test_an_inferred_release_outranks_file_dates_in_a_family_order():
    def member(pk: int, when: datetime, key: str = "") -> Member:
        return Member(id=pk, title="Routing", path=f"/pile/{pk}/routing.md", version_label="", version_key=key,
                      version_source="", doc_date=when, date_source="mtime", date_confidence=1, indexed_at=None,
                      chunk_count=1, family_id=None, family_position=None)

    today = datetime.now(tz=UTC)
    members = {1: member(1, today), 2: member(2, datetime(2024, 3, 1, tzinfo=UTC)),
               3: member(3, datetime(2023, 1, 1, tzinfo=UTC), key=version_key("4.0")),
               4: member(4, datetime(2022, 1, 1, tzinfo=UTC)), 5: member(5, datetime(2020, 1, 1, tzinfo=UTC))}
    inferred = {1: version_key("3.2"), 2: version_key("4.1"), 4: version_key("3.2")}
    # The copy made today (1) is 3.2's, older than the explicit 4.0 (3) and the 4.1 export (2); its date only puts
    # it after the other 3.2 page (4); a member with no release (5) is placed by its date.
    assert version_order(members, {}, {}, inferred) == [5, 4, 1, 3, 2]
    assert version_order(members, {}, {}, {1: version_key("4.0") + "~"})[-1] == 1  # "newer than 4.0": above it


@pytest.mark.django_db
def test_a_copy_made_today_is_not_current_over_the_newer_release(workspace):
    today = datetime.now(tz=UTC)
    rst = _export(workspace, "/pile", "notes.rst", _rst(), when=datetime(2024, 3, 1, tzinfo=UTC), source="mtime")
    copy = _export(workspace, "/pile", "notes.md", _markdown(RELEASES[2:]), when=today, source="mtime",
                   page_text="Routing sends each request to one gateway.")  # a version of the page, not a copy
    workspace_releases_infer(workspace_id=workspace.pk)
    assert _placed(copy) == {"3.2"} and _placed(rst) == {"4.1"}
    group = DocumentFamily.objects.create(workspace=workspace, name="Page 0")
    Document.objects.filter(pk__in=[rst[1].pk, copy[1].pk]).update(family=group)
    family_refresh(family_id=group.pk)
    order = list(Document.objects.filter(family=group).order_by("family_position").values_list("pk", flat=True))
    assert order == [copy[1].pk, rst[1].pk]  # 3.2's copy first, whatever its file time says


@pytest.mark.django_db
def test_a_series_whose_notes_write_its_name_in_lowercase(workspace):
    """'pytest 8.3.3' and 'Pytest 8.2.0' are one series; its pages never write a capitalised name to count."""
    notes = ("# Changelog\n\n## pytest 8.3.3 (2024-09-09)\n\n- x\n\n## Pytest 8.2.0 (2024-04-27)\n\n- x\n\n"
             "## 8.1.0 (2024-03-03)\n\n- x\n")
    pile = _export(workspace, "/pile", "changelog.md", notes.encode(), when=EXPORTED, source="mtime", names={},
                   page_text="Use pytest fixtures to share setup.")
    workspace_releases_infer(workspace_id=workspace.pk)
    assert _placed(pile) == {"8.3.3"}


def test_a_bundled_history_never_dates_the_projects_release_of_the_same_number():
    """The 3.0 docs bundle the history of a package the project absorbed, whose 3.0.1 came out years before the
    project's 3.0.1: the project's release keeps the date its own notes state."""
    pages = {"notes.md": "# Lumen 3.0.1 release notes\n\nRelease date: 13 March 2018\n\nFixes.\n",
             "history.md": "# lumen.io.fits History\n\nThe release history of PyFITS.\n\n## 3.0.2 (2011-09-23)\n\nx\n\n"
                           "## 3.0.1 (2011-09-12)\n\nx\n\n## 3.0.0 (2011-08-23)\n\nx\n"}
    found = [(entry["series"], entry["version"], date.fromisoformat(entry["date"]), entry["how"])
             for name, text in pages.items() for entry in release_entries(parse_document(Path(name), text.encode()))]
    assert page_dates(found)[("lumen", "3.0.1")] == (False, date(2018, 3, 13))


def test_an_unnamed_release_takes_the_date_its_named_notes_state():
    """An old copy of 'Version 1.6 notes' names no series and states no date (its file's stands in); a newer copy
    names NetworkX and states the day: one release, dated by the notes. With two series naming 1.6, neither."""
    exported, stated = date(2019, 12, 18), date(2011, 11, 20)
    assert page_dates([("", "1.6", exported, FILE_DATE), ("NetworkX", "1.6", stated, "title")]) == {
        ("networkx", "1.6"): (False, stated)}
    both = page_dates([("", "1.6", exported, FILE_DATE), ("NetworkX", "1.6", stated, "title"),
                       ("Lumen", "1.6", stated, "heading")])
    assert both[("", "1.6")] == (True, exported)


@pytest.mark.django_db
def test_a_bundled_components_history_leaves_the_export_to_its_project(workspace):
    """The 6.1 docs ship the history of a package they absorbed (its headings name no series) and a component's
    changelog of its own name: the pages that name no series are of the project most of the export names, and
    the absorbed package's older releases do not outrank the project's own notes."""
    notes = "# What's New in Lumen 6.1?\n\nFaster routing.\n"
    pile = _export(workspace, "/pile", "whatsnew.md", notes.encode(), when=EXPORTED, source="mtime", names={},
                   page_text="Use the router to share setup.")
    history = "# Router History\n\n" + "".join(f"## {version} ({day})\n\nx\n\n" for version, day in (
        ("3.4.0", "2016-01-29"), ("3.3.0", "2014-07-17"), ("3.2.4", "2014-06-02")))
    component = "# Changelog\n\n" + "".join(f"## widgetlib Version {v}\n\nx\n\n" for v in ("1.11", "1.10", "1.9"))
    for name, text in (("history.md", history), ("widgets.md", component)):
        parsed = parse_document(Path(name), text.encode())
        pile.append(add_document(workspace, f"/pile/{name}", [section.text for section in parsed.sections],
                                 title=parsed.title, doc_date=EXPORTED, date_source="mtime", format=parsed.format,
                                 metadata=series_metadata(parsed)))
    more = [add_document(workspace, f"/pile/more{index}.md", ["Routing with Lumen."], title=f"More {index}",
                         doc_date=EXPORTED, date_source="mtime", format="markdown", metadata={"names": {"Lumen": 2}})
            for index in range(3)]
    workspace_releases_infer(workspace_id=workspace.pk)
    assert _placed(pile + more) == {"6.1"}  # the component's changelog too: it shipped with the 6.1 docs
