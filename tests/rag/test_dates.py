"""Document dates: every source, the order between them, and what happens when one is garbage."""

from __future__ import annotations

import json
from datetime import UTC, date, datetime, timedelta, timezone
from pathlib import Path

import pytest
from fpdf import FPDF

from rag.dates import parse_loose_date
from rag.ingest.dates import DocDate, parse_pdf_date, resolve_doc_date
from rag.parsers import ParsedDocument, Section, parse_document

FIXTURES = Path(__file__).parent / "fixtures"
DEMO = Path(__file__).parents[2] / "demo"
MTIME = datetime(2024, 6, 1, 12, 0, tzinfo=UTC).timestamp()
MTIME_DATE = DocDate(datetime(2024, 6, 1, 12, 0, tzinfo=UTC), "mtime")


def doc(
    doc_format: str,
    *,
    metadata: dict | None = None,
    metadata_lines: dict[str, int] | None = None,
    pdf_dates: dict[str, str] | None = None,
) -> ParsedDocument:
    return ParsedDocument(
        title="t",
        format=doc_format,
        sections=[Section(("t",), 0, "text")],
        metadata=metadata or {},
        metadata_lines=metadata_lines or {},
        pdf_dates=pdf_dates or {},
    )


def parse_fixture(name: str) -> ParsedDocument:
    path = FIXTURES / name
    return parse_document(path, path.read_bytes())


# --- PDF date strings -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("D:20250314093000+02'00'", datetime(2025, 3, 14, 7, 30, tzinfo=UTC)),
        ("D:20250314093000-05'00", datetime(2025, 3, 14, 14, 30, tzinfo=UTC)),
        ("D:20250314093000-05'00'", datetime(2025, 3, 14, 14, 30, tzinfo=UTC)),
        ("D:20250314093000+0530", datetime(2025, 3, 14, 4, 0, tzinfo=UTC)),
        ("D:20250314093000Z", datetime(2025, 3, 14, 9, 30, tzinfo=UTC)),
        ("D:20250314093000Z00'00'", datetime(2025, 3, 14, 9, 30, tzinfo=UTC)),
        ("D:20250314093000", datetime(2025, 3, 14, 9, 30, tzinfo=UTC)),  # no offset: UTC
        ("D:20250314", datetime(2025, 3, 14, tzinfo=UTC)),
        ("D:202503", datetime(2025, 3, 1, tzinfo=UTC)),
        ("D:2025", datetime(2025, 1, 1, tzinfo=UTC)),
        ("20250314093000+01'00'", datetime(2025, 3, 14, 8, 30, tzinfo=UTC)),  # some writers omit D:
        ("  D:20250314093000Z  ", datetime(2025, 3, 14, 9, 30, tzinfo=UTC)),
    ],
)
def test_parse_pdf_date(raw: str, expected: datetime) -> None:
    parsed = parse_pdf_date(raw)
    assert parsed == expected
    assert parsed is not None and parsed.utcoffset() == timedelta(0)


@pytest.mark.parametrize(
    "raw",
    ["", "yesterday", "D:", "D:20251345", "D:20250230", "D:2025031409300099", "D:20250314093000+25'00'", "D:2025-03-14"],
)
def test_parse_pdf_date_garbage_is_none(raw: str) -> None:
    assert parse_pdf_date(raw) is None


# --- human-written dates --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("2025-03-14", datetime(2025, 3, 14, tzinfo=UTC)),
        ("March 14, 2025", datetime(2025, 3, 14, tzinfo=UTC)),
        ("Mar 14, 2025", datetime(2025, 3, 14, tzinfo=UTC)),
        ("14 Mar 2025", datetime(2025, 3, 14, tzinfo=UTC)),
        ("14 March 2025", datetime(2025, 3, 14, tzinfo=UTC)),
        ("March 14th, 2025", datetime(2025, 3, 14, tzinfo=UTC)),
        ("2025/03/14", datetime(2025, 3, 14, tzinfo=UTC)),
        ("14.03.2025", datetime(2025, 3, 14, tzinfo=UTC)),
        ("2025-03-14T10:00:00+02:00", datetime(2025, 3, 14, 8, 0, tzinfo=UTC)),
        ("2025-03-14T10:00:00Z", datetime(2025, 3, 14, 10, 0, tzinfo=UTC)),
        ("2025-03-14 10:00", datetime(2025, 3, 14, 10, 0, tzinfo=UTC)),
        ("Fri, 14 Mar 2025 09:30:00 +0200", datetime(2025, 3, 14, 7, 30, tzinfo=UTC)),
        (date(2025, 3, 14), datetime(2025, 3, 14, tzinfo=UTC)),
        (datetime(2025, 3, 14, 10, 0), datetime(2025, 3, 14, 10, 0, tzinfo=UTC)),
        (datetime(2025, 3, 14, 10, 0, tzinfo=timezone(timedelta(hours=-4))), datetime(2025, 3, 14, 14, 0, tzinfo=UTC)),
    ],
)
def test_parse_loose_date(value: object, expected: datetime) -> None:
    assert parse_loose_date(value) == expected


@pytest.mark.parametrize("value", [None, "", "sometime next spring", "2025-13-45", "03/14/2025", 2025, ["2025-03-14"]])
def test_parse_loose_date_rejects_what_it_cannot_be_sure_of(value: object) -> None:
    assert parse_loose_date(value) is None


# --- precedence -----------------------------------------------------------------------------


def test_pdf_moddate_beats_creationdate_and_mtime() -> None:
    parsed = doc("pdf", pdf_dates={"ModDate": "D:20250314093000Z", "CreationDate": "D:20250101000000Z"})
    assert resolve_doc_date(parsed, MTIME) == DocDate(datetime(2025, 3, 14, 9, 30, tzinfo=UTC), "pdf_moddate")


def test_garbage_pdf_moddate_falls_back_to_creationdate() -> None:
    parsed = doc("pdf", pdf_dates={"ModDate": "D:garbage", "CreationDate": "D:20250101000000+01'00'"})
    assert resolve_doc_date(parsed, MTIME) == DocDate(datetime(2024, 12, 31, 23, 0, tzinfo=UTC), "pdf_creationdate")


def test_pdf_without_usable_dates_falls_back_to_mtime() -> None:
    parsed = doc("pdf", pdf_dates={"ModDate": "D:garbage"})
    assert resolve_doc_date(parsed, MTIME) == MTIME_DATE


def test_frontmatter_date_beats_mtime() -> None:
    parsed = doc("markdown", metadata={"date": "2025-03-14"})
    assert resolve_doc_date(parsed, MTIME) == DocDate(datetime(2025, 3, 14, tzinfo=UTC), "frontmatter")


@pytest.mark.parametrize("doc_format", ["text", "pdf", "asciidoc", "rst"])
def test_a_bare_date_key_counts_only_where_the_format_defines_it(doc_format: str) -> None:
    # Without a recorded line, AsciiDoc and reST cannot tell a header date from a stray key.
    assert resolve_doc_date(doc(doc_format, metadata={"date": "2025-03-14"}), MTIME) == MTIME_DATE


def test_asciidoc_revdate_beats_date() -> None:
    parsed = doc(
        "asciidoc", metadata={"revdate": "2025-03-14", "date": "2025-01-01"}, metadata_lines={"revdate": 5, "date": 4}
    )
    assert resolve_doc_date(parsed, MTIME).source == "asciidoc_revdate"


def test_asciidoc_unparsable_revdate_falls_back_to_date() -> None:
    parsed = doc(
        "asciidoc", metadata={"revdate": "draft", "date": "14 Mar 2025"}, metadata_lines={"revdate": 3, "date": 4}
    )
    assert resolve_doc_date(parsed, MTIME) == DocDate(datetime(2025, 3, 14, tzinfo=UTC), "asciidoc_date")


def test_asciidoc_attribute_on_line_50_counts_but_not_on_51() -> None:
    on_50 = doc("asciidoc", metadata={"revdate": "2025-03-14"}, metadata_lines={"revdate": 50})
    on_51 = doc("asciidoc", metadata={"revdate": "2025-03-14"}, metadata_lines={"revdate": 51})
    assert resolve_doc_date(on_50, MTIME).source == "asciidoc_revdate"
    assert resolve_doc_date(on_51, MTIME) == MTIME_DATE


def test_rst_docinfo_date() -> None:
    parsed = doc("rst", metadata={"date": "2025-02-27"}, metadata_lines={"date": 5})
    assert resolve_doc_date(parsed, MTIME) == DocDate(datetime(2025, 2, 27, tzinfo=UTC), "rst_date")


def test_rst_docinfo_date_on_line_50_counts_but_not_on_51() -> None:
    on_50 = doc("rst", metadata={"date": "2025-02-27"}, metadata_lines={"date": 50})
    on_51 = doc("rst", metadata={"date": "2025-02-27"}, metadata_lines={"date": 51})
    assert resolve_doc_date(on_50, MTIME).source == "rst_date"
    assert resolve_doc_date(on_51, MTIME) == MTIME_DATE


@pytest.mark.parametrize("name", ["date", "dcterms.date", "DC.date", "dc.Date", "article:published_time"])
def test_html_meta_date_names(name: str) -> None:
    parsed = doc("html", metadata={name: "2025-03-14T10:00:00+02:00", "description": "x"})
    assert resolve_doc_date(parsed, MTIME) == DocDate(datetime(2025, 3, 14, 8, 0, tzinfo=UTC), "html_meta_date")


def test_html_modified_time_beats_published_time_and_date() -> None:
    metadata = {
        "article:published_time": "2025-01-10",
        "date": "2025-01-12",
        "article:modified_time": "2025-03-14",
    }
    assert resolve_doc_date(doc("html", metadata=metadata), MTIME) == DocDate(
        datetime(2025, 3, 14, tzinfo=UTC), "html_meta_date"
    )


def test_html_unparsable_modified_time_falls_back_to_the_next_meta_date() -> None:
    metadata = {"article:modified_time": "last Tuesday", "article:published_time": "2025-01-10"}
    assert resolve_doc_date(doc("html", metadata=metadata), MTIME) == DocDate(
        datetime(2025, 1, 10, tzinfo=UTC), "html_meta_date"
    )


def test_no_source_at_all_is_unknown() -> None:
    assert resolve_doc_date(doc("text"), None) == DocDate(None, "unknown")


def test_mtime_is_utc() -> None:
    value = resolve_doc_date(doc("text"), 1_741_944_600.0).value
    assert value == datetime(2025, 3, 14, 9, 30, tzinfo=UTC)
    assert value is not None and value.tzinfo == UTC


# --- through the parsers, on real files -----------------------------------------------------


def test_markdown_fixture_frontmatter_date() -> None:
    assert resolve_doc_date(parse_fixture("deployment-guide.md"), MTIME) == DocDate(
        datetime(2025, 3, 14, tzinfo=UTC), "frontmatter"
    )


def test_markdown_frontmatter_datetime_with_offset() -> None:
    parsed = parse_document(Path("x.md"), b"---\ndate: 2025-03-14 10:30:00+02:00\n---\nBody.\n")
    assert resolve_doc_date(parsed, None) == DocDate(datetime(2025, 3, 14, 8, 30, tzinfo=UTC), "frontmatter")


@pytest.mark.parametrize("name", ["bad-date.md", "impossible-date.md", "broken-frontmatter.md"])
def test_bad_frontmatter_date_falls_through_to_mtime(name: str) -> None:
    assert resolve_doc_date(parse_fixture(name), MTIME) == MTIME_DATE


def test_asciidoc_fixture_revdate() -> None:
    assert resolve_doc_date(parse_fixture("admin-guide.adoc"), MTIME) == DocDate(
        datetime(2025, 2, 20, tzinfo=UTC), "asciidoc_revdate"
    )


def test_asciidoc_date_attribute_alone() -> None:
    parsed = parse_document(Path("notes.adoc"), b"= Notes\n:date: March 3, 2025\n\nBody.\n")
    assert resolve_doc_date(parsed, MTIME) == DocDate(datetime(2025, 3, 3, tzinfo=UTC), "asciidoc_date")


def test_asciidoc_revdate_after_line_50_is_ignored() -> None:
    parsed = parse_fixture("late-revdate.adoc")
    assert parsed.metadata_lines["revdate"] > 50
    assert resolve_doc_date(parsed, MTIME) == MTIME_DATE


def test_plain_text_and_undated_html_use_mtime() -> None:
    assert resolve_doc_date(parse_fixture("release-notes.txt"), MTIME) == MTIME_DATE
    assert resolve_doc_date(parse_fixture("api-reference.html"), MTIME) == MTIME_DATE


def test_rst_fixture_docinfo_date() -> None:
    assert resolve_doc_date(parse_fixture("release-checklist.rst"), MTIME) == DocDate(
        datetime(2025, 4, 2, tzinfo=UTC), "rst_date"
    )


@pytest.mark.parametrize(
    "text",
    [
        b"Guide\n=====\n\n:Date: $Date$\n\nBody.\n",  # an unexpanded version-control keyword
        b"Guide\n=====\n\n:date: next sprint\n\nBody.\n",
        b"Guide\n=====\n\nBody first.\n\n:Date: 2025-02-27\n",  # a field list in the body, not docinfo
    ],
)
def test_rst_without_a_usable_docinfo_date_falls_through_to_mtime(text: bytes) -> None:
    assert resolve_doc_date(parse_document(Path("guide.rst"), text), MTIME) == MTIME_DATE


def test_rst_docinfo_date_after_line_50_is_ignored() -> None:
    text = "Guide\n=====\n\n" + "".join(f":Field{n}: value\n" for n in range(60)) + ":Date: 2025-02-27\n"
    parsed = parse_document(Path("guide.rst"), text.encode())
    assert parsed.metadata["date"] == "2025-02-27"
    assert resolve_doc_date(parsed, MTIME) == MTIME_DATE


def test_html_fixture_meta_date() -> None:
    assert resolve_doc_date(parse_fixture("changelog.html"), MTIME) == DocDate(
        datetime(2025, 5, 6, 14, 0, tzinfo=UTC), "html_meta_date"
    )


@pytest.mark.parametrize(
    "meta",
    [
        b'<meta name="date" content="sometime in spring">',
        b'<meta name="date" content="">',
        b'<meta property="article:modified_time" content="2025-13-45">',
        b'<meta name="last-reviewed" content="2025-03-14">',  # not a date name we trust
    ],
)
def test_html_without_a_usable_meta_date_falls_through_to_mtime(meta: bytes) -> None:
    page = b"<html><head>" + meta + b"<title>Page</title></head><body><p>Text.</p></body></html>"
    assert resolve_doc_date(parse_document(Path("page.html"), page), MTIME) == MTIME_DATE


def _manifest_dates() -> dict[str, str]:
    manifest = json.loads((DEMO / "manifest.json").read_text())
    return {entry["path"]: entry["date"] for entry in manifest["files"]}


@pytest.mark.parametrize(
    ("path", "source"),
    [
        ("user_guide_2.1.rst", "rst_date"),
        ("configuration-reference-v3.rst", "rst_date"),
        ("v2.0/architecture-overview.rst", "rst_date"),
        ("v2.0/user-guide.html", "html_meta_date"),
        ("operations/operations-guide-3.0.html", "html_meta_date"),
    ],
)
def test_demo_corpus_rst_and_html_dates_match_the_manifest(path: str, source: str) -> None:
    file = DEMO / "corpus" / path
    resolved = resolve_doc_date(parse_document(file, file.read_bytes()), MTIME)
    assert resolved.source == source
    assert resolved.value is not None and resolved.value.date().isoformat() == _manifest_dates()[path]


def _pdf(created: datetime) -> bytes:
    pdf = FPDF()
    pdf.set_creation_date(created)
    pdf.add_page()
    pdf.set_font("Helvetica", size=11)
    pdf.cell(text="Quarterly operations review.")
    return bytes(pdf.output())


def test_real_pdf_creation_date_with_offset() -> None:
    created = datetime(2025, 3, 14, 9, 30, tzinfo=timezone(timedelta(hours=2)))
    parsed = parse_document(Path("review.pdf"), _pdf(created))
    assert resolve_doc_date(parsed, MTIME) == DocDate(datetime(2025, 3, 14, 7, 30, tzinfo=UTC), "pdf_creationdate")
