"""The real corpus's scanned-PDF writer (demo/real/convert_formats.py): printed pages, no text layer."""

from __future__ import annotations

from datetime import UTC, datetime

import pypdfium2

from demo.real.convert_formats import SCAN_LINES, SCAN_WIDTH, scan_lines, to_scan
from rag.parsers import ParsedDocument, Section


def test_a_document_is_printed_on_a4_pages_with_no_text_layer() -> None:
    paragraph = "Sphinx builds HTML from reStructuredText sources, and the output folder is configurable. " * 6
    parsed = ParsedDocument(title="Configuration", format="rst", sections=[
        Section(("Configuration", "Options"), 1, "\n\n".join([paragraph] * 12)),
        Section(("Configuration", "Example"), 1, "```\nproject = 'demo'\n```")])
    lines = scan_lines(parsed)
    assert lines[:4] == ["Configuration", "", "Options", ""]
    assert "project = 'demo'" in lines and max(map(len, lines)) <= SCAN_WIDTH
    document = pypdfium2.PdfDocument(to_scan(parsed, datetime(2024, 1, 1, tzinfo=UTC)))
    assert document.get_metadata_dict()["CreationDate"].startswith("D:20240101")  # the source's date, not today's
    assert len(document) == -(-len(lines) // SCAN_LINES) > 1
    assert all(not document[number].get_textpage().get_text_range().strip() for number in range(len(document)))
