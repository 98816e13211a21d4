"""OpenDocument text .odt (odfpy): headings by outline level, lists, tables with their header
row, and title, dates and a user-defined "version" from meta.xml."""

from __future__ import annotations

import io
from datetime import UTC, datetime
from typing import Any

from odf import teletype
from odf.namespaces import DCNS, METANS, TABLENS, TEXTNS
from odf.opendocument import load

from rag.parsers._common import (
    Block,
    Heading,
    ParsedDocument,
    ParseError,
    build_sections,
    optional_str,
    squash,
    table_row_texts,
)
from rag.parsers._office import checked_zip, office_title, placeholder_free, with_custom_version


def parse_odt(stem: str, data: bytes, *, max_unpacked_bytes: int) -> ParsedDocument:
    checked_zip(data, "odt", max_unpacked_bytes=max_unpacked_bytes)
    try:
        document = load(io.BytesIO(data))
    except Exception as error:  # noqa: BLE001 - odfpy raises KeyError, XML errors and more on bad files
        raise ParseError(f"not a readable .odt: the file is damaged or not an .odt ({type(error).__name__})") from error
    metadata, office_dates = _meta(document.meta)
    blocks: list[Block] = []
    for element in document.text.childNodes:
        _walk(element, blocks)
    explicit = placeholder_free(metadata.get("title"))
    heading_title, blocks = office_title(blocks, explicit)
    title = explicit or heading_title or stem
    sections = build_sections(title, blocks)
    if not any(section.text for section in sections):
        raise ParseError("no text in the .odt")
    return ParsedDocument(title=title, format="odt", sections=sections, metadata=metadata, office_dates=office_dates)


def _walk(element: Any, blocks: list[Block]) -> None:
    qname = getattr(element, "qname", None)
    if qname == (TEXTNS, "h"):
        level = element.getAttrNS(TEXTNS, "outline-level")
        if text := squash(teletype.extractText(element)):
            blocks.append(Heading(int(level) if level and str(level).isdigit() else 1, text))
    elif qname == (TEXTNS, "p"):
        if text := squash(teletype.extractText(element)):
            blocks.append(text)
    elif qname == (TEXTNS, "list"):
        items = [f"- {text}" for item in _children(element, TEXTNS, "list-item")
                 if (text := squash(teletype.extractText(item)))]
        if items:
            blocks.append("\n".join(items))
    elif qname == (TABLENS, "table"):
        rows = [[squash(teletype.extractText(cell)) for cell in _cells(row)] for row in _rows(element)]
        rows = [row for row in rows if any(row)]
        if rows:
            blocks.extend(table_row_texts(rows[0], rows[1:]))
    elif qname == (TEXTNS, "section"):
        for child in element.childNodes:
            _walk(child, blocks)


def _children(element: Any, namespace: str, name: str) -> list[Any]:
    return [child for child in element.childNodes if getattr(child, "qname", None) == (namespace, name)]


def _rows(table: Any) -> list[Any]:
    """Rows, including those inside a header-rows group (which holds the header row)."""
    rows: list[Any] = []
    for child in table.childNodes:
        if getattr(child, "qname", None) == (TABLENS, "table-row"):
            rows.append(child)
        elif getattr(child, "qname", None) in ((TABLENS, "table-header-rows"), (TABLENS, "table-rows")):
            rows.extend(_children(child, TABLENS, "table-row"))
    return rows


def _cells(row: Any) -> list[Any]:
    return _children(row, TABLENS, "table-cell")


def _meta(meta: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    """meta.xml: dc:title, dc:subject, meta:keyword, dc:creator, meta:creation-date, dc:date
    (the last save), meta:editing-cycles (a save counter, kept as metadata only) and user-defined fields."""
    metadata: dict[str, Any] = {}
    dates: dict[str, Any] = {}
    custom: dict[str, str] = {}
    for child in getattr(meta, "childNodes", []):
        qname = getattr(child, "qname", None)
        value = optional_str(teletype.extractText(child))
        if value is None:
            continue
        if qname == (DCNS, "title"):
            metadata["title"] = value
        elif qname == (DCNS, "subject"):
            metadata["subject"] = value
        elif qname == (DCNS, "creator"):
            metadata["last_modified_by"] = value
        elif qname == (METANS, "initial-creator"):
            metadata["author"] = value
        elif qname == (METANS, "keyword"):
            metadata["keywords"] = f"{metadata['keywords']}, {value}" if "keywords" in metadata else value
        elif qname == (METANS, "editing-cycles"):
            metadata["revision"] = value
        elif qname == (DCNS, "date") and (moment := _iso_date(value)) is not None:
            dates["modified"] = moment
        elif qname == (METANS, "creation-date") and (moment := _iso_date(value)) is not None:
            dates["created"] = moment
        elif qname == (METANS, "user-defined") and (name := child.getAttrNS(METANS, "name")):
            custom[name] = value
    with_custom_version(metadata, custom)
    return metadata, dates


def _iso_date(value: str) -> datetime | None:
    """ODF writes ISO 8601 ("2025-03-14T09:30:00.123456789"); a time without a zone is taken as UTC."""
    text = value.strip().replace("Z", "+00:00")
    if "." in text:  # nanoseconds, which datetime cannot hold
        head, _, tail = text.partition(".")
        zone = next((tail[index:] for index, char in enumerate(tail) if char in "+-"), "")
        text = head + zone
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        return None
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)
