"""Excel .xlsx (openpyxl, read-only so sheets stream): one section per sheet, each row read
with the sheet's header row like every other table, and a bound on the cells read per sheet."""

from __future__ import annotations

from datetime import date, datetime, time
from typing import Any

import openpyxl

from rag.parsers._common import ParsedDocument, ParseError, Section, squash, table_row_texts
from rag.parsers._office import (
    checked_zip,
    core_metadata,
    custom_properties,
    open_package,
    placeholder_free,
    with_custom_version,
)


def parse_xlsx(stem: str, data: bytes, *, max_unpacked_bytes: int, max_cells_per_sheet: int) -> ParsedDocument:
    # Worksheets stream under the cell bound, so only the rest of the package counts toward the size limit.
    bundle = checked_zip(data, "xlsx", max_unpacked_bytes=max_unpacked_bytes, streamed=("xl/worksheets/",))
    workbook = open_package(lambda stream: openpyxl.load_workbook(stream, read_only=True, data_only=True), data, "xlsx")
    try:
        metadata, office_dates = core_metadata(workbook.properties, bundle)
        with_custom_version(metadata, custom_properties(bundle))
        title = placeholder_free(metadata.get("title")) or stem
        sections: list[Section] = []
        notices: list[str] = []
        for sheet in workbook.worksheets:
            rows, cells_read, cut = _sheet_rows(sheet, max_cells_per_sheet)
            if cut:
                notices.append(_cut_notice(sheet, cells_read, len(rows)))
            if not rows:
                continue
            header, body = rows[0], rows[1:]
            texts = table_row_texts(header, body) if body else table_row_texts([], [header])
            sections.append(Section((title, squash(sheet.title)), 1, "\n\n".join(texts)))
    finally:
        workbook.close()
    if not any(section.text for section in sections):
        raise ParseError("no text in the .xlsx: every sheet is empty")
    return ParsedDocument(title=title, format="xlsx", sections=sections, metadata=metadata,
                          office_dates=office_dates, notices=notices)


def _sheet_rows(sheet: Any, max_cells: int) -> tuple[list[list[str]], int, bool]:
    """Non-empty rows as cell texts, the cells read, and whether the bound cut the sheet short."""
    rows: list[list[str]] = []
    cells_read = 0
    for values in sheet.iter_rows(values_only=True):
        if cells_read + len(values) > max_cells:
            return rows, cells_read, True
        cells_read += len(values)
        cells = [_cell_text(value) for value in values]
        while cells and not cells[-1]:
            cells.pop()
        if any(cells):
            rows.append(cells)
    return rows, cells_read, False


def _cut_notice(sheet: Any, cells_read: int, rows_kept: int) -> str:
    size = ""
    if sheet.max_row and sheet.max_column:  # from the sheet's <dimension>, when the writer set it
        size = f" of about {sheet.max_row * sheet.max_column:,}"
    return (f"sheet {sheet.title!r}: read the first {cells_read:,}{size} cells ({rows_kept:,} rows with text); "
            f"the rest was skipped (bound: XLSX_MAX_CELLS_PER_SHEET)")


def _cell_text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, datetime):
        return value.date().isoformat() if value.time() == time() else value.isoformat(sep=" ", timespec="minutes")
    if isinstance(value, date):
        return value.isoformat()
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return squash(str(value))
