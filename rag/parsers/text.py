"""Plain text: no markup, so the title and headings are guessed from layout."""

from __future__ import annotations

import re

from rag.parsers._common import NEW_LINE_IN_PARAGRAPH, BlockWriter, ParsedDocument, outline_document, squash

_UNDERLINE = re.compile(r"^\s*(?:={3,}|-{3,})\s*$")
_SEPARATOR = re.compile(r"^\s*([=\-*_#~])\1{2,}\s*$")
_NUMBERED = re.compile(r"^(\d{1,2}(?:\.\d{1,2})*)\.?\s+[A-Z]")
_HEADING_MAX = 60
_TITLE_MAX = 80


def parse_text(stem: str, text: str) -> ParsedDocument:
    """Plain text has no markup, so headings are guessed from layout; see _heading_level."""
    lines = text.splitlines()
    # Banners (`=====` above and below) are decoration: the title is the first line with words.
    first = next((index for index, line in enumerate(lines) if _has_words(line)), None)
    title, start = stem, 0
    if first is not None and len(lines[first].strip()) < _TITLE_MAX:
        title, start = squash(lines[first]), first + 1
        if start < len(lines) and _SEPARATOR.match(lines[start]):
            start += 1
    body = lines[start:]

    levels: dict[int, int | None] = {}  # line index -> level, None for "a short isolated line"
    underlines: set[int] = set()
    for index, line in enumerate(body):
        if index in underlines:
            continue
        previous_blank = index == 0 or not body[index - 1].strip() or bool(_SEPARATOR.match(body[index - 1]))
        following = body[index + 1] if index + 1 < len(body) else ""
        short = _has_words(line) and len(line.strip()) < _HEADING_MAX
        if short and previous_blank and _UNDERLINE.match(following):
            levels[index] = 1 if "=" in following else 2
            underlines.add(index + 1)
        elif previous_blank and (level := _heading_level(line, following)) != 0:
            levels[index] = level
    # Isolated short lines are the weakest signal: they are sections only where nothing
    # stronger marks sections, and subsections where something does.
    isolated_level = 2 if 1 in levels.values() else 1

    writer = BlockWriter()
    for index, line in enumerate(body):
        if index in underlines:
            continue
        if index in levels:
            writer.heading(levels[index] or isolated_level, line)
        elif _SEPARATOR.match(line):
            writer.line("")
        elif _is_term(body, index):
            writer.line("")
            writer.line(squash(line) + ":")  # "Access token: A short-lived bearer token ..." reads as one paragraph
        else:
            writer.line(line)
    return outline_document(title, "text", writer.finish(), metadata={})


_TERM_MAX_CHARS = 50


def _is_term(body: list[str], index: int) -> bool:
    """A glossary-style entry: a short line without closing punctuation after a blank line, its
    definition on the very next lines."""
    line = body[index].strip()
    previous_blank = index == 0 or not body[index - 1].strip()
    following = body[index + 1].strip() if index + 1 < len(body) else ""
    return (previous_blank and 0 < len(line) < _TERM_MAX_CHARS and _has_words(line) and line[-1] not in ".:;,!?"
            and bool(following) and not _SEPARATOR.match(body[index + 1])
            and (len(following) > len(line) or body[index + 1][:1].isspace()))


def _has_words(line: str) -> bool:
    """A row of `=` or `-` is layout, never a title or a heading."""
    return any(char.isalnum() for char in line)


def _heading_level(line: str, following: str) -> int | None:
    """Level of a heading-looking line (it already follows a blank line): 0 if not one.

    Numbered lines ("3. Configuration", "3.2 Limits") are headings unless the next line
    continues a numbered list; ALL CAPS lines are top-level; other short lines that start
    with a capital, stand alone and end without sentence punctuation return None.
    """
    stripped = line.strip()
    if not stripped or len(stripped) >= _HEADING_MAX or stripped[-1] in ".,;:" or line[0].isspace():
        return 0
    if match := _NUMBERED.match(stripped):
        if _NUMBERED.match(following.strip()):
            return 0
        return match.group(1).count(".") + 1
    letters = [char for char in stripped if char.isalpha()]
    if len(letters) >= 2 and all(char.isupper() for char in letters):
        return 1
    starts_like_a_title = stripped[0].isupper() or stripped[0].isdigit()
    if not following.strip() and starts_like_a_title and not NEW_LINE_IN_PARAGRAPH.match(line):
        return None
    return 0
