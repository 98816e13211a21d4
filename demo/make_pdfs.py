#!/usr/bin/env python3
"""Regenerate the PDF files of the Docent demo corpus.

Usage (from the repository root):

    python demo/make_pdfs.py

Each source file in demo/pdf_sources/*.txt starts with a small header
(``Key: value`` lines) terminated by a line containing only ``---``:

    Output:   path of the PDF, relative to demo/corpus/
    Title:    PDF /Title metadata (also used as the running header)
    Author, Subject, Keywords: optional PDF metadata
    Date:     creation date, "YYYY-MM-DD HH:MM:SS" (UTC) -> /CreationDate
    Modified: modification date, same format (optional) -> /ModDate

The body uses a tiny markup:

    # Heading 1 / ## Heading 2 / ### Heading 3
    - bullet item
        indented by 4 spaces: monospaced code line
    other lines: body text; consecutive lines are joined into one paragraph

The output is deterministic: fixed creation/modification dates, fixed
producer string and a file /ID derived from the content, so re-running the
script produces byte-identical PDFs.
"""

from __future__ import annotations

import sys
from datetime import datetime, UTC
from pathlib import Path

from fpdf import FPDF
from fpdf import output as fpdf_output
from fpdf.syntax import PDFDate

HERE = Path(__file__).resolve().parent
SOURCES = HERE / "pdf_sources"
CORPUS = HERE / "corpus"

# --- ModDate support -------------------------------------------------------
# fpdf2 writes /CreationDate but has no public API for /ModDate. The Info
# dictionary is serialized from the attributes of the PDFInfo object
# (snake_case -> /CamelCase), so adding a ``mod_date`` attribute yields a
# /ModDate entry.
_original_add_info = fpdf_output.OutputProducer._add_info


def _add_info_with_mod_date(self):  # type: ignore[no-untyped-def]
    info_obj = _original_add_info(self)
    mod_date = getattr(self.fpdf, "lumen_mod_date", None)
    if mod_date is not None:
        info_obj.mod_date = PDFDate(mod_date, with_tz=True, encrypt=True)
    return info_obj


fpdf_output.OutputProducer._add_info = _add_info_with_mod_date  # type: ignore[method-assign]


def parse_date(value: str) -> datetime:
    return datetime.strptime(value.strip(), "%Y-%m-%d %H:%M:%S").replace(tzinfo=UTC)


def parse_source(path: Path) -> tuple[dict[str, str], list[str]]:
    header: dict[str, str] = {}
    lines = path.read_text(encoding="utf-8").splitlines()
    for i, line in enumerate(lines):
        if line.strip() == "---":
            return header, lines[i + 1 :]
        key, _, value = line.partition(":")
        header[key.strip().lower()] = value.strip()
    raise ValueError(f"{path}: missing '---' header terminator")


class DocPDF(FPDF):
    running_title = ""

    def header(self) -> None:
        if self.page_no() == 1:
            return
        self.set_font("Helvetica", "I", 8)
        self.set_text_color(110, 110, 110)
        self.cell(0, 6, self.running_title, align="R")
        self.ln(10)
        self.set_text_color(0, 0, 0)

    def footer(self) -> None:
        self.set_y(-15)
        self.set_font("Helvetica", "I", 8)
        self.set_text_color(110, 110, 110)
        self.cell(0, 10, f"Page {self.page_no()}/{{nb}}", align="C")
        self.set_text_color(0, 0, 0)


# A heading's mark -> (font size, line height, space before, space after), deepest first: "## " starts "### " too.
HEADING_STYLES = {"### ": (12, 6.5, 1.5, 1), "## ": (14, 7.5, 3, 1.5), "# ": (20, 10, 0, 4)}


def render(header: dict[str, str], body: list[str]) -> DocPDF:
    pdf = DocPDF(format="A4")
    pdf.running_title = header["title"]
    pdf.set_margins(20, 20, 20)
    pdf.set_auto_page_break(auto=True, margin=20)
    pdf.set_title(header["title"])
    if "author" in header:
        pdf.set_author(header["author"])
    if "subject" in header:
        pdf.set_subject(header["subject"])
    if "keywords" in header:
        pdf.set_keywords(header["keywords"])
    pdf.set_creator("Lumen docs toolchain (make_pdfs.py)")
    pdf.set_producer("fpdf2")
    pdf.set_creation_date(parse_date(header["date"]))
    if "modified" in header:
        pdf.lumen_mod_date = parse_date(header["modified"])  # type: ignore[attr-defined]
    pdf.add_page()

    width = pdf.epw
    paragraph: list[str] = []

    def flush() -> None:
        if paragraph:
            pdf.set_font("Helvetica", "", 10.5)
            pdf.multi_cell(width, 5.5, " ".join(paragraph), new_x="LMARGIN", new_y="NEXT")
            pdf.ln(2.5)
            paragraph.clear()

    in_code = False
    for raw in body:
        line = raw.rstrip()
        if in_code and not line.startswith("    "):
            pdf.ln(2.5)  # breathing space after a code block
            in_code = False
        if not line.strip():
            flush()
            continue
        mark = next((mark for mark in HEADING_STYLES if line.startswith(mark)), None)
        if mark is not None:
            flush()
            size, height, before, after = HEADING_STYLES[mark]
            if before:
                pdf.ln(before)
            pdf.set_font("Helvetica", "B", size)
            pdf.multi_cell(width, height, line[len(mark):], new_x="LMARGIN", new_y="NEXT")
            pdf.ln(after)
        elif line.startswith("    "):
            flush()
            pdf.set_font("Courier", "", 9.5)
            pdf.set_fill_color(242, 242, 242)
            pdf.multi_cell(width, 5, line[4:], fill=True, new_x="LMARGIN", new_y="NEXT")
            in_code = True
        elif line.startswith("- "):
            flush()
            pdf.set_font("Helvetica", "", 10.5)
            pdf.set_x(pdf.l_margin + 4)
            pdf.multi_cell(width - 4, 5.5, "- " + line[2:], new_x="LMARGIN", new_y="NEXT")
            pdf.ln(0.8)
        else:
            paragraph.append(line.strip())
    flush()
    return pdf


def main() -> int:
    sources = sorted(SOURCES.glob("*.txt"))
    if not sources:
        print(f"no sources found in {SOURCES}", file=sys.stderr)
        return 1
    for src in sources:
        header, body = parse_source(src)
        text = "\n".join(body)
        try:
            text.encode("latin-1")
        except UnicodeEncodeError as exc:
            print(f"{src.name}: non latin-1 character ({exc})", file=sys.stderr)
            return 1
        pdf = render(header, body)
        out = CORPUS / header["output"]
        out.parent.mkdir(parents=True, exist_ok=True)
        pdf.output(str(out))
        print(f"wrote {out.relative_to(HERE)} ({pdf.pages_count} pages, {out.stat().st_size} bytes)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
