"""Indexing one file: dates, document types, chunks, and the pipeline that runs them over what rag/parsers/ read.

The face everyone outside the package uses. The document-type rules are plain Python and load with the
face; the pipeline's names load on first use, because it needs Django's models.
"""

from __future__ import annotations

from typing import Any

from rag.ingest.doctypes import guess_doc_type, section_headings

_FROM_PIPELINE = {"IndexOutcome", "doc_type_rules", "document_index"}

__all__ = ["guess_doc_type", "section_headings", *sorted(_FROM_PIPELINE)]


def __getattr__(name: str) -> Any:  # noqa: ANN401 - a name of pipeline.py
    if name not in _FROM_PIPELINE:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    # import here: the pipeline reads Django's models; the document-type rules must work before django.setup().
    from rag.ingest import pipeline

    return getattr(pipeline, name)
