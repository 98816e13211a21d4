"""PDF: text lines from pdfplumber; headings from font sizes, the title from metadata or the
biggest line on page one, paragraphs from vertical gaps. Pages without a text layer (scans)
are rendered and read by OCR (rag.parsers.ocr) into the same kind of lines."""

from __future__ import annotations

import io
import re
import statistics
from collections import Counter
from dataclasses import dataclass
from typing import Any

import pdfplumber
import pypdfium2
from pdfminer.pdfdocument import PDFEncryptionError
from pdfminer.psexceptions import PSException
from pdfplumber.utils.exceptions import PdfminerException

from rag.parsers._common import (
    Block,
    Heading,
    ParsedDocument,
    ParseError,
    Progress,
    Section,
    build_sections,
    joined_line,
    no_progress,
    optional_str,
    squash,
    table_row_texts,
)
from rag.parsers.ocr import OCR_DPI, merge_rows, ocr_lines

# A line is a heading when its type is this much larger than the body text: enough to
# skip bold-only emphasis and rounding noise, small enough for modest heading styles.
_HEADING_RATIO = 1.15
_HEADING_MAX_CHARS = 100
_PARAGRAPH_GAP = 0.6  # a vertical gap above this fraction of a line's height ends a paragraph
_OCR_TALLER = 1.3  # an OCR'd row this much taller than the page's body rows is a heading
_OCR_HEADING = 1.5  # the size given to OCR'd headings, as a multiple of the body size
_BOX_TO_FONT = 1.2  # an OCR box is about this many times the font size high

# Running headers, footers and page numbers are looked for only among the outermost lines
# of a page that also sit in its top or bottom margin band, so body text is not at risk.
_EDGE_LINES = 2  # how deep to peel at each edge: a header or footer of up to two lines
_MARGIN_BAND = 0.15  # fraction of the page height, at the top and at the bottom
_PAGE_NUMBER = re.compile(r"(?:page\s+)?\d{1,4}(?:\s*(?:/|of)\s*\d{1,4})?|[-–—]\s*\d{1,4}\s*[-–—]", re.IGNORECASE)


@dataclass(frozen=True)
class _Line:
    page: int
    text: str
    size: float
    top: float
    bottom: float
    table_row: bool = False  # a row of a ruled table, already rendered with its headers


def parse_pdf(stem: str, data: bytes, *, max_ocr_pages: int = 0, progress: Progress = no_progress) -> ParsedDocument:
    """max_ocr_pages: how many pages without a text layer OCR reads (0: none)."""
    try:
        with pdfplumber.open(io.BytesIO(data)) as pdf:
            raw_metadata = dict(pdf.metadata)
            pages = [_page_lines(number, page) for number, page in enumerate(pdf.pages)]
            page_heights = [float(page.height) for page in pdf.pages]
    except Exception as error:  # noqa: BLE001 - pdfminer raises anything on broken files
        raise _readable_error(error, data) from error
    page_count = len(pages)
    notices: list[str] = []
    ocr_pages = _ocr_empty_pages(data, pages, max_ocr_pages, notices, progress)
    running, outermost = _running_lines(pages, page_heights) if page_count >= 2 else (set(), [])
    lines = [line for page in pages for line in page if id(line) not in running]
    if not lines:  # page numbers alone do not make a text layer either
        raise ParseError("no text found by OCR on the scanned pages" if ocr_pages
                         else "no extractable text (scanned PDF?)")
    metadata: dict[str, Any] = {key: value for key, raw in raw_metadata.items()
                                if (value := _metadata_value(raw)) is not None}
    pdf_dates = {key: metadata[key] for key in ("ModDate", "CreationDate") if metadata.get(key)}

    body_size = _weighted_median([(line.size, len(line.text)) for line in lines])
    lines = _merge_wrapped_headings(lines, body_size)
    headings = [line for line in lines if _is_heading(line, body_size)]
    # The biggest heading on the first page titles the document, like a Markdown H1.
    largest = max((line.size for line in headings), default=None)
    title_line = next((line for line in headings if line.page == 0 and line.size == largest), None)
    known_title = _metadata_title(metadata) or (title_line.text if title_line else None)
    title = known_title or stem
    if known_title:
        # A header that repeats the title is running even when too few pages carry it to
        # count as "most" (a two-page PDF whose first page shows the big title instead).
        running |= {id(line) for line in outermost if line.text.casefold() == known_title.casefold()}
    body_lines = [line for line in lines if line is not title_line and id(line) not in running]
    heading_set = {id(line) for line in headings if line is not title_line}
    sizes = sorted({line.size for line in headings if line is not title_line}, reverse=True)

    if not sizes:  # no visible structure: one section per page keeps citations page-sized
        sections = []
        for page in range(page_count):
            paragraphs = _paragraphs([line for line in body_lines if line.page == page])
            if paragraphs:
                sections.append(Section((title,), 0, "\n\n".join(text for text, _ in paragraphs), page=page + 1))
    else:
        blocks: list[Block] = []
        # build_sections makes one section for leading text, if any, then one per heading, in
        # order: the page each starts on is collected alongside.
        starts: list[int] = []
        run: list[_Line] = []
        for line in body_lines:
            if id(line) in heading_set:
                blocks.extend(_blocks_of(run, starts, opens_section=not blocks))
                run = []
                blocks.append(Heading(sizes.index(line.size) + 1, line.text))
                starts.append(line.page + 1)
            else:
                run.append(line)
        blocks.extend(_blocks_of(run, starts, opens_section=not blocks))
        sections = [
            Section(section.heading_path, section.level, section.text, page=page)
            for section, page in zip(build_sections(title, blocks), starts, strict=True)
        ]
    if ocr_pages:
        metadata["ocr_pages"] = ocr_pages
    return ParsedDocument(
        title=title, format="pdf", sections=sections, metadata=metadata, pdf_dates=pdf_dates, page_count=page_count,
        notices=notices, ocr_pages=ocr_pages,
    )


def _blocks_of(run: list[_Line], starts: list[int], *, opens_section: bool) -> list[str]:
    """Paragraphs of a run of lines; a run before any heading opens a section of its own."""
    paragraphs = _paragraphs(run)
    if opens_section and paragraphs:
        starts.append(paragraphs[0][1] + 1)
    return [text for text, _ in paragraphs]


def _ocr_empty_pages(
    data: bytes, pages: list[list[_Line]], max_pages: int, notices: list[str], progress: Progress
) -> list[int]:
    """OCR the pages without a text layer in place (their lines are added to `pages`); the 1-based pages read."""
    empty = [number for number, lines in enumerate(pages) if not lines]
    if not empty or max_pages <= 0:
        return []
    if len(empty) > max_pages:
        notices.append(f"OCR read the first {max_pages} of {len(empty)} scanned pages; the rest was skipped "
                       f"(bound: OCR_MAX_PAGES)")
        empty = empty[:max_pages]
    document = pypdfium2.PdfDocument(data)
    read: dict[int, list] = {}
    try:
        for done, number in enumerate(empty, start=1):
            progress(f"OCR page {done} of {len(empty)} (page {number + 1} of the PDF)")
            image = document[number].render(scale=OCR_DPI / 72).to_pil()
            read[number] = merge_rows(ocr_lines(image))
    finally:
        document.close()
    all_rows = [row for rows in read.values() for row in rows]
    if all_rows:
        usual = _weighted_median([(row.bottom - row.top, len(row.text)) for row in all_rows])
        for number, rows in read.items():
            pages[number] = _ocr_page_lines(number, rows, usual)
    return [number + 1 for number in empty]


def _ocr_page_lines(number: int, rows: list, usual: float) -> list[_Line]:
    """OCR'd rows as PDF lines in points, in two sizes: body, and heading for a row clearly taller
    than `usual`, the body rows' height over every scanned page (weighted by length, so a short
    title does not count as body). Box heights wobble with descenders and skew, so finer levels
    would be noise, and one heading size lets the title on page one win over later headings."""
    scale = 72 / OCR_DPI
    body = round(usual * scale / _BOX_TO_FONT * 2) / 2
    return [
        _Line(number, row.text, body * _OCR_HEADING if row.bottom - row.top > _OCR_TALLER * usual else body,
              row.top * scale, row.bottom * scale)
        for row in rows
    ]


# Titles that office tools write on their own ("Microsoft Word - report.docx", "Untitled",
# a bare file name): the biggest line on page one says more than these.
_PLACEHOLDER_TITLE = re.compile(
    r"^(?:microsoft (?:word|powerpoint|excel) - .*"
    r"|untitled(?: document)?\d*"
    r"|\S+\.(?:docx?|pptx?|xlsx?|odt|rtf|pdf|tex|dvi|indd))$",
    re.IGNORECASE,
)


def _metadata_title(metadata: dict[str, str]) -> str | None:
    title = optional_str(metadata.get("Title"))
    if title is None or _PLACEHOLDER_TITLE.match(title):
        return None
    return title


def _readable_error(error: Exception, data: bytes) -> ParseError:
    """A reason a person can act on; pdfminer's own ("No /Root object! - Is this really a PDF?") is not one."""
    cause = error.args[0] if isinstance(error, PdfminerException) and error.args else error
    if isinstance(cause, PDFEncryptionError):
        return ParseError("encrypted PDF")
    if b"%PDF-" not in data[:1024]:  # readers accept junk before the header, as far as this
        return ParseError("not a readable PDF: the file is not a PDF at all (it lacks the %PDF- header; "
                          "a renamed file?)")
    if isinstance(cause, PSException):
        return ParseError("not a readable PDF: the file is damaged or cut short (its document structure "
                          "cannot be found); export or download it again")
    reason = squash(str(cause)) or type(cause).__name__
    return ParseError(f"not a readable PDF: {reason}")


def _metadata_value(value: Any) -> str | None:
    if isinstance(value, bytes):
        value = value.decode("latin-1")
    if isinstance(value, str | int | float):
        return squash(str(value)) or None
    return None


def _page_lines(number: int, page: Any) -> list[_Line]:
    """Text lines of a page with the median size of their visible characters, which is
    what the heading detector compares."""
    lines: list[_Line] = []
    tables = [table for table in page.find_tables() if _is_real_table(table)]
    for raw in page.extract_text_lines(return_chars=True, strip=True):
        sizes = [char["size"] for char in raw["chars"] if char["text"].strip()]
        text = squash(raw["text"])
        if not text or not sizes or any(_inside(raw, table.bbox) for table in tables):
            continue
        size = round(statistics.median(sizes) * 2) / 2  # half points: absorbs rounding noise
        lines.append(_Line(number, text, size, raw["top"], raw["bottom"]))
    body_size = statistics.median([line.size for line in lines]) if lines else 0.0
    for table in tables:
        rows = [[squash(cell or "") for cell in row] for row in table.extract()]
        top, bottom = table.bbox[1], table.bbox[3]
        step = (bottom - top) / max(1, len(rows))
        for offset, text in enumerate(table_row_texts(rows[0], rows[1:])):
            row_top = top + step * (offset + 1)
            lines.append(_Line(number, text, body_size, row_top, row_top + step, table_row=True))
    return sorted(lines, key=lambda line: line.top)


def _is_real_table(table: Any) -> bool:
    """Ruled boxes of one column (a code listing in a frame) are not tables."""
    rows = table.extract()
    return len(rows) >= 2 and max((len(row) for row in rows), default=0) >= 2


def _inside(line: dict, bbox: tuple[float, float, float, float]) -> bool:
    middle = (line["top"] + line["bottom"]) / 2
    return bbox[1] <= middle <= bbox[3] and bbox[0] - 1 <= line["x0"] and line["x1"] <= bbox[2] + 1


def _running_lines(pages: list[list[_Line]], page_heights: list[float]) -> tuple[set[int], list[_Line]]:
    """Ids of running headers, footers and page numbers, and the outermost lines left.

    Peeled from the outside in: the first and last line of each page are judged, and a
    line further in only once the one outside it has gone. A line goes when it is a page
    number or recurs on most pages once digits are ignored ("Page 2/3", "Manual, rev 4").
    """

    def key(line: _Line) -> tuple[str, float]:
        return re.sub(r"\d+", "#", line.text.casefold()), line.size

    dropped: set[int] = set()
    for _ in range(_EDGE_LINES):
        outermost = _outermost_lines(pages, page_heights, dropped)
        pages_with = Counter(line_key for _, line_key in {(line.page, key(line)) for line in outermost})
        running = {
            id(line)
            for line in outermost
            if pages_with[key(line)] > len(pages) / 2 or _PAGE_NUMBER.fullmatch(line.text)
        }
        if not running:
            break
        dropped |= running
    return dropped, _outermost_lines(pages, page_heights, dropped)


def _outermost_lines(pages: list[list[_Line]], page_heights: list[float], dropped: set[int]) -> list[_Line]:
    """Each page's first remaining line if it lies in the top margin band and its last if
    it lies in the bottom one: the last line of a short page is high up, not a footer."""
    outermost: list[_Line] = []
    for lines, height in zip(pages, page_heights, strict=True):
        remaining = [line for line in lines if id(line) not in dropped]
        if not remaining:
            continue
        if remaining[0].top < _MARGIN_BAND * height:
            outermost.append(remaining[0])
        if remaining[-1].bottom > (1 - _MARGIN_BAND) * height and remaining[-1] is not remaining[0]:
            outermost.append(remaining[-1])
    return outermost


def _weighted_median(values: list[tuple[float, int]]) -> float:
    values = sorted(values)
    half = sum(weight for _, weight in values) / 2
    seen = 0
    for value, weight in values:
        seen += weight
        if seen >= half:
            return value
    return values[-1][0]


def _is_heading(line: _Line, body_size: float) -> bool:
    return (
        not line.table_row
        and line.size >= body_size * _HEADING_RATIO
        and len(line.text) <= _HEADING_MAX_CHARS
        and any(char.isalpha() for char in line.text)
    )


def _merge_wrapped_headings(lines: list[_Line], body_size: float) -> list[_Line]:
    """A long heading wraps onto a second line of the same size; it is still one heading."""
    merged: list[_Line] = []
    for line in lines:
        previous = merged[-1] if merged else None
        if (
            previous is not None
            and previous.page == line.page
            and previous.size == line.size
            and _is_heading(previous, body_size)
            and _is_heading(line, body_size)
            and line.top - previous.bottom < _PARAGRAPH_GAP * (previous.bottom - previous.top)
        ):
            merged[-1] = _Line(line.page, f"{previous.text} {line.text}", line.size, previous.top, line.bottom)
        else:
            merged.append(line)
    return merged


def _paragraphs(lines: list[_Line]) -> list[tuple[str, int]]:
    """Join lines into paragraphs, each with its 0-based page, breaking on page changes and on
    large vertical gaps, and re-joining words hyphenated across a line break."""
    paragraphs: list[tuple[str, int]] = []
    current = ""
    page = 0
    previous: _Line | None = None
    for line in lines:
        new_paragraph = (
            previous is None
            or line.table_row
            or previous.table_row
            or line.page != previous.page
            or line.top - previous.bottom > _PARAGRAPH_GAP * (previous.bottom - previous.top)
        )
        if new_paragraph:
            if current:
                paragraphs.append((current, page))
            current, page = line.text, line.page
        else:
            current = joined_line(current, line.text)
        previous = line
    if current:
        paragraphs.append((current, page))
    return paragraphs
