"""reStructuredText: adornment-styled titles and sections, directives, literal blocks."""

from __future__ import annotations

import re

from rag.ingest.parsers._common import (
    Block,
    BlockWriter,
    Heading,
    InlineRules,
    ParsedDocument,
    build_sections,
    emphasis_rules,
    squash,
)

_ADORNMENT_CHARS = set("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~")
_EXPLICIT_MARKUP = re.compile(r"^\.\.(?:\s+(.*))?$")
_DIRECTIVE = re.compile(r"^(?:\|[^|]+\|\s+)?([\w:-]+)::(?:\s+(.*))?$")
_OPTION = re.compile(r"^\s*:[\w\s-]+:(?:\s|$)")
_CODE_DIRECTIVES = {"code-block", "code", "sourcecode", "highlight", "parsed-literal"}
_DROPPED_DIRECTIVES = {
    "image", "toctree", "include", "raw", "contents", "sectnum", "meta", "index", "literalinclude",
}  # fmt: skip
_ARGUMENT_IS_TEXT = {
    "note", "warning", "tip", "important", "caution", "danger", "attention", "hint", "error",
    "admonition", "seealso", "topic", "sidebar", "rubric", "deprecated", "versionadded", "versionchanged",
}  # fmt: skip
_FIELD = re.compile(r"^:((?:[^:\\\s]|\\.)(?:[^:\\]|\\.)*):(?:\s+(.*))?$")  # `:Date: 2025-02-27`
_LITERAL = re.compile(r"``([^`]+)``")
_INLINE_RULES: InlineRules = (
    (re.compile(r":(?:[\w+.-]+:){1,2}`([^`<]*?)\s*<[^`>]*>`"), r"\1"),  # :ref:`Text <label>`
    (re.compile(r":(?:[\w+.-]+:){1,2}`([^`]*)`"), r"\1"),  # :command:`docent`, :py:func:`x`
    (re.compile(r"`([^`<]+?)\s*<[^`>]*>`__?"), r"\1"),  # `Text <https://...>`_
    (re.compile(r"`([^`]+)`__?"), r"\1"),
    *emphasis_rules("**"),
    *emphasis_rules("*", inside_words=False),
    (re.compile(r"`([^`]+)`"), r"\1"),
)


def _adornment(line: str) -> str | None:
    """The character of an underline/overline (`=====`), or None for any other line."""
    stripped = line.rstrip()
    if len(stripped) >= 3 and stripped[0] in _ADORNMENT_CHARS and stripped == stripped[0] * len(stripped):
        return stripped[0]
    return None


def _strip_inline(text: str) -> str:
    pieces = _LITERAL.split(text)
    out: list[str] = []
    for index, piece in enumerate(pieces):
        if index % 2 == 0:
            for pattern, replacement in _INLINE_RULES:
                piece = pattern.sub(replacement, piece)
        out.append(piece)
    return "".join(out)


def _indented_block(lines: list[str], start: int) -> tuple[list[str], int]:
    """Lines from `start` up to the next non-blank line that is not indented."""
    end = start
    while end < len(lines) and (not lines[end].strip() or lines[end][0].isspace()):
        end += 1
    return lines[start:end], end


def parse_rst(stem: str, text: str) -> ParsedDocument:
    lines = text.splitlines()
    writer = BlockWriter()
    styles: list[tuple[bool, str]] = []  # (has overline, character), in order of first use
    style_uses: dict[tuple[bool, str], int] = {}
    previous_blank, literal_pending = True, False
    docinfo = _Docinfo()
    index = 0

    def add_heading(style: tuple[bool, str], heading: str) -> None:
        if style not in styles:
            styles.append(style)
        style_uses[style] = style_uses.get(style, 0) + 1
        writer.heading(styles.index(style) + 1, _strip_inline(heading))

    while index < len(lines):
        line = lines[index]
        stripped = line.strip()
        if not stripped:
            writer.line("")
            previous_blank = True
            index += 1
            continue
        if literal_pending and line[0].isspace():  # the indented block after a `::` paragraph
            block, index = _indented_block(lines, index)
            writer.verbatim("\n".join(block))
            literal_pending, previous_blank = False, True
            continue
        literal_pending = False
        over = _adornment(line)
        if over and index + 2 < len(lines) and lines[index + 1].strip():
            under_line = lines[index + 2].rstrip()
            heading = lines[index + 1].strip()
            if _adornment(under_line) == over and len(under_line) >= len(heading):
                add_heading((True, over), heading)
                index += 3
                previous_blank = True
                continue
        under = _adornment(lines[index + 1]) if index + 1 < len(lines) else None
        if under and not over and previous_blank and not line[0].isspace():
            if len(lines[index + 1].rstrip()) >= len(stripped):
                add_heading((False, under), stripped)
                index += 2
                previous_blank = True
                continue
        if over:  # a transition, or an underline too short to make a heading
            writer.line("")
            index += 1
            continue
        if sum(style_uses.values()) <= 1 and _FIELD.match(line) and not writer.has_text():
            # A field list before any text, at the top or under the title: docutils' docinfo.
            block, end = _indented_block(lines, index + 1)
            docinfo.add(writer, index + 1, [line, *block])
            index = end
            previous_blank = True
            continue
        if match := _EXPLICIT_MARKUP.match(line):
            block, index = _indented_block(lines, index + 1)
            _read_explicit_markup(match.group(1) or "", block, writer)
            previous_blank = True
            continue
        if stripped == "::":
            literal_pending = True
            writer.line("")
        else:
            literal_pending = stripped.endswith("::")
            if literal_pending:  # "Example::" reads "Example:" and "Example ::" reads "Example"
                stripped = stripped[:-2].rstrip() + (":" if not stripped[:-2].endswith(" ") else "")
            writer.line(_strip_inline(stripped))
        previous_blank = False
        index += 1

    blocks = writer.finish()
    title: str | None = None
    # As docutils does: the first heading style is the title only if it titles nothing else.
    if styles and style_uses[styles[0]] == 1:
        first = next(i for i, block in enumerate(blocks) if isinstance(block, Heading))
        title = blocks[first].text  # type: ignore[union-attr]
    if docinfo.position is not None and docinfo.follows_heading and title is None:
        # Under a heading that turned out to be a section, the field list is body text.
        blocks[docinfo.position : docinfo.position] = docinfo.as_text()
        docinfo = _Docinfo()
    if title is not None:
        first = next(i for i, block in enumerate(blocks) if isinstance(block, Heading))
        blocks = [*blocks[:first], *blocks[first + 1 :]]
    title = title or stem
    return ParsedDocument(
        title=title,
        format="rst",
        sections=build_sections(title, blocks),
        metadata=docinfo.fields,
        metadata_lines=docinfo.lines,
    )


class _Docinfo:
    """The field list that opens a document (`:Date:`, `:Version:`), kept as metadata
    rather than text, the way docutils renders it apart from the body.

    Field names are lower-cased, as docutils matches them; each value is one line of text.
    """

    def __init__(self) -> None:
        self.fields: dict[str, str] = {}
        self.lines: dict[str, int] = {}
        self.raw: list[str] = []
        self.position: int | None = None  # where its text would sit among the blocks
        self.follows_heading = False

    def add(self, writer: BlockWriter, line_number: int, field_lines: list[str]) -> None:
        """Record one field: its first line, then its indented continuation."""
        if self.position is None:
            writer.flush()
            self.position = len(writer.blocks)
            self.follows_heading = bool(writer.blocks)
        match = _FIELD.match(field_lines[0])
        assert match is not None
        name = match.group(1).replace("\\", "").lower()
        self.fields[name] = squash(_strip_inline(" ".join([match.group(2) or "", *field_lines[1:]])))
        self.lines[name] = line_number
        self.raw.extend(field_lines)

    def as_text(self) -> list[Block]:
        """The paragraphs the field list reads as when it is not docinfo after all."""
        writer = BlockWriter()
        for line in self.raw:
            writer.line(_strip_inline(line.strip()))
        return writer.finish()


def _read_explicit_markup(body: str, block: list[str], writer: BlockWriter) -> None:
    """A `.. something` construct: keep what a reader sees, drop what only configures."""
    directive = _DIRECTIVE.match(body)
    writer.line("")
    if directive is None:
        if body.startswith("["):  # footnote or citation: its text is content
            writer.line(_strip_inline(body))
            for line in block:
                writer.line(_strip_inline(line))
        # otherwise a comment, a hyperlink target or a substitution: nothing to read
        writer.line("")
        return
    name, argument = directive.group(1).lower(), directive.group(2) or ""
    content = list(block)
    while content and _OPTION.match(content[0]):
        content.pop(0)
    if name in _CODE_DIRECTIVES:
        writer.verbatim("\n".join(content))
    elif name not in _DROPPED_DIRECTIVES:
        if name in _ARGUMENT_IS_TEXT and argument:
            writer.line(_strip_inline(argument))
        for line in content:
            writer.line(_strip_inline(line))
    writer.line("")
