#!/usr/bin/env python3
"""Write the demo's Office, mail and scanned files (demo/formats/files/), and optionally a corpus
that holds them beside the demo corpus, for `eval_demo` with demo/formats/ground_truth.json.

    python demo/formats/make_formats.py                       # rewrite demo/formats/files/
    python demo/formats/make_formats.py --combined var/formats-demo   # + demo/corpus, dated, in one folder

The files are versions of existing demo documents in other formats, so families and answers
cross formats; each carries one fact of its own, asked in demo/formats/ground_truth.json:

- api/api-reference-v3.1.docx: the 3.0 Admin API reference (read from the AsciiDoc by the
  product's own parser) as Word, release 3.1 by a custom "version" property; list pages now
  go up to 500 entries (3.0: 200).
- docs/user-guide-3.0.pptx: the 3.0 user guide (Markdown) as slides, one per section, with a
  speaker note about the dashboard training.
- announcements/rate-limit-1500.eml: the product team announces that the default proxy rate
  limit rises from 1200 to 1500 requests per minute.
- scans/security-advisory-LGSA-2026-01.pdf: a one-page advisory, printed and scanned (an image
  only PDF: OCR reads it).

The existing questions (demo/ground_truth.json) keep their own corpus, so their figures stay comparable.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import shutil
import sys
from datetime import UTC, datetime
from email.message import EmailMessage
from pathlib import Path

import docx
import pptx

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from rag.parsers import parse_document  # noqa: E402
from devkit.format_files import with_custom_property  # noqa: E402
from devkit.scans import scanned_page  # noqa: E402

HERE = Path(__file__).resolve().parent
FILES = HERE / "files"
CORPUS = ROOT / "demo" / "corpus"
MANIFEST = [
    {"path": "formats/api/api-reference-v3.1.docx", "format": "docx", "version": "3.1", "date": "2026-01-15",
     "doc_type": "api", "title": "Lumen Gateway 3.1 Admin API Reference", "date_source": "Office modified property",
     "mtime": "2026-01-15T12:00:00+00:00", "version_of": "api/api-reference-v3.adoc"},
    {"path": "formats/docs/user-guide-3.0.pptx", "format": "pptx", "version": "3.0", "date": "2025-11-05",
     "doc_type": "user", "title": "Lumen Gateway 3.0 User Guide", "date_source": "Office modified property",
     "mtime": "2025-11-05T12:00:00+00:00", "version_of": "docs/user-guide-3.0.md"},
    {"path": "formats/announcements/rate-limit-1500.eml", "format": "eml", "date": "2026-02-02",
     "title": "Default proxy rate limit rises to 1500 requests per minute", "date_source": "mail Date header",
     "mtime": "2026-02-02T09:00:00+00:00"},
    {"path": "formats/scans/security-advisory-LGSA-2026-01.pdf", "format": "pdf (scanned)", "date": "2026-01-20",
     "title": "Security advisory LGSA-2026-01", "date_source": "pdf CreationDate", "mtime": "2026-01-20T12:00:00+00:00"},
]


def _saved(document) -> bytes:
    buffer = io.BytesIO()
    document.save(buffer)
    return buffer.getvalue()


def api_reference_docx() -> bytes:
    source = CORPUS / "api" / "api-reference-v3.adoc"
    parsed = parse_document(source, source.read_bytes())
    document = docx.Document()
    properties = document.core_properties
    properties.title = "Lumen Gateway 3.1 Admin API Reference"
    properties.author = "Lumen Documentation Team"
    properties.category = "API reference"
    properties.revision = 23  # an edit counter: must never become the version
    properties.created = datetime(2025, 12, 1, 9, 0, tzinfo=UTC)
    properties.modified = datetime(2026, 1, 15, 12, 0, tzinfo=UTC)
    document.add_paragraph(properties.title, style="Title")
    for section in parsed.sections:
        if section.level:
            document.add_heading(section.heading_path[-1], level=min(section.level, 3))
        for paragraph in section.text.split("\n\n"):
            text = paragraph.replace("Lumen Gateway 3.0", "Lumen Gateway 3.1").replace("maximum 200", "maximum 500")
            document.add_paragraph(text)
    return with_custom_property(_saved(document), "version", "3.1")


def user_guide_pptx() -> bytes:
    source = CORPUS / "docs" / "user-guide-3.0.md"
    parsed = parse_document(source, source.read_bytes())
    deck = pptx.Presentation()
    deck.core_properties.title = parsed.title
    deck.core_properties.author = "Lumen Documentation Team"
    deck.core_properties.modified = datetime(2025, 11, 5, 12, 0)
    opening = deck.slides.add_slide(deck.slide_layouts[0])
    opening.shapes.title.text = parsed.title
    opening.placeholders[1].text = "Training deck for API owners and team leads"
    opening.notes_slide.notes_text_frame.text = ("Dashboard training for new API owners runs on the first Tuesday of "
                                                 "every month, 10:00-12:00 CET, in the Atlas room or online.")
    for section in parsed.sections:
        if not section.text:
            continue
        slide = deck.slides.add_slide(deck.slide_layouts[1])
        slide.shapes.title.text = section.heading_path[-1] if section.level else parsed.title
        body = slide.placeholders[1].text_frame
        body.text = section.text.split("\n\n")[0]
        for paragraph in section.text.split("\n\n")[1:]:
            body.add_paragraph().text = paragraph
    return _saved(deck)


def rate_limit_eml() -> bytes:
    message = EmailMessage()
    message["Subject"] = "Default proxy rate limit rises to 1500 requests per minute"
    message["From"] = "Lumen Product Team <product@lumen.example>"
    message["To"] = "gateway-operators@lumen.example"
    message["Cc"] = "support@lumen.example"
    message["Date"] = "Mon, 02 Feb 2026 10:00:00 +0100"
    message["Message-ID"] = "<rate-limit-1500@lumen.example>"
    body = ("Hello operators,\n\nFrom 1 March 2026 the default proxy rate limit per API key rises from 1200 to "
            "1500 requests per minute, still measured over a sliding 60-second window. Consumers with their own "
            "rate_limit keep it; limits.default_rpm set in your configuration still wins.\n\nThe Admin API limit "
            "stays at 120 requests per minute per access token.\n\nThe Lumen product team\n")
    message.set_content(body)
    message.add_alternative(
        "<html><body><p>Hello operators,</p><p>From <b>1 March 2026</b> the default proxy rate limit per API key "
        "rises from 1200 to <b>1500 requests per minute</b>, still measured over a sliding 60-second window. "
        "Consumers with their own <code>rate_limit</code> keep it; <code>limits.default_rpm</code> set in your "
        "configuration still wins.</p><table><tr><th>Limit</th><th>Before</th><th>From 1 March 2026</th></tr>"
        "<tr><td>Default proxy rate limit</td><td>1200 requests per minute</td><td>1500 requests per minute</td>"
        "</tr><tr><td>Admin API rate limit</td><td>120 requests per minute</td><td>120 requests per minute</td>"
        "</tr></table><p>The Lumen product team</p></body></html>", subtype="html")
    return bytes(message)


ADVISORY = [
    "Security advisory LGSA-2026-01",
    "",
    "Affected: Lumen Gateway 3.0.0 and 3.0.1 with the Admin API exposed.",
    "A crafted cursor value can make the Admin API list endpoints return",
    "entries of another workspace. Lumen Gateway 3.0.2 fixes the issue.",
    "",
    "Operators must upgrade every node to 3.0.2 by 15 February 2026.",
    "Until then, bind the Admin API to 127.0.0.1 or a private network",
    "and rotate all service account tokens.",
    "",
    "Reported by the Lumen security team, 20 January 2026.",
]


def advisory_scan() -> bytes:
    """Printed, then scanned slightly crooked at 200 dpi: an image-only PDF."""
    page = scanned_page(ADVISORY, dpi=200, skew=1.2, blur=0.6, noise=7, seed=2026)
    buffer = io.BytesIO()
    moment = datetime(2026, 1, 20, 12, 0, tzinfo=UTC).utctimetuple()  # Pillow writes a struct_time as a PDF date
    page.convert("L").save(buffer, "PDF", resolution=200, title="", creationDate=moment, modDate=moment)
    return buffer.getvalue()


def write_files() -> None:
    outputs = {
        "api/api-reference-v3.1.docx": api_reference_docx(),
        "docs/user-guide-3.0.pptx": user_guide_pptx(),
        "announcements/rate-limit-1500.eml": rate_limit_eml(),
        "scans/security-advisory-LGSA-2026-01.pdf": advisory_scan(),
    }
    for name, data in outputs.items():
        target = FILES / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
        print(f"wrote {target.relative_to(ROOT)} ({len(data):,} bytes)")


def combined_corpus(out: Path) -> None:
    """demo/corpus and these files in one folder, each file on its intended date (git keeps no mtimes)."""
    if out.exists():
        shutil.rmtree(out)
    shutil.copytree(CORPUS, out)
    shutil.copytree(FILES, out / "formats")
    original = json.loads((ROOT / "demo" / "manifest.json").read_text())["files"]
    for entry in [*original, *MANIFEST]:
        stamp = datetime.fromisoformat(entry["mtime"]).timestamp()
        os.utime(out / entry["path"], (stamp, stamp))
    print(f"combined corpus at {out}: {sum(1 for p in out.rglob('*') if p.is_file())} files")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--combined", type=Path, help="also build the demo corpus + these files in this folder")
    parser.add_argument("--keep", action="store_true", help="do not rewrite demo/formats/files/ (use the committed ones)")
    args = parser.parse_args()
    if not args.keep:
        write_files()
    original = json.loads((ROOT / "demo" / "manifest.json").read_text())
    (HERE / "manifest.json").write_text(json.dumps({"files": [*original["files"], *MANIFEST]}, indent=2) + "\n")
    if args.combined:
        combined_corpus(args.combined)
    return 0


if __name__ == "__main__":
    sys.exit(main())
