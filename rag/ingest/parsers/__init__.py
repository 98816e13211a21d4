"""Turn one uploaded file into a title, metadata and heading-aware sections.

Pure Python on bytes (no Django, no database), so the pipeline, the command
line and the tests call it alike. One module per format; each reduces its
format to the shared stream of headings and paragraphs in `_common`.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from rag.ingest.parsers._common import ParsedDocument, ParseError, Section, UnsupportedFormat, decode_text
from rag.ingest.parsers.asciidoc import parse_asciidoc
from rag.ingest.parsers.html import parse_html
from rag.ingest.parsers.markdown import parse_markdown
from rag.ingest.parsers.pdf import parse_pdf
from rag.ingest.parsers.rst import parse_rst
from rag.ingest.parsers.text import parse_text

__all__ = [
    "FORMATS_BY_EXTENSION",
    "ParseError",
    "ParsedDocument",
    "Section",
    "UnsupportedFormat",
    "detect_format",
    "parse_document",
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
}

_TEXT_PARSERS: dict[str, Callable[[str, str], ParsedDocument]] = {
    "markdown": parse_markdown,
    "asciidoc": parse_asciidoc,
    "rst": parse_rst,
    "text": parse_text,
    "html": parse_html,
}


def detect_format(path: Path) -> str:
    """Pick the parser by extension: uploads carry reliable names, and sniffing bytes would
    index things (images, archives) that we cannot turn into text anyway."""
    suffix = path.suffix.lower()
    if suffix in FORMATS_BY_EXTENSION:
        return FORMATS_BY_EXTENSION[suffix]
    raise UnsupportedFormat(f"unsupported file type {suffix}" if suffix else "unsupported file type (no extension)")


def parse_document(path: Path, data: bytes) -> ParsedDocument:
    """Parse the bytes of one file; `path` is used only for its extension and stem."""
    doc_format = detect_format(path)
    if not data.strip():
        raise ParseError("empty file")
    if doc_format == "pdf":
        return parse_pdf(path.stem, data)
    text, encoding = decode_text(data)
    if not text.strip():
        raise ParseError("empty file")
    parsed = _TEXT_PARSERS[doc_format](path.stem, text)
    if encoding != "utf-8":
        # Kept so that someone looking at odd characters can see we guessed the encoding.
        parsed.metadata.setdefault("source_encoding", encoding)
    return parsed
