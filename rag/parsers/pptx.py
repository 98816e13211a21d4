"""PowerPoint .pptx (python-pptx): one section per slide, titled by the slide title, its text
frames in reading order (top to bottom, then left to right), tables and speaker notes."""

from __future__ import annotations

import re
from typing import Any

import pptx
from pptx.shapes.group import GroupShape

from rag.parsers._common import ParsedDocument, ParseError, Section, squash, table_row_texts
from rag.parsers._office import (
    checked_zip,
    core_metadata,
    custom_properties,
    open_package,
    placeholder_free,
    with_custom_version,
)

_ROW_TOLERANCE_EMU = 100_000  # shapes whose tops differ by less than ~3 mm sit on one row
# "Pricing (cont.)", "Pricing (continued)", "Pricing, cont'd", "Pricing (2/3)": the slide carries on the one before.
_CONTINUED = re.compile(r"[\s,:-]*[(\[]?\s*(?:cont(?:inued|'d|d|\.)?|\d+\s*/\s*\d+)\s*[)\]]?\s*$", re.IGNORECASE)


def parse_pptx(stem: str, data: bytes, *, max_unpacked_bytes: int) -> ParsedDocument:
    bundle = checked_zip(data, "pptx", max_unpacked_bytes=max_unpacked_bytes)
    presentation = open_package(pptx.Presentation, data, "pptx")
    metadata, office_dates = core_metadata(presentation.core_properties, bundle)
    with_custom_version(metadata, custom_properties(bundle))

    slides: list[tuple[str, list[str]]] = []
    for number, slide in enumerate(presentation.slides, start=1):
        title_shape = slide.shapes.title
        slide_title = squash(title_shape.text_frame.text) if title_shape is not None and title_shape.has_text_frame else ""
        paragraphs: list[str] = []
        for shape in _reading_order(list(slide.shapes)):
            if title_shape is not None and shape.shape_id == title_shape.shape_id:
                continue
            paragraphs.extend(_shape_texts(shape))
        if slide.has_notes_slide:
            notes = squash(slide.notes_slide.notes_text_frame.text) if slide.notes_slide.notes_text_frame else ""
            if notes:
                paragraphs.append(f"Speaker notes: {notes}")
        if slides and slide_title and _CONTINUED.sub("", slide_title) == _CONTINUED.sub("", slides[-1][0]):
            slide_title = slides[-1][0]  # one section over several slides (the chunker joins them)
        slides.append((slide_title or f"Slide {number}", paragraphs))

    first_title = slides[0][0] if slides and not slides[0][0].startswith("Slide ") else None
    title = placeholder_free(metadata.get("title")) or first_title or stem
    # A slide titled like the deck (the title slide) is the deck's opening text, not a section of it.
    sections = [
        Section((title,), 0, "\n\n".join(paragraphs), page=number) if slide_title == title
        else Section((title, slide_title), 1, "\n\n".join(paragraphs), page=number)
        for number, (slide_title, paragraphs) in enumerate(slides, start=1)
    ]
    if not any(section.text for section in sections):
        raise ParseError("no text in the .pptx")
    return ParsedDocument(title=title, format="pptx", sections=sections, metadata=metadata,
                          page_count=len(slides), office_dates=office_dates)


def _reading_order(shapes: list[Any]) -> list[Any]:
    """Rows from the top, left to right within a row: how a person reads a slide."""
    placed = [shape for shape in shapes if shape.top is not None and shape.left is not None]
    unplaced = [shape for shape in shapes if shape.top is None or shape.left is None]
    placed.sort(key=lambda shape: (shape.top // _ROW_TOLERANCE_EMU, shape.left))
    return [*placed, *unplaced]


def _shape_texts(shape: Any) -> list[str]:
    if isinstance(shape, GroupShape):
        return [text for inner in _reading_order(list(shape.shapes)) for text in _shape_texts(inner)]
    if getattr(shape, "has_table", False) and shape.has_table:
        rows = [[squash(cell.text) for cell in row.cells] for row in shape.table.rows]
        rows = [row for row in rows if any(row)]
        return table_row_texts(rows[0], rows[1:]) if rows else []
    if not getattr(shape, "has_text_frame", False) or not shape.has_text_frame:
        return []
    lines: list[str] = []
    for paragraph in shape.text_frame.paragraphs:
        text = squash("".join(run.text for run in paragraph.runs) or paragraph.text)
        if text:
            lines.append(f"- {text}" if paragraph.level > 0 or _is_bullet(shape) else text)
    return ["\n".join(lines)] if lines else []


def _is_bullet(shape: Any) -> bool:
    """Body placeholders are bulleted lists on most layouts."""
    try:
        return shape.is_placeholder and shape.placeholder_format.type is not None and shape.placeholder_format.idx == 1
    except ValueError:
        return False
