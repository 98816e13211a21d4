"""Word, PowerPoint, Excel and OpenDocument files written by their own libraries, read back."""

from __future__ import annotations

import io
import struct
import tracemalloc
import zipfile
from datetime import UTC, datetime
from pathlib import Path

import docx
import msoffcrypto
import pptx
import pytest

from rag.chunking import chunk_document
from rag.ingest.dates import resolve_doc_date
from rag.parsers import ParseError, ParseLimits, parse_document, zip_entry_count
from rag.releases.labels import extract_version_label
from devkit.format_files import write_docx, write_odt, write_pptx, write_xlsx
from tests.rag.parser_support import many_entry_zip, paths, section


def _label(name: str, parsed):
    return extract_version_label(path=name, title=parsed.title, metadata=parsed.metadata, doc_format=parsed.format)


def test_docx_headings_lists_tables_and_properties() -> None:
    parsed = parse_document(Path("guide.docx"), write_docx())
    assert parsed.title == "Deployment Guide" and parsed.format == "docx"
    assert paths(parsed) == [("Deployment Guide", "Install"), ("Deployment Guide", "Install", "Limits"),
                             ("Deployment Guide", "Rollback")]  # the last by outline level alone
    install = section(parsed, "Install")
    assert "- Check the free disk space\n- Open port 8443 on the firewall" in install
    # Rows read with the header row, like the other readers' tables.
    assert section(parsed, "Limits") == ("Rate limit: 2.0: 600 per minute; 2.1: 1000 per minute.\n\n"
                                         "Token TTL: 2.0: 12h; 2.1: 24h.")
    assert parsed.metadata["revision"] == "17" and parsed.doc_type == "guide"
    date = resolve_doc_date(parsed, 0.0)
    assert (date.value, date.source) == (datetime(2025, 3, 14, 9, 30, tzinfo=UTC), "office_modified")


def test_docx_version_from_custom_property_or_title_never_the_revision() -> None:
    with_property = parse_document(Path("guide.docx"), write_docx(version="2.1", revision=40))
    label = _label("guide.docx", with_property)
    assert (label.label, label.source) == ("2.1", "office_property")
    titled = parse_document(Path("guide.docx"), write_docx(title="Deployment Guide 3.0", revision=40))
    assert (_label("guide.docx", titled).label, _label("guide.docx", titled).source) == ("3.0", "title")
    neither = parse_document(Path("guide.docx"), write_docx(revision=40))
    assert _label("guide.docx", neither) is None  # revision 40 is an edit counter, not release 40


def test_docx_without_title_property_uses_the_title_style() -> None:
    parsed = parse_document(Path("notes.docx"), write_docx(title=None, title_style=True))
    assert parsed.title == "Styled Title"
    assert paths(parsed)[0] == ("Styled Title", "Install")


def test_pptx_one_section_per_slide_in_reading_order_with_notes_and_tables() -> None:
    parsed = parse_document(Path("deck.pptx"), write_pptx())
    assert parsed.title == "Release 3.0 Overview" and parsed.page_count == 2
    assert paths(parsed) == [("Release 3.0 Overview", "What changes in 3.0"), ("Release 3.0 Overview", "New limits")]
    assert [s.page for s in parsed.sections] == [1, 2]
    opening = section(parsed, "What changes in 3.0")
    assert "The API base path moves to /api/v3" in opening
    assert "Speaker notes: Remind operators to update their clients." in opening
    limits = section(parsed, "New limits")
    assert limits.index("Left column") < limits.index("Right column")  # left to right, not insertion order
    assert "Rate limit: 3.0: 2000 per minute." in limits
    assert _label("deck.pptx", parsed).label == "3.0"
    assert resolve_doc_date(parsed, 0.0).source == "office_modified"


@pytest.mark.parametrize("continued", ["New limits (cont.)", "New limits (continued)", "New limits (2/2)", "New limits"])
def test_pptx_a_slide_carrying_on_the_one_before_is_one_section_one_chunk(continued: str) -> None:
    parsed = parse_document(Path("deck.pptx"), write_pptx(continued=continued))
    assert paths(parsed)[1:] == [("Release 3.0 Overview", "New limits")] * 2  # each slide keeps its page
    assert [s.page for s in parsed.sections] == [1, 2, 3]
    chunks = chunk_document(parsed)
    limits = [chunk for chunk in chunks if chunk.heading_path.endswith("New limits")]
    assert len(limits) == 1 and limits[0].page == 2  # the citation opens where the section starts
    assert limits[0].text.count("New limits") == 1 and limits[0].text.endswith("Burst: 200 requests.")


def test_pptx_a_new_title_is_a_new_section() -> None:
    parsed = parse_document(Path("deck.pptx"), write_pptx(continued="Old limits"))
    assert paths(parsed)[-1] == ("Release 3.0 Overview", "Old limits")
    assert len([c for c in chunk_document(parsed) if c.heading_path.endswith("limits")]) == 2


def test_xlsx_rows_read_with_the_header_row_one_section_per_sheet() -> None:
    parsed = parse_document(Path("limits.xlsx"), write_xlsx(sheets=("Limits", "Ports")))
    assert parsed.title == "Gateway limits"
    assert paths(parsed) == [("Gateway limits", "Limits"), ("Gateway limits", "Ports")]
    assert section(parsed, "Limits").startswith("Rate limit: Value: 1000; Since: 2025-02-01.")
    assert not parsed.notices


def test_xlsx_cells_past_the_bound_are_skipped_and_said() -> None:
    parsed = parse_document(Path("big.xlsx"), write_xlsx(rows=5_000), limits=ParseLimits(max_cells_per_sheet=300))
    rows = section(parsed, "Limits").split("\n\n")
    assert 100 <= len(rows) < 150 and rows[-1].startswith("Key ")  # rows of 2-3 cells, up to 300 cells
    assert len(parsed.notices) == 1 and f"({len(rows) + 1} rows with text)" in parsed.notices[0]
    assert "sheet 'Limits': read the first 300" in parsed.notices[0] and "skipped" in parsed.notices[0]


def test_odt_headings_lists_tables_and_meta() -> None:
    parsed = parse_document(Path("handbook.odt"), write_odt())
    assert parsed.title == "Operations Handbook"
    assert paths(parsed) == [("Operations Handbook", "Backups"), ("Operations Handbook", "Backups", "Retention")]
    assert "- Check the backup log\n- Test a restore monthly" in section(parsed, "Backups")
    assert section(parsed, "Retention") == "Snapshots: Kept: 30 days."
    date = resolve_doc_date(parsed, 0.0)
    assert (date.value, date.source) == (datetime(2025, 4, 1, 10, 0, tzinfo=UTC), "odf_modified")
    assert (_label("handbook.odt", parsed).label, _label("handbook.odt", parsed).source) == ("4.2", "office_property")
    unversioned = parse_document(Path("handbook.odt"), write_odt(version=None))
    assert _label("handbook.odt", unversioned) is None  # 31 editing cycles are not version 31


# --- bad input -----------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["report.docx", "deck.pptx", "sheet.xlsx", "text.odt"])
def test_a_damaged_office_file_fails_with_a_reason(name: str) -> None:
    good = {"docx": write_docx, "pptx": write_pptx, "xlsx": write_xlsx, "odt": write_odt}[name.rsplit(".", 1)[1]]()
    with pytest.raises(ParseError, match=r"^not a readable \.\w+: "):
        parse_document(Path(name), good[: len(good) // 2])  # cut short, as by a failed download
    with pytest.raises(ParseError, match=r"^not a readable"):
        parse_document(Path(name), b"PK\x03\x04" + b"\x00" * 200)


def test_a_password_protected_docx_says_so() -> None:
    encrypted = io.BytesIO()
    msoffcrypto.OfficeFile(io.BytesIO(write_docx())).encrypt("secret", encrypted)
    with pytest.raises(ParseError, match=r"^password-protected \.docx"):
        parse_document(Path("locked.docx"), encrypted.getvalue())


def test_a_zip_bomb_inside_a_docx_is_refused_before_it_is_unpacked() -> None:
    bomb = io.BytesIO()
    source = zipfile.ZipFile(io.BytesIO(write_docx()))
    with zipfile.ZipFile(bomb, "w", zipfile.ZIP_DEFLATED) as out:
        for member in source.infolist():
            out.writestr(member, source.read(member.filename), zipfile.ZIP_DEFLATED)
        with out.open("word/media/padding.bin", "w") as padding:  # 1 GB of zeros: ~1 MB packed
            block = b"\x00" * (1024 * 1024)
            for _ in range(1024):
                padding.write(block)
    assert len(bomb.getvalue()) < 5 * 1024 * 1024
    with pytest.raises(ParseError, match=r"^refused \.docx: word/media/padding.bin would unpack to 1024 MB .*zip bomb"):
        parse_document(Path("bomb.docx"), bomb.getvalue())


def test_a_docx_of_200000_entries_is_refused_from_its_end_record_before_its_directory_is_read() -> None:
    """Issue 37: zipfile builds an object per directory entry (3-4 s and ~100 MB for these) before any check."""
    data = many_entry_zip(200_000, suffix=".xml")
    tracemalloc.start()
    try:
        with pytest.raises(ParseError, match=r"^refused \.docx: 200000 parts, over the 20000"):
            parse_document(Path("many.docx"), data)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 8 * 1024 * 1024, f"{peak / 1024 / 1024:.0f} MB"


def test_zip_entry_count_reads_the_end_record_and_is_not_fooled_by_it() -> None:
    archive = io.BytesIO()
    with zipfile.ZipFile(archive, "w", zipfile.ZIP_DEFLATED) as out:
        out.writestr("a.txt", "x" * 1000)
        out.writestr("folder/", "")
        out.writestr("folder/b.md", "# B")
        out.comment = b"a comment " * 500
    assert zip_entry_count(io.BytesIO(archive.getvalue())) == 3
    assert zip_entry_count(io.BytesIO(many_entry_zip(70_000))) == 70_000  # zip64: past the end record's 65,535
    understated = bytearray(many_entry_zip(1_000))
    struct.pack_into("<HH", understated, len(understated) - 12, 1, 1)  # the end record claims one entry
    assert zip_entry_count(io.BytesIO(bytes(understated))) == 1_000
    with pytest.raises(zipfile.BadZipFile):
        zip_entry_count(io.BytesIO(b"not a zip at all" * 100))


def test_an_office_file_over_the_unpacked_limit_is_refused() -> None:
    with pytest.raises(ParseError, match=r"^refused \.pptx: it would unpack to \d+ MB, over the 0 MB limit"):
        parse_document(Path("deck.pptx"), write_pptx(), limits=ParseLimits(max_unpacked_bytes=1000))


@pytest.mark.parametrize("suffix", ["docx", "pptx"])
def test_a_library_templates_2013_core_dates_lose_to_the_files_own_modification_time(suffix: str) -> None:
    made = docx.Document() if suffix == "docx" else pptx.Presentation()
    if suffix == "docx":
        made.add_paragraph("The badge office is in room B-214.")
    else:
        slide = made.slides.add_slide(made.slide_layouts[1])
        slide.shapes.title.text = "Badges"
        slide.placeholders[1].text_frame.text = "The badge office is in room B-214."
    buffer = io.BytesIO()
    made.save(buffer)
    parsed = parse_document(Path(f"badges.{suffix}"), buffer.getvalue())
    assert parsed.office_dates["modified"].year == 2013  # the template's, never updated

    saved = datetime(2026, 3, 2, 10, 0, tzinfo=UTC).timestamp()
    date = resolve_doc_date(parsed, saved, mtime_source="mtime")
    assert (date.value.year, date.source) == (2026, "mtime")

    # A date someone set (modified moved away from the template's created) is still the document's.
    deliberate = parse_document(Path(f"dated.{suffix}"), write_docx() if suffix == "docx" else write_pptx())
    assert resolve_doc_date(deliberate, saved).source == "office_modified"
    made.core_properties.created = made.core_properties.modified = datetime(2024, 5, 6, 9, 30, tzinfo=UTC)
    buffer = io.BytesIO()
    made.save(buffer)
    both_set = parse_document(Path(f"set.{suffix}"), buffer.getvalue())
    assert resolve_doc_date(both_set, saved).value == datetime(2024, 5, 6, 9, 30, tzinfo=UTC)
