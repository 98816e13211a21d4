"""Indexing one file: parsers (bytes to sections), dates, document types, chunks, and the pipeline that runs them.

The face everyone outside the package uses. The parsers and the document-type rules are plain Python and
load with the face (scripts convert and read files before Django is set up); the pipeline's names load on
first use, because it needs Django's models.
"""

from __future__ import annotations

from typing import Any

from rag.ingest.doctypes import guess_doc_type, section_headings
from rag.ingest.parsers import (
    ACCEPTED_EXTENSIONS,
    ParsedDocument,
    ParseError,
    Progress,
    UnsupportedFormat,
    detect_format,
    parse_document,
    zip_entry_count,
)

_FROM_PIPELINE = {"IndexOutcome", "doc_type_rules", "document_index"}

__all__ = ["ACCEPTED_EXTENSIONS", "ParseError", "ParsedDocument", "Progress", "UnsupportedFormat", "detect_format",
           "guess_doc_type", "parse_document", "section_headings", "zip_entry_count", *sorted(_FROM_PIPELINE)]


def __getattr__(name: str) -> Any:  # noqa: ANN401 - a name of pipeline.py
    if name not in _FROM_PIPELINE:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    # import here: the pipeline reads Django's models; the parsers must work before django.setup().
    from rag.ingest import pipeline

    return getattr(pipeline, name)
