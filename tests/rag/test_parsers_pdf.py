"""The PDF parser on real PDFs (fpdf2-generated, with metadata dates), good and bad."""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import pytest
from fpdf import FPDF
from PIL import Image

from rag.ingest.dates import DocDate, resolve_doc_date
from rag.parsers import ParsedDocument, ParseError, parse_document
from tests.rag.parser_support import DEMO_CORPUS, LOREM, paths, section

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


def _heading(pdf: FPDF, text: str, *, size: int, gap: int, style: str = "") -> None:
    pdf.set_font("Helvetica", style, size=size)
    pdf.cell(text=text)
    pdf.ln(gap)


def _paragraph(pdf: FPDF, text: str) -> None:
    pdf.set_font("Helvetica", size=11)
    pdf.multi_cell(w=0, text=text)


def write_guide(pdf: FPDF) -> None:
    pdf.add_page()
    _heading(pdf, "Deployment Guide", size=24, gap=16)
    _paragraph(pdf, "This guide is for operators. " * 6)
    pdf.ln(6)
    _heading(pdf, "Kubernetes", size=16, gap=10)
    _paragraph(pdf, "The web and worker processes run as separate deployments. " * 5)
    pdf.ln(6)
    _heading(pdf, "Health checks", size=13, gap=8, style="B")
    _paragraph(pdf, "The liveness probe calls the health endpoint every ten seconds. " * 4)
    pdf.add_page()
    pdf.set_font("Helvetica", size=16)
    # Narrow on purpose: the heading wraps onto a second line and must stay one heading.
    pdf.multi_cell(w=70, text="Backups and restoring a workspace from the nightly dump")
    pdf.ln(6)
    _paragraph(pdf, "Back up the database every night and test a restore monthly. " * 5)


def write_plain_pages(pdf: FPDF) -> None:
    for page in ("first", "second"):
        pdf.add_page()
        _paragraph(pdf, f"Text of the {page} page. " + LOREM)


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
            _heading(pdf, "Operations Manual", size=24, gap=16)
        _heading(pdf, chapter, size=16, gap=10)
        _paragraph(pdf, f"How {chapter.lower()} works. " + LOREM * 3)
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
        _heading(pdf, "Backup Runbook", size=24 if number == 0 else 8, gap=16)
        _paragraph(pdf, f"Step {number + 1}. " + LOREM)
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


def test_pdf_metadata_values_are_flat_strings(pdf_files: dict[str, Path]) -> None:
    metadata = parse_pdf(pdf_files, "guide-moddate").metadata
    assert metadata and all(isinstance(value, str) for value in metadata.values())



def test_encrypted_pdf_needing_a_password(pdf_files: dict[str, Path]) -> None:
    with pytest.raises(ParseError, match=r"^encrypted PDF$"):
        parse_pdf(pdf_files, "encrypted")


@pytest.mark.parametrize("name", ["truncated", "not-a-pdf"])
def test_corrupt_pdf_gives_a_readable_reason(pdf_files: dict[str, Path], name: str) -> None:
    with pytest.raises(ParseError, match=r"^not a readable PDF: \S") as raised:
        parse_pdf(pdf_files, name)
    assert "Is this really a PDF" not in str(raised.value) and "/Root" not in str(raised.value)
    expected = "not a PDF at all" if name == "not-a-pdf" else "damaged or cut short"
    assert expected in str(raised.value)


def test_scanned_pdf_without_text(pdf_files: dict[str, Path]) -> None:
    # The page has no text layer, so OCR reads it, and finds nothing on a page with no writing.
    with pytest.raises(ParseError, match=r"^no text found by OCR on the scanned pages$"):
        parse_pdf(pdf_files, "scanned")


