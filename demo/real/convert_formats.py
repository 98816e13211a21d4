#!/usr/bin/env python3
"""Convert the real (Sphinx) corpus to Word, PowerPoint, e-mail and scanned PDF, to compare retrieval across formats.

    python demo/real/convert_formats.py --corpus var/real-corpus --out var/real-formats \
        [--formats docx pptx eml scan] [--scan-max-characters 13000]

Each reStructuredText file is read by Docent's own parser (so headings, tables and code come
out as Docent reads them) and written again with the format's own library: .docx (a heading
per section, a paragraph per paragraph, core properties title and modified = the file's
mtime), .pptx (a slide per section, long sections over several slides, modified = mtime),
.eml (the HTML body with the section headings; Date = mtime), scan (an image-only PDF: the text
printed on A4 pages at 11 pt, 200 dpi, skewed up to 1.5 degrees, blurred, speckled, JPEG quality 65,
as devkit/scans.py draws them; dates only from mtime, as a scanner gives none). OCR reads about a
page every 10 CPU-seconds, so --scan-max-characters N scans only the answer files of the ground
truth up to N characters and keeps every other file as it is (a mixed corpus: the same questions,
their answers on scanned pages). OUT/<format>/ then holds
corpus/, files.json and ground_truth.json with the file names changed, for

    manage.py eval_demo --corpus OUT/docx/corpus --ground-truth OUT/docx/ground_truth.json \\
        --releases OUT/docx/files.json --workspace real-docx

Pages: the corpus's characters / 3,000 (an A4 page of prose), printed at the end.
"""

from __future__ import annotations

import argparse
import hashlib
import html
import io
import json
import os
import random
import shutil
import sys
import textwrap
from datetime import UTC, datetime
from email.message import EmailMessage
from email.utils import format_datetime
from pathlib import Path

import docx
import pptx
from pptx.util import Pt

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from rag.parsers import ParsedDocument, ParseError, parse_document  # noqa: E402
from devkit.scans import SYSTEM_FONTS, scanned_page, scanned_pdf  # noqa: E402

PAGE_CHARACTERS = 3000
SLIDE_CHARACTERS = 1500  # more text than this goes on the next slide of the same title
SCAN_LINES = 40  # lines of 11 pt text on an A4 page with 1-inch margins
SCAN_WIDTH = 80  # characters on such a line


def _saved(document) -> bytes:
    buffer = io.BytesIO()
    document.save(buffer)
    return buffer.getvalue()


def to_docx(parsed: ParsedDocument, moment: datetime) -> bytes:
    document = docx.Document()
    document.core_properties.title = parsed.title
    document.core_properties.modified = moment
    document.core_properties.created = moment
    for section in parsed.sections:
        if section.level:
            document.add_heading(section.heading_path[-1], level=min(section.level, 9))
        for paragraph in section.text.split("\n\n"):
            if paragraph.strip():
                document.add_paragraph(paragraph)
    return _saved(document)


def to_pptx(parsed: ParsedDocument, moment: datetime) -> bytes:
    deck = pptx.Presentation()
    deck.core_properties.title = parsed.title
    deck.core_properties.modified = moment.replace(tzinfo=None)
    title_slide = deck.slides.add_slide(deck.slide_layouts[0])
    title_slide.shapes.title.text = parsed.title
    for section in parsed.sections:
        if not section.text.strip():
            continue
        heading = section.heading_path[-1] if section.level else parsed.title
        pages: list[list[str]] = [[]]
        for paragraph in section.text.split("\n\n"):
            if sum(map(len, pages[-1])) + len(paragraph) > SLIDE_CHARACTERS and pages[-1]:
                pages.append([])
            pages[-1].append(paragraph)
        for paragraphs in pages:
            slide = deck.slides.add_slide(deck.slide_layouts[5])
            slide.shapes.title.text = heading
            box = slide.shapes.add_textbox(pptx.util.Inches(0.5), pptx.util.Inches(1.5), pptx.util.Inches(9),
                                           pptx.util.Inches(5))
            frame = box.text_frame
            frame.word_wrap = True
            frame.text = paragraphs[0]
            for paragraph in paragraphs[1:]:
                frame.add_paragraph().text = paragraph
            for paragraph in frame.paragraphs:
                for run in paragraph.runs:
                    run.font.size = Pt(10)
    return _saved(deck)


def to_eml(parsed: ParsedDocument, moment: datetime) -> bytes:
    message = EmailMessage()
    message["Subject"] = parsed.title
    message["From"] = "Sphinx maintainers <docs@sphinx.example>"
    message["To"] = "sphinx-users@sphinx.example"
    message["Date"] = format_datetime(moment)
    body = [f"<h1>{html.escape(parsed.title)}</h1>"]
    plain = [parsed.title]
    for section in parsed.sections:
        if section.level:
            level = min(section.level + 1, 6)
            body.append(f"<h{level}>{html.escape(section.heading_path[-1])}</h{level}>")
            plain.append(section.heading_path[-1])
        for paragraph in section.text.split("\n\n"):
            if paragraph.startswith("```"):
                body.append(f"<pre>{html.escape(paragraph.strip('`').strip())}</pre>")
            elif paragraph.strip():
                body.append(f"<p>{html.escape(paragraph)}</p>")
            plain.append(paragraph)
    message.set_content("\n\n".join(plain))
    message.add_alternative(f"<html><body>{''.join(body)}</body></html>", subtype="html")
    return bytes(message)


def scan_lines(parsed: ParsedDocument) -> list[str]:
    """The document as printed lines: title, headings and paragraphs wrapped, a blank line between them."""
    lines = [parsed.title, ""]
    for section in parsed.sections:
        if section.level:
            lines += [section.heading_path[-1], ""]
        for paragraph in section.text.split("\n\n"):
            if paragraph.startswith("```"):
                lines += [line[:SCAN_WIDTH] for line in paragraph.strip("`").strip().splitlines()] + [""]
            elif paragraph.strip():
                lines += textwrap.wrap(paragraph, SCAN_WIDTH) + [""]
    return lines


def to_scan(parsed: ParsedDocument, moment: datetime) -> bytes:
    seed = int(hashlib.sha256(parsed.title.encode()).hexdigest()[:8], 16)
    chooser = random.Random(seed)
    face = next((face for face in SYSTEM_FONTS if face.exists()), None)
    lines = scan_lines(parsed)
    # The title line of page one is printed larger (scanned_page's first line), the other pages start blank.
    pages = [scanned_page(([] if start else [""]) + lines[start:start + SCAN_LINES], dpi=200,
                          skew=chooser.uniform(-1.5, 1.5), blur=0.6, noise=7, seed=seed + start, face=face, paper=240)
             for start in range(0, len(lines), SCAN_LINES)]
    # Dated like the source: Pillow otherwise writes the conversion time, which Docent trusts over mtime.
    return scanned_pdf(pages, dpi=200, jpeg_quality=65, scanned_at=moment)


WRITERS = {"docx": to_docx, "pptx": to_pptx, "eml": to_eml, "scan": to_scan}
EXTENSIONS = {"scan": "pdf"}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", type=Path, default=ROOT / "var" / "real-corpus")
    parser.add_argument("--out", type=Path, default=ROOT / "var" / "real-formats")
    parser.add_argument("--formats", nargs="+", default=["docx", "pptx", "eml"], choices=list(WRITERS))
    parser.add_argument("--scan-max-characters", type=int, default=0,
                        help="scan only the answer files up to this size, keep the rest as they are (0: scan all)")
    args = parser.parse_args()
    files = json.loads((args.corpus / "files.json").read_text())
    questions = json.loads((args.corpus / "ground_truth.json").read_text())
    answers = {question["expected_path"] for question in questions if question.get("expected_path")}
    characters = 0
    scanned = [0, 0]  # files, A4 pages
    renamed: dict[str, dict[str, str]] = {name: {} for name in args.formats}
    for name, entry in sorted(files.items()):
        source = args.corpus / "corpus" / name
        try:
            parsed = parse_document(source, source.read_bytes())
        except ParseError as error:
            print(f"skipped {name}: {error}", file=sys.stderr)
            continue
        characters += len(parsed.text)
        moment = datetime.fromtimestamp(entry["mtime"], tz=UTC)
        for doc_format in args.formats:
            if doc_format == "scan" and args.scan_max_characters and (
                    name not in answers or len(parsed.text) > args.scan_max_characters):
                kept = args.out / doc_format / "corpus" / name
                kept.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(source, kept)
                continue
            new_name = f"{Path(name).stem}.{EXTENSIONS.get(doc_format, doc_format)}"
            target = args.out / doc_format / "corpus" / new_name
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(WRITERS[doc_format](parsed, moment))
            if doc_format == "scan":
                scanned[0] += 1
                scanned[1] += -(-len(scan_lines(parsed)) // SCAN_LINES)
            os.utime(target, (entry["mtime"], entry["mtime"]))
            renamed[doc_format][name] = new_name
    for doc_format, names in renamed.items():
        folder = args.out / doc_format
        (folder / "files.json").write_text(json.dumps({names.get(n, n): e for n, e in files.items()
                                                       if n in names or (folder / "corpus" / n).exists()}, indent=1))
        (folder / "ground_truth.json").write_text(json.dumps(_renamed(questions, names), indent=1))
    print(f"{len(files)} files, {characters:,} characters = {characters / PAGE_CHARACTERS:.0f} pages of "
          f"{PAGE_CHARACTERS} characters, written as {', '.join(args.formats)} under {args.out}")
    if "scan" in args.formats:
        print(f"scanned: {scanned[0]} files, {scanned[1]} A4 pages")
    return 0


def _renamed(value, names: dict[str, str]):
    """The ground truth with every corpus file name replaced by its converted name."""
    if isinstance(value, dict):
        return {key: _renamed(item, names) for key, item in value.items()}
    if isinstance(value, list):
        return [_renamed(item, names) for item in value]
    return names.get(value, value) if isinstance(value, str) else value


if __name__ == "__main__":
    sys.exit(main())
