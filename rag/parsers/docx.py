"""Word .docx (python-docx): headings from heading styles and outline levels, lists, tables
read with their header row, and the core and custom properties."""

from __future__ import annotations

import re
from typing import Any

import docx
from docx.table import Table
from docx.text.paragraph import Paragraph

from rag.parsers._common import (
    Block,
    Heading,
    ParsedDocument,
    ParseError,
    build_sections,
    squash,
    table_row_texts,
)
from rag.parsers._office import (
    checked_zip,
    core_metadata,
    custom_properties,
    office_title,
    open_package,
    placeholder_free,
    with_custom_version,
)

_HEADING_STYLE = re.compile(r"^heading\s*(\d)$", re.IGNORECASE)
_LIST_STYLE = re.compile(r"^list", re.IGNORECASE)
_BODY_OUTLINE_LEVEL = 9  # Word's "body text" outline level


def parse_docx(stem: str, data: bytes, *, max_unpacked_bytes: int) -> ParsedDocument:
    bundle = checked_zip(data, "docx", max_unpacked_bytes=max_unpacked_bytes)
    document = open_package(docx.Document, data, "docx")
    metadata, office_dates = core_metadata(document.core_properties, bundle)
    with_custom_version(metadata, custom_properties(bundle))

    blocks: list[Block] = []
    style_title: str | None = None
    list_run: list[str] = []

    def close_list() -> None:
        if list_run:
            blocks.append("\n".join(list_run))
            list_run.clear()

    for item in document.iter_inner_content():
        if isinstance(item, Table):
            close_list()
            rows = _table_rows(item)
            if rows:
                blocks.extend(table_row_texts(rows[0], rows[1:]))
            continue
        text = squash(item.text)
        if not text:
            close_list()
            continue
        style = item.style.name if item.style is not None else ""
        if style.casefold() == "title" and style_title is None:
            close_list()
            style_title = text
            continue
        level = _heading_level(item, style)
        if level:
            close_list()
            blocks.append(Heading(level, text))
        elif _is_list_item(item, style):
            list_run.append(f"- {text}")
        else:
            close_list()
            blocks.append(text)
    close_list()

    explicit = placeholder_free(metadata.get("title")) or style_title
    heading_title, blocks = office_title(blocks, explicit)
    title = explicit or heading_title or stem
    sections = build_sections(title, blocks)
    if not any(section.text for section in sections):
        raise ParseError("no text in the .docx")
    return ParsedDocument(title=title, format="docx", sections=sections, metadata=metadata,
                          doc_type=_type_hint(metadata), office_dates=office_dates)


def _type_hint(metadata: dict[str, Any]) -> str | None:
    """The document category a person set ("Runbook") is a hint for the doc-type classifier."""
    category = metadata.get("category")
    return category.lower() if isinstance(category, str) and len(category) <= 50 else None


def _outline_level(element: Any) -> int | None:
    values = element.xpath("./w:pPr/w:outlineLvl/@w:val")
    return int(values[0]) if values and values[0].isdigit() else None


def _heading_level(paragraph: Paragraph, style: str) -> int:
    """1 for "Heading 1" or outline level 0, and so on; 0 for body text."""
    if match := _HEADING_STYLE.match(style):
        return int(match.group(1))
    level = _outline_level(paragraph._p)
    if level is None and paragraph.style is not None:
        level = _outline_level(paragraph.style.element)
    return level + 1 if level is not None and level < _BODY_OUTLINE_LEVEL else 0


def _is_list_item(paragraph: Paragraph, style: str) -> bool:
    return bool(_LIST_STYLE.match(style)) or bool(paragraph._p.xpath("./w:pPr/w:numPr"))


def _table_rows(table: Table) -> list[list[str]]:
    """Rows of cell texts; a cell merged across columns appears once, not once per column."""
    rows: list[list[str]] = []
    for row in table.rows:
        cells: list[str] = []
        previous = None
        for cell in row.cells:
            if cell._tc is previous:
                continue
            previous = cell._tc
            cells.append(squash(cell.text))
        if any(cells):
            rows.append(cells)
    return rows
