"""AsciiDoc: the document header (title, author, revision line, attributes), `=` sections,
delimited blocks, and inline macros reduced to their text."""

from __future__ import annotations

import re
from typing import Any

from rag.parsers._common import (
    BlockWriter,
    InlineRules,
    ParsedDocument,
    emphasis_rules,
    outline_document,
    squash,
    strip_inline_outside_code,
    without_closing_marks,
)

_ATTRIBUTE = re.compile(r"^:(!?)([A-Za-z0-9_][A-Za-z0-9_-]*)(!?):(?:[ \t]+(.*))?$")
_SECTION = re.compile(r"^(={1,6})[ \t]+(\S.*)$")
_DELIMITER = re.compile(r"^(?:-{4,}|\.{4,}|={4,}|\*{4,}|_{4,}|\+{4,}|/{4,}|--|\|={3,}|```.*)$")
_BLOCK_ATTRIBUTES = re.compile(r"^\[[^\]]*\]$")  # [source,yaml], [NOTE], [[anchor]]
_SKIPPED_MACRO = re.compile(r"^(?:include|ifdef|ifndef|ifeval|endif|toc|image|video|audio)::")
_BLOCK_TITLE = re.compile(r"^\.([^\s.].*)$")
_REVISION = re.compile(r"^v?(?P<number>[^,:\s]+),\s*(?P<date>[^:]*)(?::\s*(?P<remark>.*))?$")
_INLINE_RULES: InlineRules = (
    (re.compile(r"<<([^,<>]+),\s*([^<>]+)>>"), r"\2"),
    (re.compile(r"<<([^,<>]+)>>"), r"\1"),
    (re.compile(r"\b(?:link|xref|mailto):([^\s\[]*)\[\]"), r"\1"),
    (re.compile(r"\b(?:link|xref|mailto|kbd|btn|menu|footnote|pass):[^\s\[]*\[([^\[\]]*)\]"), r"\1"),
    (re.compile(r"(https?://[^\s\[]+)\[\]"), r"\1"),
    (re.compile(r"https?://[^\s\[]+\[([^\[\]]+)\]"), r"\1"),
    *emphasis_rules("**", "__", "##", "++"),
    *emphasis_rules("*", "_", "+", inside_words=False),
    (re.compile(r"\s\+$"), ""),  # hard line break marker
)
_VERBATIM_BLOCKS = ("-", ".", "+", "`")
_TABLE_DELIMITER = re.compile(r"^\|={3,}$")
_HEADER_OPTION = re.compile(r"options\s*=\s*\"?[^\]\"]*header|%header")
# `term:: definition` (also `:::`, `::::` and `;;`); the marker must end the term, so macros
# such as `image::file.png[]` are not terms.
_DEFINITION = re.compile(r"^(?!\s)(.+?)(?::{2,4}|;;)(?:[ \t]+(.*))?$")
_CELL_SPEC = re.compile(r"(?:\d+\*)?(?:\d*\.?\d*\+)?[\^<>]?(?:\.[\^<>])?[adehlmsv]?$")
_ATTRIBUTE_REFERENCE = re.compile(r"\{([A-Za-z0-9_][A-Za-z0-9_-]*)\}")


def _strip_inline(text: str, attributes: dict[str, Any]) -> str:
    text = _ATTRIBUTE_REFERENCE.sub(lambda match: str(attributes.get(match.group(1), match.group(0))), text)
    return strip_inline_outside_code(text, _INLINE_RULES)


def parse_asciidoc(stem: str, text: str) -> ParsedDocument:
    metadata: dict[str, Any] = {}
    # dates.py only trusts :revdate:/:date: in the first 50 lines, so it needs to know where each was.
    attribute_lines: dict[str, int] = {}
    writer = BlockWriter()
    title: str | None = None
    open_blocks: list[str] = []
    verbatim: list[str] = []
    table: list[str] | None = None  # the lines of an open `|===` table
    table_has_header = False
    previous = ""
    header_lines_seen: int | None = None  # None: not in the header (the lines right after `= Title`)
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.rstrip()
        innermost = open_blocks[-1] if open_blocks else None
        if innermost is not None and (innermost[0] in _VERBATIM_BLOCKS or innermost.startswith("//")):
            if line == innermost or (innermost.startswith("```") and line == "```"):
                open_blocks.pop()
                if innermost[0] in _VERBATIM_BLOCKS:
                    writer.verbatim("\n".join(verbatim))
                verbatim = []
            elif innermost[0] in _VERBATIM_BLOCKS:
                verbatim.append(raw)
            continue
        if table is not None:
            if _TABLE_DELIMITER.match(line):
                header, rows = _table_rows(table, metadata, table_has_header)
                writer.table(header, rows)
                table = None
            else:
                table.append(line)
            continue
        if _TABLE_DELIMITER.match(line):
            table, table_has_header = [], bool(_HEADER_OPTION.search(previous))
            previous = line
            continue
        previous = line
        if _DELIMITER.match(line):
            if open_blocks and line == open_blocks[-1]:
                open_blocks.pop()
            else:
                open_blocks.append(line)
            writer.line("")
            header_lines_seen = None
            continue
        if line.startswith("//"):
            continue
        if match := _ATTRIBUTE.match(line):
            name = match.group(2)
            if match.group(1) or match.group(3):  # `:name!:` unsets
                metadata.pop(name, None)
                attribute_lines.pop(name, None)
            else:
                metadata[name] = (match.group(4) or "").strip()
                attribute_lines[name] = number
            continue
        if header_lines_seen is not None:
            # The header is the title, an author line and a revision line; a blank line or
            # a third line ends it and the rest is body.
            if not line or header_lines_seen >= 2:
                header_lines_seen = None
            else:
                _read_header_line(line, header_lines_seen, number, metadata, attribute_lines)
                header_lines_seen += 1
                continue
        if match := _SECTION.match(line):
            level = len(match.group(1)) - 1
            heading = _strip_inline(without_closing_marks(match.group(2), "="), metadata)
            if level == 0 and title is None and writer.is_empty():
                title, header_lines_seen = squash(heading), 0
            else:
                writer.heading(max(level, 1), heading)
            continue
        if _BLOCK_ATTRIBUTES.match(line) or _SKIPPED_MACRO.match(line):
            continue
        if (match := _DEFINITION.match(line)) and not _SKIPPED_MACRO.match(line):
            writer.line("")
            term, definition = _strip_inline(match.group(1), metadata), _strip_inline(match.group(2) or "", metadata)
            writer.line(f"{squash(term)}: {definition}".rstrip())  # the lines that follow continue it
            continue
        if match := _BLOCK_TITLE.match(line):
            writer.line("")
            writer.line(_strip_inline(match.group(1), metadata))
            writer.line("")
            continue
        writer.line(_strip_inline(line, metadata))
    if open_blocks and verbatim:  # an unclosed listing block runs to the end
        writer.verbatim("\n".join(verbatim))
    title = title or stem
    return outline_document(title, "asciidoc", writer.finish(), metadata=metadata, metadata_lines=attribute_lines)


def _table_rows(lines: list[str], attributes: dict[str, Any], has_header: bool) -> tuple[list[str], list[list[str]]]:
    """Header and rows of a `|===` table. The first line's cells give the column count; a first
    line followed by a blank line is the header even without `options="header"`, as in Asciidoctor."""
    cells_per_line: list[list[str]] = []
    for line in lines:
        if not line.strip():
            cells_per_line.append([])
            continue
        pieces = line.split("|")
        # A cell spec (`2+`, `a`, `^.^`) sits just before its `|`; text before the first `|` continues a cell.
        cells = [_strip_inline(piece.strip(), attributes) for piece in pieces[1:]]
        if pieces[0].strip() and not _CELL_SPEC.fullmatch(pieces[0].strip()):
            cells = [_strip_inline(pieces[0].strip(), attributes), *cells] if not cells_per_line else cells
        cells_per_line.append(cells)
    first = next((index for index, cells in enumerate(cells_per_line) if cells), None)
    if first is None:
        return [], []
    columns = len(cells_per_line[first])
    implicit_header = first + 1 < len(cells_per_line) and not cells_per_line[first + 1] and columns > 1
    flat = [cell for cells in cells_per_line for cell in cells]
    rows = [flat[start : start + columns] for start in range(0, len(flat), columns)]
    if (has_header or implicit_header) and rows:
        return rows[0], rows[1:]
    return [], rows


def _read_header_line(
    line: str, position: int, number: int, metadata: dict[str, Any], attribute_lines: dict[str, int]
) -> None:
    """The author line and revision line (`v2.1, 2025-03-14: remark`) under the title.

    Explicit `:revdate:` attributes win because they are assigned, and these only fill gaps.
    """
    if position == 0:
        metadata.setdefault("author", line)
        return
    match = _REVISION.match(line)
    revision_date = match.group("date").strip() if match else ("" if re.match(r"^v?\d[\w.]*$", line) else line)
    if match:
        metadata.setdefault("revnumber", match.group("number"))
        if match.group("remark"):
            metadata.setdefault("revremark", match.group("remark").strip())
    elif not revision_date:
        metadata.setdefault("revnumber", line.lstrip("v"))
    if revision_date and "revdate" not in metadata:
        metadata["revdate"] = revision_date.split(":")[0].strip()
        attribute_lines["revdate"] = number
