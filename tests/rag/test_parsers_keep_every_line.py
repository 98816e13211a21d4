"""Nothing a file says is dropped silently: every non-empty line of a small corpus, written in every format
we read, ends up in some chunk or in the title (rag/parsers/, rag/chunking.py).

A property over the formats, not an example per format: each case is written by the tool that makes the
format (python-docx, python-pptx, openpyxl, odfpy, fpdf2, the standard library's e-mail), parsed and
chunked as the pipeline does. OCR is left out: it reads pixels, and its accuracy has tests of its own.
"""

from __future__ import annotations

import io
from collections.abc import Callable
from email.message import EmailMessage
from pathlib import Path

import docx
import openpyxl
import pptx
import pytest
from fpdf import FPDF
from odf.opendocument import OpenDocumentText
from odf.text import H, P

from rag.chunking import chunk_document
from rag.parsers import parse_document
from rag.parsers._common import squash

# (title, body lines): a one-line body (the common short mail), a few lines, a one-word line.
CORPUS = [
    ("Badge office moves", ["From Monday the badge office is in room B-214 on the second floor."]),
    ("Parking", ["Visitors park on level P2 of the north garage.", "Staff park on level P3 after 9:00.",
                 "Bicycles go in the courtyard racks beside the café."]),
    ("Fire drill", ["Thursday.", "Leave by the east stairs and meet at assembly point C."]),
]


def _saved(document) -> bytes:
    buffer = io.BytesIO()
    document.save(buffer)
    return buffer.getvalue()


def _docx(title: str, lines: list[str]) -> bytes:
    document = docx.Document()
    document.add_heading(title, level=1)
    for line in lines:
        document.add_paragraph(line)
    return _saved(document)


def _pptx(title: str, lines: list[str]) -> bytes:
    deck = pptx.Presentation()
    slide = deck.slides.add_slide(deck.slide_layouts[1])
    slide.shapes.title.text = title
    slide.placeholders[1].text_frame.text = "\n".join(lines)
    return _saved(deck)


def _xlsx(title: str, lines: list[str]) -> bytes:
    book = openpyxl.Workbook()
    sheet = book.active
    sheet.title = "Notes"
    for row, line in enumerate([title, *lines], start=1):
        sheet.cell(row=row, column=1, value=line)
    return _saved(book)


def _odt(title: str, lines: list[str]) -> bytes:
    document = OpenDocumentText()
    document.text.addElement(H(outlinelevel=1, text=title))
    for line in lines:
        document.text.addElement(P(text=line))
    buffer = io.BytesIO()
    document.write(buffer)
    return buffer.getvalue()


def _pdf(title: str, lines: list[str]) -> bytes:
    pdf = FPDF()
    pdf.add_page()
    pdf.set_font("helvetica", size=16)
    pdf.cell(text=title.replace("é", "e"), new_x="LMARGIN", new_y="NEXT")
    pdf.set_font("helvetica", size=11)
    for line in lines:
        pdf.cell(text=line.replace("é", "e"), new_x="LMARGIN", new_y="NEXT")
    return bytes(pdf.output())


def _mail(title: str, lines: list[str], *, html: bool) -> bytes:
    message = EmailMessage()
    message["Subject"] = title
    message["From"] = "Facilities <facilities@example.com>"
    message["To"] = "everyone@example.com"
    message.set_content("\n".join(lines) + "\n")
    if html:
        message.add_alternative("<html><body>" + "".join(f"<p>{line}</p>" for line in lines) + "</body></html>",
                                subtype="html")
    return bytes(message)


WRITERS: dict[str, Callable[[str, list[str]], bytes]] = {
    "txt": lambda title, lines: "\n".join([title, "", *lines]).encode(),
    "md": lambda title, lines: (f"# {title}\n\n" + "\n\n".join(lines) + "\n").encode(),
    "rst": lambda title, lines: (f"{title}\n{'=' * len(title)}\n\n" + "\n\n".join(lines) + "\n").encode(),
    "adoc": lambda title, lines: (f"= {title}\n\n" + "\n\n".join(lines) + "\n").encode(),
    "html": lambda title, lines: (f"<html><head><title>{title}</title></head><body><h1>{title}</h1>"
                                  + "".join(f"<p>{line}</p>" for line in lines) + "</body></html>").encode(),
    "eml": lambda title, lines: _mail(title, lines, html=False),
    "html.eml": lambda title, lines: _mail(title, lines, html=True),
    "docx": _docx,
    "pptx": _pptx,
    "xlsx": _xlsx,
    "odt": _odt,
    "pdf": _pdf,
}


def _said(suffix: str, title: str, lines: list[str]) -> str:
    """Everything a reader of the index can find of the file: its title, chunk texts and headings."""
    data = WRITERS[suffix](title, lines)
    parsed = parse_document(Path(f"notice.{suffix.rsplit('.', 1)[-1]}"), data)
    chunks = chunk_document(parsed)
    return squash(" ".join([parsed.title, *(f"{chunk.heading_path} {chunk.text}" for chunk in chunks)]))


@pytest.mark.parametrize("suffix", list(WRITERS))
@pytest.mark.parametrize(("title", "lines"), CORPUS, ids=[title for title, _ in CORPUS])
def test_every_non_empty_line_ends_up_in_a_chunk_or_the_title(suffix: str, title: str, lines: list[str]) -> None:
    said = _said(suffix, title, lines)
    if suffix == "pdf":
        lines = [line.replace("é", "e") for line in lines]  # the PDF's core font has no é
    missing = [line for line in [title, *lines] if line.strip() and squash(line) not in said]
    assert missing == [], f"{suffix}: {missing} not in {said!r}"
