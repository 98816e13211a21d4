"""Indexing one file: dates, document types, chunks, and the pipeline that runs them over what rag/parsers/ read.

The face everyone outside the package uses. Importing it, or any module of the package, loads Django's
models (the pipeline's): a script sets Django up first.
"""

from __future__ import annotations

from rag.ingest.doctypes import guess_doc_type, section_headings
from rag.ingest.pipeline import IndexOutcome, doc_type_rules, document_index

__all__ = ["IndexOutcome", "doc_type_rules", "document_index", "guess_doc_type", "section_headings"]
