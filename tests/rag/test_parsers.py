"""Parsers on real files of every format, and every kind of bad input we promise to name."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import pytest
from fpdf import FPDF
from PIL import Image

from rag.ingest.dates import DocDate, resolve_doc_date
from rag.ingest.parsers import ParsedDocument, ParseError, UnsupportedFormat, detect_format, parse_document

FIXTURES = Path(__file__).parent / "fixtures"
DEMO_CORPUS = Path(__file__).parents[2] / "demo" / "corpus"

LOREM = (
    "Docent keeps every version of a document and prefers the newest one when it answers. "
    "Operators schedule ingestion at night so that the morning questions see fresh text. "
)


def parse_fixture(name: str) -> ParsedDocument:
    path = FIXTURES / name
    return parse_document(path, path.read_bytes())


def paths(parsed: ParsedDocument) -> list[tuple[str, ...]]:
    return [section.heading_path for section in parsed.sections]


def section(parsed: ParsedDocument, heading: str) -> str:
    return next(s.text for s in parsed.sections if s.heading_path[-1] == heading)


# --- PDFs, generated once per session ---------------------------------------------------------


def with_info(data: bytes, entries: dict[str, str]) -> bytes:
    """Append an incremental update with a new /Info dictionary, the way PDF editors set
    ModDate (fpdf2 writes only CreationDate)."""
    trailer = data[data.rindex(b"trailer") :]
    root = re.search(rb"/Root (\d+ \d+ R)", trailer).group(1)  # type: ignore[union-attr]
    size = int(re.search(rb"/Size (\d+)", trailer).group(1))  # type: ignore[union-attr]
    tail = data[data.rindex(b"startxref") :]
    previous_xref = int(re.search(rb"startxref\s+(\d+)", tail).group(1))  # type: ignore[union-attr]
    body = b" ".join(b"/%s (%s)" % (key.encode(), value.encode()) for key, value in entries.items())
    out = bytearray(data if data.endswith(b"\n") else data + b"\n")
    info_offset = len(out)
    out += b"%d 0 obj\n<< %s >>\nendobj\n" % (size, body)
    xref_offset = len(out)
    out += b"xref\n%d 1\n%010d 00000 n \n" % (size, info_offset)
    out += b"trailer\n<< /Size %d /Root %s /Info %d 0 R /Prev %d >>\n" % (size + 1, root, size, previous_xref)
    out += b"startxref\n%d\n%%%%EOF\n" % xref_offset
    return bytes(out)


def build_pdf(write: Callable[[FPDF], None], *, title: str | None = None, created: datetime | None = None,
              owner_password: str | None = None, user_password: str | None = None) -> bytes:  # fmt: skip
    pdf = FPDF()
    if title:
        pdf.set_title(title)
    if created:
        pdf.set_creation_date(created)
    if owner_password:
        pdf.set_encryption(owner_password=owner_password, user_password=user_password)
    write(pdf)
    return bytes(pdf.output())


def write_guide(pdf: FPDF) -> None:
    pdf.add_page()
    pdf.set_font("Helvetica", size=24)
    pdf.cell(text="Deployment Guide")
    pdf.ln(16)
    pdf.set_font("Helvetica", size=11)
    pdf.multi_cell(w=0, text="This guide is for operators. " * 6)
    pdf.ln(6)
    pdf.set_font("Helvetica", size=16)
    pdf.cell(text="Kubernetes")
    pdf.ln(10)
    pdf.set_font("Helvetica", size=11)
    pdf.multi_cell(w=0, text="The web and worker processes run as separate deployments. " * 5)
    pdf.ln(6)
    pdf.set_font("Helvetica", "B", size=13)
    pdf.cell(text="Health checks")
    pdf.ln(8)
    pdf.set_font("Helvetica", size=11)
    pdf.multi_cell(w=0, text="The liveness probe calls the health endpoint every ten seconds. " * 4)
    pdf.add_page()
    pdf.set_font("Helvetica", size=16)
    # Narrow on purpose: the heading wraps onto a second line and must stay one heading.
    pdf.multi_cell(w=70, text="Backups and restoring a workspace from the nightly dump")
    pdf.ln(6)
    pdf.set_font("Helvetica", size=11)
    pdf.multi_cell(w=0, text="Back up the database every night and test a restore monthly. " * 5)


def write_plain_pages(pdf: FPDF) -> None:
    for page in ("first", "second"):
        pdf.add_page()
        pdf.set_font("Helvetica", size=11)
        pdf.multi_cell(w=0, text=f"Text of the {page} page. " + LOREM)


def write_image_only(pdf: FPDF) -> None:
    pdf.add_page()
    pdf.image(Image.new("RGB", (200, 100), "white"), x=10, y=10, w=100)


class ManualPDF(FPDF):
    """A small-print running header and a page-number footer on every page, as office
    tools and documentation generators write them."""

    def __init__(self, running_header: str, footer: str) -> None:
        super().__init__()
        self.running_header = running_header
        self.footer_format = footer

    def header(self) -> None:
        if self.running_header:
            self.set_font("Helvetica", size=8)
            self.cell(text=self.running_header)
            self.ln(12)

    def footer(self) -> None:
        self.set_y(-15)
        self.set_font("Helvetica", size=8)
        self.cell(text=self.footer_format.format(page=self.page_no(), pages="{nb}"))


def build_manual(chapters: list[str], *, footer: str = "Page {page}/{pages}",
                 running_header: str = "Docent Operations Manual - revision 7", closing: str = "") -> bytes:  # fmt: skip
    pdf = ManualPDF(running_header, footer)
    for number, chapter in enumerate(chapters):
        pdf.add_page()
        if number == 0:
            pdf.set_font("Helvetica", size=24)
            pdf.cell(text="Operations Manual")
            pdf.ln(16)
        pdf.set_font("Helvetica", size=16)
        pdf.cell(text=chapter)
        pdf.ln(10)
        pdf.set_font("Helvetica", size=11)
        pdf.multi_cell(w=0, text=f"How {chapter.lower()} works. " + LOREM * 3)
        pdf.ln(4)
        pdf.multi_cell(w=0, text="42")  # a lone number inside the page is content, not a page number
        pdf.ln(4)
        pdf.multi_cell(w=0, text=closing or f"End of {chapter.lower()}.")
    return bytes(pdf.output())


CHAPTERS = ["Installing", "Upgrading", "Backups"]
CREATED = datetime(2025, 3, 1, 8, 0, tzinfo=timezone(timedelta(hours=2)))


@pytest.fixture(scope="session")
def pdf_files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("pdfs")
    guide = build_pdf(write_guide, title="Docent Deployment Guide", created=CREATED)
    files = {
        "guide": guide,
        "guide-moddate": with_info(
            guide,
            {
                "Title": "Docent Deployment Guide",
                "CreationDate": "D:20250301080000+02'00'",
                "ModDate": "D:20250314093000-05'00'",
            },
        ),
        "untitled": build_pdf(write_guide, created=CREATED),
        "word-title": build_pdf(write_guide, title="Microsoft Word - guide_v3_FINAL.docx"),
        "plain": build_pdf(write_plain_pages),
        "encrypted": build_pdf(write_guide, title="Secret", owner_password="owner", user_password="reader"),
        "owner-only": build_pdf(write_guide, title="Open Secret", owner_password="owner"),
        "scanned": build_pdf(write_image_only, title="Scan"),
        "truncated": guide[: len(guide) // 2],
        "not-a-pdf": b"<html><body>404 Not Found</body></html>",
    }
    written = {}
    for name, data in files.items():
        path = folder / f"{name}.pdf"
        path.write_bytes(data)
        written[name] = path
    return written


def parse_pdf(pdf_files: dict[str, Path], name: str) -> ParsedDocument:
    path = pdf_files[name]
    return parse_document(path, path.read_bytes())


# --- formats --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("a.md", "markdown"),
        ("a.markdown", "markdown"),
        ("A.MD", "markdown"),
        ("a.adoc", "asciidoc"),
        ("a.asciidoc", "asciidoc"),
        ("a.rst", "rst"),
        ("a.txt", "text"),
        ("a.text", "text"),
        ("a.html", "html"),
        ("a.htm", "html"),
        ("a.pdf", "pdf"),
    ],
)
def test_detect_format_by_extension(name: str, expected: str) -> None:
    assert detect_format(Path("docs") / name) == expected


def test_detect_format_rejects_other_types_naming_the_extension() -> None:
    with pytest.raises(UnsupportedFormat, match=r"^unsupported file type \.docx$"):
        detect_format(Path("report.docx"))
    with pytest.raises(UnsupportedFormat, match="no extension"):
        detect_format(Path("Makefile"))


def test_parse_document_rejects_unsupported_type_before_reading_bytes() -> None:
    with pytest.raises(UnsupportedFormat, match=r"\.png"):
        parse_document(Path("diagram.png"), b"\x89PNG\r\n")


# --- Markdown -------------------------------------------------------------------------------


def test_markdown_frontmatter_fields() -> None:
    parsed = parse_fixture("deployment-guide.md")
    assert parsed.format == "markdown"
    assert parsed.title == "Deployment Guide"
    assert parsed.tags == ["kubernetes", "helm"]  # a comma-separated string becomes a list
    assert parsed.entities == ["Docent", "Acme Corp"]
    assert parsed.doc_type == "operations"
    assert parsed.source_type == "wiki"
    assert parsed.metadata["owner"] == "platform-team"
    assert parsed.metadata["date"] == "2025-03-14"  # kept JSON-safe for dates.py to read
    assert parsed.pdf_dates == {}
    assert parsed.page_count is None


def test_markdown_nested_atx_headings_ignore_hashes_in_code() -> None:
    parsed = parse_fixture("deployment-guide.md")
    title = "Deployment Guide"
    assert paths(parsed) == [
        (title,),
        (title, "Kubernetes"),
        (title, "Kubernetes", "Health checks"),
        (title, "Kubernetes", "Scaling"),
        (title, "Backups"),
    ]
    assert [s.level for s in parsed.sections] == [0, 1, 2, 2, 1]
    health = section(parsed, "Health checks")
    assert "# this comment is not a heading\nlivenessProbe:" in health  # code keeps its lines
    assert "Keep the **kwargs of custom probes" in health  # code spans are not "emphasis"


def test_markdown_inline_markup_is_stripped_lightly() -> None:
    parsed = parse_fixture("deployment-guide.md")
    assert parsed.sections[0].text == (
        "This guide explains how to run Docent in production. See the installation notes first."
    )
    assert "The web and worker processes" in section(parsed, "Kubernetes")
    assert section(parsed, "Scaling") == "- Add replicas of the worker deployment.\n- Keep one beat scheduler."
    assert "## Kubernetes" not in parsed.text


def test_markdown_setext_headings_and_horizontal_rule() -> None:
    parsed = parse_fixture("setext-notes.md")
    assert parsed.title == "Release Notes"
    assert paths(parsed) == [("Release Notes",), ("Release Notes", "Upgrading"), ("Release Notes", "Known issues")]
    upgrading = section(parsed, "Upgrading")
    assert upgrading == (
        "Stop the workers before you migrate.\n\nText after a horizontal rule stays in the Upgrading section."
    )
    assert "---" not in parsed.text and "===" not in parsed.text


def test_markdown_title_from_first_h1_and_levels_start_below_it() -> None:
    text = "# Ops Handbook\n\nIntro.\n\n### Deep first\n\nA.\n\n#### Deeper\n\nB.\n\n### Second\n\nC.\n"
    parsed = parse_document(Path("handbook.md"), text.encode())
    assert parsed.title == "Ops Handbook"
    assert [(s.heading_path, s.level) for s in parsed.sections] == [
        (("Ops Handbook",), 0),
        (("Ops Handbook", "Deep first"), 1),
        (("Ops Handbook", "Deep first", "Deeper"), 2),
        (("Ops Handbook", "Second"), 1),
    ]


def test_markdown_frontmatter_title_keeps_h1_chapters_as_sections() -> None:
    text = "---\ntitle: Handbook\n---\n# Install\n\nA.\n\n# Configure\n\nB.\n"
    parsed = parse_document(Path("handbook.md"), text.encode())
    assert parsed.title == "Handbook"
    assert paths(parsed) == [("Handbook", "Install"), ("Handbook", "Configure")]


def test_markdown_without_headings_or_frontmatter_uses_file_stem() -> None:
    parsed = parse_document(Path("notes/quick-tips.md"), b"Just one paragraph\nwrapped over two lines.\n")
    assert parsed.title == "quick-tips"
    assert [(s.heading_path, s.level, s.text) for s in parsed.sections] == [
        (("quick-tips",), 0, "Just one paragraph wrapped over two lines.")
    ]


def test_markdown_list_frontmatter_and_string_entities() -> None:
    text = "---\ntags: [search, ' ranking ', search]\nentities: Acme Corp, Docent\ndoc_type: API\n---\nBody.\n"
    parsed = parse_document(Path("x.md"), text.encode())
    assert parsed.tags == ["search", "ranking"]
    assert parsed.entities == ["Acme Corp", "Docent"]
    assert parsed.doc_type == "API"  # doctypes.py matches it case-insensitively


def test_markdown_malformed_frontmatter_keeps_the_body() -> None:
    parsed = parse_fixture("broken-frontmatter.md")
    assert parsed.metadata["frontmatter_error"].startswith("invalid YAML")
    assert parsed.title == "Broken Frontmatter Still Parses"
    assert "The body is still indexed." in parsed.text
    assert "title: [Unclosed list" in parsed.text  # kept as text, not lost
    assert all(not s.heading_path[-1].startswith("title:") for s in parsed.sections)
    assert parsed.tags == []


def test_markdown_frontmatter_aliases_are_refused() -> None:
    # Nine levels of nine aliases would expand to 9**9 strings when copied into metadata.
    levels = ['a0: &a0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    levels += [f"a{n}: &a{n} [{', '.join([f'*a{n - 1}'] * 9)}]" for n in range(1, 9)]
    text = "---\n" + "\n".join(levels) + "\ntitle: Laughs\n---\nBody.\n"
    parsed = parse_document(Path("laughs.md"), text.encode())
    assert "aliases are not allowed" in parsed.metadata["frontmatter_error"]
    assert parsed.title == "laughs"
    assert "Body." in parsed.text


def test_markdown_frontmatter_that_is_not_a_mapping_is_noted() -> None:
    parsed = parse_document(Path("x.md"), b"---\n- just\n- a list\n---\nBody text.\n")
    assert "not a mapping" in parsed.metadata["frontmatter_error"]
    assert "Body text." in parsed.text


@pytest.mark.parametrize(
    ("name", "raw_date"), [("bad-date.md", "sometime next spring"), ("impossible-date.md", "2025-13-45")]
)
def test_markdown_unparsable_frontmatter_date_does_not_break_parsing(name: str, raw_date: str) -> None:
    parsed = parse_fixture(name)
    assert parsed.metadata["date"] == raw_date
    assert "frontmatter_error" not in parsed.metadata
    assert parsed.sections


def test_markdown_frontmatter_datetime_is_json_safe() -> None:
    parsed = parse_document(Path("x.md"), b"---\ndate: 2025-03-14 10:30:00+02:00\n---\nBody.\n")
    assert parsed.metadata["date"] == "2025-03-14T10:30:00+02:00"


# --- AsciiDoc -------------------------------------------------------------------------------


def test_asciidoc_title_attributes_and_sections() -> None:
    parsed = parse_fixture("admin-guide.adoc")
    title = "Docent Administration Guide"
    assert parsed.format == "asciidoc"
    assert parsed.title == title
    assert paths(parsed) == [
        (title,),
        (title, "Installation"),
        (title, "Installation", "Requirements"),
        (title, "Upgrades"),
    ]
    assert [s.level for s in parsed.sections] == [0, 1, 2, 1]
    assert parsed.metadata["revdate"] == "2025-02-20"
    assert parsed.metadata["author"] == "Jane Doe <jane@example.com>"
    assert parsed.metadata_lines["revdate"] == 4


def test_asciidoc_blocks_keep_content_and_drop_markup() -> None:
    parsed = parse_fixture("admin-guide.adoc")
    assert parsed.sections[0].text == "This guide is for people who run Docent."  # {product} resolved
    installation = section(parsed, "Installation")
    assert "== this is code, not a heading\npip install docent" in installation
    requirements = section(parsed, "Requirements")
    assert "You need PostgreSQL 16 with pgvector." in requirements
    assert "Sidebar text about versions." in requirements
    for markup in (":toc:", "[source,bash]", "----", "****", "////", "comment block", "Jane Doe"):
        assert markup not in parsed.text


def test_asciidoc_revision_line_gives_revdate() -> None:
    text = "= Release Guide\nOps Team\nv2.1, 2025-03-14: Spring release\n\nBody.\n"
    parsed = parse_document(Path("release.adoc"), text.encode())
    assert parsed.metadata["revdate"] == "2025-03-14"
    assert parsed.metadata["revnumber"] == "2.1"
    assert parsed.metadata_lines["revdate"] == 3
    assert parsed.text == "Body."


def test_asciidoc_without_title_uses_stem() -> None:
    parsed = parse_document(Path("ops-notes.adoc"), b"Intro text.\n\n== Backups\n\nNightly.\n")
    assert parsed.title == "ops-notes"
    assert paths(parsed) == [("ops-notes",), ("ops-notes", "Backups")]


# --- reStructuredText -----------------------------------------------------------------------


def test_rst_overline_title_and_levels_by_first_appearance() -> None:
    parsed = parse_fixture("install.rst")
    title = "Docent Install Guide"
    assert parsed.format == "rst"
    assert parsed.title == title
    assert [(s.heading_path, s.level) for s in parsed.sections] == [
        ((title,), 0),
        ((title, "Requirements"), 1),
        ((title, "Requirements", "Database"), 2),
        ((title, "Requirements", "Database", "Extensions"), 3),
        ((title, "Configuration"), 1),
        ((title, "Configuration", "Tuning"), 2),
    ]


def test_rst_directives_literals_and_comments() -> None:
    parsed = parse_fixture("install.rst")
    assert section(parsed, "Requirements") == "You need Python 3.11 and pip.\n\nUse a virtual environment."
    assert section(parsed, "Database") == (
        'Create the database:\n\ncreatedb docent\npsql docent -c "CREATE EXTENSION vector"'
    )
    assert section(parsed, "Extensions") == 'psql -c "\\dx"'
    assert section(parsed, "Configuration") == "Set DATABASE_URL. See the settings page."
    for markup in (".. note::", "code-block", ":caption:", "database-setup", "not indexed", "https://example.com"):
        assert markup not in parsed.text


def test_rst_repeated_first_style_is_not_a_title() -> None:
    text = "Install\n=======\n\nStep one.\n\nUpgrade\n=======\n\nStep two.\n"
    parsed = parse_document(Path("ops.rst"), text.encode())
    assert parsed.title == "ops"
    assert [(s.heading_path, s.level) for s in parsed.sections] == [(("ops", "Install"), 1), (("ops", "Upgrade"), 1)]


def test_rst_docinfo_after_the_title_is_metadata_not_text() -> None:
    parsed = parse_fixture("release-checklist.rst")
    assert parsed.title == "Docent Release Checklist"
    assert parsed.metadata == {
        "author": "Release Team",
        "date": "April 2, 2025",
        "version": "2.1",
        "abstract": "What to check before tagging a release, and who signs off.",  # continuation joined
    }
    assert parsed.metadata_lines == {"author": 7, "date": 8, "version": 9, "abstract": 10}
    assert parsed.sections[0].text == "Run through this list before every tag."
    assert ":Owner: whoever is on call" in section(parsed, "Before tagging")  # a body field list stays text
    assert "Release Team" not in parsed.text


def test_rst_field_list_before_the_title_is_docinfo_too() -> None:
    # Sphinx puts file-wide metadata there.
    parsed = parse_document(Path("guide.rst"), b":orphan:\n:date: March 3, 2025\n\nGuide\n=====\n\nText.\n")
    assert parsed.title == "Guide"
    assert parsed.metadata == {"orphan": "", "date": "March 3, 2025"}
    assert parsed.metadata_lines == {"orphan": 1, "date": 2}
    assert parsed.text == "Text."


def test_rst_field_list_under_a_section_heading_stays_text() -> None:
    text = "Install\n=======\n\n:Date: 2025-01-01\n\nStep one.\n\nUpgrade\n=======\n\nStep two.\n"
    parsed = parse_document(Path("ops.rst"), text.encode())
    assert parsed.title == "ops"  # so "Install" is a section, and its field list is content
    assert parsed.metadata == {} and parsed.metadata_lines == {}
    assert section(parsed, "Install") == ":Date: 2025-01-01\n\nStep one."


def test_rst_demo_guide_docinfo() -> None:
    path = DEMO_CORPUS / "v2.0" / "architecture-overview.rst"
    parsed = parse_document(path, path.read_bytes())
    assert parsed.metadata == {"author": "Platform Engineering", "date": "2024-05-02", "version": "2.0",
                               "status": "Published"}  # fmt: skip
    assert parsed.sections[0].text.startswith("This document describes how Lumen Gateway 2.0 is put together")


# --- plain text -----------------------------------------------------------------------------


def test_text_title_and_heuristic_headings() -> None:
    parsed = parse_fixture("release-notes.txt")
    title = "Docent Release Notes"
    assert parsed.format == "text"
    assert parsed.title == title
    assert [(s.heading_path, s.level) for s in parsed.sections] == [
        ((title, "OVERVIEW"), 1),
        ((title, "1. Installation"), 1),
        ((title, "1. Installation", "1.1 Requirements"), 2),
        ((title, "Known limitations"), 1),
        ((title, "Known limitations", "Workarounds"), 2),
    ]
    assert section(parsed, "1. Installation") == "Run the installer on each host. Reboot afterwards."
    assert "=====" not in parsed.text


def test_text_sentences_and_numbered_lists_are_not_headings() -> None:
    text = "Notes\n\nThis line ends with a period.\n\n1. Install it\n2. Run it\n\nshort lowercase line\n\nBody.\n"
    parsed = parse_document(Path("notes.txt"), text.encode())
    assert paths(parsed) == [("Notes",)]
    assert "1. Install it\n2. Run it" in parsed.text


def test_text_long_first_line_is_not_the_title() -> None:
    first = "This opening line is far too long to be a title because it goes on and on past eighty characters."
    parsed = parse_document(Path("memo.txt"), f"{first}\n\nMore text.\n".encode())
    assert parsed.title == "memo"
    assert parsed.sections[0].text.startswith("This opening line")


# --- HTML -----------------------------------------------------------------------------------


def test_html_title_headings_and_dropped_elements() -> None:
    parsed = parse_fixture("api-reference.html")
    title = "Docent API Reference"
    assert parsed.format == "html"
    assert parsed.title == title
    assert paths(parsed) == [
        (title,),
        (title, "Authentication"),
        (title, "Authentication", "Rotating keys"),
        (title, "Errors"),
    ]
    for dropped in ("trackingSecret", "color: red", "Docs menu", "Enable JavaScript", "injected"):
        assert dropped not in parsed.text
    assert parsed.metadata["description"] == "Docent HTTP API"


def test_html_entities_in_code_come_out_as_literal_text() -> None:
    parsed = parse_fixture("api-reference.html")
    authentication = section(parsed, "Authentication")
    assert 'curl -H "Authorization: Bearer <api-key>" https://docent.example.com/api/search' in authentication
    assert "&lt;" not in parsed.text
    assert section(parsed, "Rotating keys") == "Create a new key.\n\nRevoke the old key & redeploy."
    assert "401 Missing key" in section(parsed, "Errors")


def test_html_meta_names_and_properties_are_metadata() -> None:
    parsed = parse_fixture("changelog.html")
    assert parsed.metadata == {
        "DC.date": "2025-01-15",
        "article:published_time": "2025-02-01T09:00:00+01:00",
        "article:modified_time": "2025-05-06T16:00:00+02:00",
        "description": "What changed in each Docent release",
    }
    assert paths(parsed) == [("Docent Changelog",), ("Docent Changelog", "2.1")]


def test_html_title_falls_back_to_first_h1_then_stem() -> None:
    parsed = parse_document(Path("page.html"), b"<h1>Search tips</h1><p>Use quotes.</p><h2>Filters</h2><p>By date.</p>")
    assert parsed.title == "Search tips"
    assert paths(parsed) == [("Search tips",), ("Search tips", "Filters")]
    assert parse_document(Path("bare-page.htm"), b"<p>Only text.</p>").title == "bare-page"


# --- PDF ------------------------------------------------------------------------------------


def test_pdf_metadata_title_dates_and_pages(pdf_files: dict[str, Path]) -> None:
    parsed = parse_pdf(pdf_files, "guide")
    assert parsed.format == "pdf"
    assert parsed.title == "Docent Deployment Guide"  # metadata beats the visible title
    assert parsed.page_count == 2
    assert parsed.pdf_dates == {"CreationDate": "D:20250301080000+02'00'"}
    assert parsed.metadata["Title"] == "Docent Deployment Guide"


def test_pdf_moddate_is_read_and_wins(pdf_files: dict[str, Path]) -> None:
    parsed = parse_pdf(pdf_files, "guide-moddate")
    assert parsed.pdf_dates == {"ModDate": "D:20250314093000-05'00'", "CreationDate": "D:20250301080000+02'00'"}
    assert resolve_doc_date(parsed, mtime=0.0) == DocDate(datetime(2025, 3, 14, 14, 30, tzinfo=UTC), "pdf_moddate")


def test_pdf_headings_from_font_sizes(pdf_files: dict[str, Path]) -> None:
    parsed = parse_pdf(pdf_files, "guide")
    title = "Docent Deployment Guide"
    backups = "Backups and restoring a workspace from the nightly dump"  # wrapped, merged back
    assert [(s.heading_path, s.level) for s in parsed.sections] == [
        ((title,), 0),
        ((title, "Kubernetes"), 1),
        ((title, "Kubernetes", "Health checks"), 2),
        ((title, backups), 1),
    ]
    assert parsed.sections[0].text.startswith("This guide is for operators.")
    assert "Deployment Guide" not in parsed.sections[0].text  # the visible title is not body text
    assert section(parsed, "Health checks").startswith("The liveness probe calls the health endpoint")
    assert section(parsed, backups).startswith("Back up the database every night")


def test_pdf_title_from_biggest_first_page_line_without_metadata(pdf_files: dict[str, Path]) -> None:
    parsed = parse_pdf(pdf_files, "untitled")
    assert parsed.title == "Deployment Guide"
    assert parsed.sections[1].heading_path == ("Deployment Guide", "Kubernetes")


def test_pdf_placeholder_metadata_title_gives_way_to_the_visible_title(pdf_files: dict[str, Path]) -> None:
    parsed = parse_pdf(pdf_files, "word-title")
    assert parsed.title == "Deployment Guide"
    assert parsed.metadata["Title"] == "Microsoft Word - guide_v3_FINAL.docx"  # still recorded


def test_pdf_without_visible_headings_gives_one_section_per_page(pdf_files: dict[str, Path]) -> None:
    parsed = parse_pdf(pdf_files, "plain")
    assert parsed.title == "plain"
    assert [(s.heading_path, s.level) for s in parsed.sections] == [(("plain",), 0), (("plain",), 0)]
    assert parsed.sections[0].text.startswith("Text of the first page.")
    assert parsed.sections[1].text.startswith("Text of the second page.")


def test_pdf_encrypted_with_owner_password_only_still_parses(pdf_files: dict[str, Path]) -> None:
    parsed = parse_pdf(pdf_files, "owner-only")
    assert parsed.title == "Open Secret"
    assert "Kubernetes" in [s.heading_path[-1] for s in parsed.sections]


@pytest.mark.parametrize("footer", ["Page {page}/{pages}", "Page {page} of {pages}", "{page}", "- {page} -"])
def test_pdf_running_header_and_page_numbers_are_dropped(footer: str) -> None:
    parsed = parse_document(Path("manual.pdf"), build_manual(CHAPTERS, footer=footer))
    assert parsed.page_count == 3
    assert parsed.title == "Operations Manual"  # the big title line is not mistaken for the header
    assert paths(parsed) == [("Operations Manual", chapter) for chapter in CHAPTERS]
    assert "Docent Operations Manual" not in parsed.text and "revision" not in parsed.text
    for chapter in parsed.sections:
        assert chapter.text.split("\n\n")[-2:] == ["42", f"End of {chapter.heading_path[-1].lower()}."]


def test_pdf_footer_sentence_repeated_mid_page_is_content() -> None:
    closing = "Questions go to the operations channel."
    parsed = parse_document(Path("manual.pdf"), build_manual(CHAPTERS, closing=closing, running_header=""))
    assert parsed.text.count(closing) == 3  # short pages: the sentence ends each page but sits high up


def test_pdf_two_pages_drop_a_header_that_repeats_the_title() -> None:
    # Only page two carries the header (page one shows the big title), so it is not on "most" pages.
    pdf = ManualPDF("", "Page {page}/{pages}")
    for number in range(2):
        pdf.add_page()
        pdf.set_font("Helvetica", size=24 if number == 0 else 8)
        pdf.cell(text="Backup Runbook")
        pdf.ln(16)
        pdf.set_font("Helvetica", size=11)
        pdf.multi_cell(w=0, text=f"Step {number + 1}. " + LOREM)
    parsed = parse_document(Path("runbook.pdf"), bytes(pdf.output()))
    assert parsed.title == "Backup Runbook"
    assert "Backup Runbook" not in parsed.text and "Page" not in parsed.text
    assert [s.text.split(".")[0] for s in parsed.sections] == ["Step 1", "Step 2"]


def test_pdf_single_page_keeps_its_edges() -> None:
    parsed = parse_document(Path("memo.pdf"), build_manual(CHAPTERS[:1], footer="Page {page} of {pages}"))
    assert "Docent Operations Manual - revision 7" in parsed.text
    assert "Page 1 of 1" in parsed.text


def test_pdf_demo_api_reference_has_no_running_header_or_page_numbers() -> None:
    path = DEMO_CORPUS / "v2.0" / "api_reference.pdf"
    parsed = parse_document(path, path.read_bytes())
    assert parsed.title == "Lumen Gateway 2.0 - Admin API Reference"
    assert not re.search(r"Page \d+/\d+", parsed.text)
    assert parsed.title not in parsed.text  # the running header repeats the metadata title
    assert parsed.sections[1].heading_path[-1] == "1. Overview"


# --- metadata is stored as JSON -------------------------------------------------------------


@pytest.mark.parametrize(
    "name",
    ["admin-guide.adoc", "install.rst", "release-checklist.rst", "api-reference.html", "changelog.html",
     "release-notes.txt", "windows-1252.txt"],
)  # fmt: skip
def test_metadata_values_are_flat_strings(name: str) -> None:
    metadata = parse_fixture(name).metadata
    assert all(isinstance(key, str) and isinstance(value, str) for key, value in metadata.items())


def test_pdf_metadata_values_are_flat_strings(pdf_files: dict[str, Path]) -> None:
    metadata = parse_pdf(pdf_files, "guide-moddate").metadata
    assert metadata and all(isinstance(value, str) for value in metadata.values())


def test_markdown_frontmatter_metadata_is_json_as_written() -> None:
    text = b"---\ndate: 2025-03-14\nreviewers: [ana, bo]\nlimits: {rps: 10}\n---\nBody.\n"
    metadata = parse_document(Path("x.md"), text).metadata
    assert json.loads(json.dumps(metadata)) == {"date": "2025-03-14", "reviewers": ["ana", "bo"], "limits": {"rps": 10}}


# --- bad input ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "data"),
    [("empty.md", None), ("whitespace.txt", None), ("blank.pdf", b""), ("bom.md", b"\xef\xbb\xbf  \n")],
)
def test_empty_files(name: str, data: bytes | None) -> None:
    if data is None:
        data = (FIXTURES / name).read_bytes()
    with pytest.raises(ParseError, match=r"^empty file$"):
        parse_document(Path(name), data)


@pytest.mark.parametrize("name", ["binary-junk.txt", "control-chars.md"])
def test_binary_content_with_a_text_extension(name: str) -> None:
    with pytest.raises(ParseError, match=r"^binary content in a text file$"):
        parse_fixture(name)


def test_nul_bytes_mean_binary_even_if_mostly_text() -> None:
    with pytest.raises(ParseError, match="binary content"):
        parse_document(Path("page.html"), b"<p>hello</p>\x00" + b"<p>more</p>" * 100)


def test_text_with_a_few_control_characters_is_still_text() -> None:
    log = b"".join(b"\x1b[32mINFO\x1b[0m worker finished batch %d without errors\n" % n for n in range(20))
    parsed = parse_document(Path("worker.txt"), log)
    assert "worker finished batch 3" in parsed.text


def test_windows_1252_text_is_decoded_not_rejected() -> None:
    parsed = parse_fixture("windows-1252.txt")
    assert parsed.title == "Café notes"
    assert parsed.text == "The café opens at 8 – bring your naïve “quotes”."
    assert parsed.metadata["source_encoding"] == "cp1252"


def test_bytes_undefined_in_cp1252_fall_back_to_latin_1() -> None:
    parsed = parse_document(Path("odd.txt"), "Übersicht\n\nZeichen".encode("latin-1") + b" \x81 ok\n")
    assert parsed.title == "Übersicht"
    assert parsed.metadata["source_encoding"] == "latin-1"


def test_utf8_bom_and_utf16_are_decoded() -> None:
    assert parse_document(Path("a.md"), "\ufeff# Größe\n\nText.\n".encode()).title == "Größe"
    parsed = parse_document(Path("b.txt"), "Ünïcode title\n\nBody text.\n".encode("utf-16"))
    assert parsed.title == "Ünïcode title"
    assert parsed.text == "Body text."


def test_encrypted_pdf_needing_a_password(pdf_files: dict[str, Path]) -> None:
    with pytest.raises(ParseError, match=r"^encrypted PDF$"):
        parse_pdf(pdf_files, "encrypted")


@pytest.mark.parametrize("name", ["truncated", "not-a-pdf"])
def test_corrupt_pdf_gives_a_readable_reason(pdf_files: dict[str, Path], name: str) -> None:
    with pytest.raises(ParseError, match=r"^not a readable PDF: \S"):
        parse_pdf(pdf_files, name)


def test_scanned_pdf_without_text(pdf_files: dict[str, Path]) -> None:
    with pytest.raises(ParseError, match=r"^no extractable text \(scanned PDF\?\)$"):
        parse_pdf(pdf_files, "scanned")


def test_document_text_joins_section_texts() -> None:
    parsed = parse_fixture("setext-notes.md")
    assert parsed.text == "\n\n".join(s.text for s in parsed.sections)
    assert parsed.text.startswith("Docent 2.1 brings faster ingestion.")

