"""Turn one uploaded file into a title, metadata and heading-aware sections.

Pure Python on bytes (no Django, no database), so the pipeline, the command
line and the tests call it alike. One module per format; each reduces its
format to the shared stream of headings and paragraphs in `_common`.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from rag.parsers._common import (
    Attachment,
    ParsedDocument,
    ParseError,
    ParseLimits,
    Progress,
    Section,
    UnsupportedFormat,
    decode_text,
    no_progress,
)
from rag.parsers._office import zip_entry_count
from rag.parsers.asciidoc import parse_asciidoc
from rag.parsers.docx import parse_docx
from rag.parsers.html import parse_html
from rag.parsers.mail import parse_eml, parse_msg
from rag.parsers.markdown import parse_markdown
from rag.parsers.ocr import parse_image
from rag.parsers.odt import parse_odt
from rag.parsers.pdf import parse_pdf
from rag.parsers.pptx import parse_pptx
from rag.parsers.rst import parse_rst
from rag.parsers.sniff import sniff_markup
from rag.parsers.text import parse_text
from rag.parsers.xlsx import parse_xlsx

__all__ = [
    "ACCEPTED_EXTENSIONS",
    "FORMATS_BY_EXTENSION",
    "Attachment",
    "ParseError",
    "ParseLimits",
    "ParsedDocument",
    "Progress",
    "Section",
    "UnsupportedFormat",
    "detect_format",
    "no_progress",
    "parse_document",
    "zip_entry_count",
]

FORMATS_BY_EXTENSION: dict[str, str] = {
    ".md": "markdown",
    ".markdown": "markdown",
    ".adoc": "asciidoc",
    ".asciidoc": "asciidoc",
    ".rst": "rst",
    ".txt": "text",
    ".text": "text",
    ".html": "html",
    ".htm": "html",
    ".pdf": "pdf",
    ".docx": "docx",
    ".pptx": "pptx",
    ".xlsx": "xlsx",
    ".odt": "odt",
    ".eml": "eml",
    ".msg": "msg",
    ".png": "image",
    ".jpg": "image",
    ".jpeg": "image",
    ".tif": "image",
    ".tiff": "image",
}

_TEXT_PARSERS: dict[str, Callable[[str, str], ParsedDocument]] = {
    "markdown": parse_markdown,
    "asciidoc": parse_asciidoc,
    "rst": parse_rst,
    "text": parse_text,
    "html": parse_html,
}


# Formats read from their bytes, each with the bounds it needs.
_BINARY_PARSERS: dict[str, Callable[[str, bytes, ParseLimits, Progress], ParsedDocument]] = {
    "pdf": lambda stem, data, limits, progress: parse_pdf(
        stem, data, max_ocr_pages=limits.max_ocr_pages, progress=progress),
    "docx": lambda stem, data, limits, _: parse_docx(stem, data, max_unpacked_bytes=limits.max_unpacked_bytes),
    "pptx": lambda stem, data, limits, _: parse_pptx(stem, data, max_unpacked_bytes=limits.max_unpacked_bytes),
    "xlsx": lambda stem, data, limits, _: parse_xlsx(
        stem, data, max_unpacked_bytes=limits.max_unpacked_bytes, max_cells_per_sheet=limits.max_cells_per_sheet),
    "odt": lambda stem, data, limits, _: parse_odt(stem, data, max_unpacked_bytes=limits.max_unpacked_bytes),
    "eml": lambda stem, data, _limits, _: parse_eml(stem, data),
    "msg": lambda stem, data, _limits, _: parse_msg(stem, data),
    "image": lambda stem, data, limits, progress: parse_image(
        stem, data, max_pages=limits.max_ocr_pages, progress=progress),
}

# What the upload picker offers, in the browser's `accept` syntax.
ACCEPTED_EXTENSIONS = ",".join([*FORMATS_BY_EXTENSION, ".zip"])


def detect_format(path: Path) -> str:
    """Pick the parser by extension: uploads carry reliable names, and sniffing bytes would
    index things (images, archives) that we cannot turn into text anyway."""
    suffix = path.suffix.lower()
    if suffix in FORMATS_BY_EXTENSION:
        return FORMATS_BY_EXTENSION[suffix]
    raise UnsupportedFormat(f"unsupported file type {suffix}" if suffix else "unsupported file type (no extension)")


def parse_document(
    path: Path, data: bytes, *, limits: ParseLimits = ParseLimits(), progress: Progress = no_progress
) -> ParsedDocument:
    """Parse the bytes of one file; `path` is used only for its extension and stem.

    progress hears from the slow parsers (OCR) how far they are.
    """
    doc_format = detect_format(path)
    if not data.strip():
        raise ParseError("empty file")
    if doc_format in _BINARY_PARSERS:
        return _BINARY_PARSERS[doc_format](path.stem, data, limits, progress)
    text, encoding = decode_text(data)
    if not text.strip():
        raise ParseError("empty file")
    parser_format, evidence, stem = doc_format, "", path.stem
    if doc_format == "text":
        parser_format, evidence, stem = _text_markup(path, text)
    parsed = _TEXT_PARSERS[parser_format](stem, text)
    if parser_format != doc_format:
        # Kept so that a person wondering why a .txt file has reST headings can see why.
        parsed.metadata["sniffed_from"] = doc_format
        parsed.metadata["sniff_evidence"] = evidence
    if encoding != "utf-8":
        # Kept so that someone looking at odd characters can see we guessed the encoding.
        parsed.metadata.setdefault("source_encoding", encoding)
    return parsed


def _text_markup(path: Path, text: str) -> tuple[str, str, str]:
    """The format a .txt file is really written in, the evidence, and the stem to fall back on.

    A double extension (`install.rst.txt`, Sphinx's `_sources`) names it; otherwise the
    content decides, and plain text stays plain unless the markup is unmistakable.
    """
    inner = Path(path.stem)
    named = FORMATS_BY_EXTENSION.get(inner.suffix.lower(), "text")
    if named in _TEXT_PARSERS and named != "text":
        return named, f"file name ends {inner.suffix}{path.suffix}", inner.stem
    sniffed = sniff_markup(text)
    if sniffed is None:
        return "text", "", path.stem
    return sniffed.format, f"content: {sniffed.evidence}", path.stem
