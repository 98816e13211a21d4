"""Helpers shared by the parser tests."""

from __future__ import annotations

from pathlib import Path

from rag.ingest.parsers import ParsedDocument, parse_document

FIXTURES = Path(__file__).parent / "fixtures"
DEMO_CORPUS = Path(__file__).parents[2] / "demo" / "corpus"

LOREM = (
    "Docent keeps every version of a document and prefers the newest one when it answers. "
    "Operators schedule ingestion at night so that the morning questions see fresh text. "
)


def parse_fixture(name: str) -> ParsedDocument:
    path = FIXTURES / name
    return parse_document(path, path.read_bytes())


def paths(parsed: ParsedDocument) -> list[tuple[str, ...]]:
    return [section.heading_path for section in parsed.sections]


def section(parsed: ParsedDocument, heading: str) -> str:
    return next(s.text for s in parsed.sections if s.heading_path[-1] == heading)
