"""What every format parser shares: the result types, decoding, and the outline builder.

Every format is reduced to the same stream of headings and paragraphs, and one outline
builder turns that stream into sections, so the rules for titles, level numbering and
breadcrumbs live in one place instead of six.
"""

from __future__ import annotations

import codecs
import re
import textwrap
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any


class UnsupportedFormat(Exception):
    """The file type is not one we index; the message names it."""


class ParseError(Exception):
    """The file is of a supported type but unusable; the message is for a person."""


@dataclass(frozen=True)
class Section:
    """The text under one heading, not including its subsections or the heading line.

    `heading_path` runs from the document title down to this heading; `level` is 0 for
    text before the first heading, 1 for top-level sections, and so on.
    """

    heading_path: tuple[str, ...]
    level: int
    text: str  # whitespace-normalized paragraphs joined by a blank line; code keeps its lines
    page: int | None = None  # 1-based page or slide the section starts on, where the format has pages


@dataclass(frozen=True)
class Attachment:
    """A file carried inside another (a mail attachment), indexed as a document of its own."""

    name: str
    data: bytes


@dataclass
class ParsedDocument:
    """What every parser returns, whatever the format, so the pipeline has one shape to store.

    metadata values are JSON-friendly (strings mostly; Markdown frontmatter may nest; reST's
    version_directives lists Sphinx versionadded/versionchanged/deprecated as {kind, version};
    sniffed_from and sniff_evidence say why a .txt file was read as reST or Markdown).
    tags, entities, doc_type and source_type come from Markdown frontmatter only;
    pdf_dates holds the raw ModDate/CreationDate strings for dates.py to interpret;
    metadata_lines gives the source line of each AsciiDoc attribute and reST docinfo
    field, because dates.py trusts a date only near the top of the file.
    office_dates holds the created/modified dates an office suite or mail header wrote
    (datetimes, keyed "modified", "created", "mail_date") for dates.py;
    attachments are mail attachments of supported types; notices say what was left out
    (cells past the bound, pages OCR could not read) for the job to show;
    ocr_pages lists the 1-based pages whose text came from OCR.
    """

    title: str
    format: str
    sections: list[Section]
    metadata: dict[str, Any] = field(default_factory=dict)
    tags: list[str] = field(default_factory=list)
    entities: list[str] = field(default_factory=list)
    doc_type: str | None = None
    source_type: str | None = None
    pdf_dates: dict[str, str] = field(default_factory=dict)
    page_count: int | None = None
    metadata_lines: dict[str, int] = field(default_factory=dict)
    office_dates: dict[str, Any] = field(default_factory=dict)
    attachments: list[Attachment] = field(default_factory=list)
    notices: list[str] = field(default_factory=list)
    ocr_pages: list[int] = field(default_factory=list)

    @property
    def text(self) -> str:
        """Body text of the whole document, for content hashes and classification."""
        return "\n\n".join(section.text for section in self.sections if section.text)


# --- decoding -------------------------------------------------------------------------------

# C0 controls other than tab/newline/form feed/carriage return, DEL, and C1 controls: text
# editors do not write these, so many of them mean we were handed a binary file.
_CONTROL_CHARS = re.compile(r"[\x00-\x08\x0b\x0e-\x1f\x7f-\x9f]")
_BINARY_CONTROL_RATIO = 0.05


def decode_text(data: bytes) -> tuple[str, str]:
    """Decode as UTF-8 when valid, else as Windows-1252 (then Latin-1, which never fails):
    a Windows user's legacy file is normal input, not an error."""
    text: str | None = None
    encoding = "utf-16"
    if data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        # Tried before the NUL test: UTF-16 text is full of NUL bytes.
        try:
            text = data.decode("utf-16")
        except UnicodeDecodeError:
            text = None
    if text is None:
        if b"\x00" in data:
            raise ParseError("binary content in a text file")
        for encoding in ("utf-8-sig", "cp1252", "latin-1"):
            try:
                text = data.decode(encoding)
                break
            except UnicodeDecodeError:
                continue
    assert text is not None  # latin-1 decodes any bytes
    sample = text[:8192]
    if sample and len(_CONTROL_CHARS.findall(sample)) > _BINARY_CONTROL_RATIO * len(sample):
        raise ParseError("binary content in a text file")
    return text, "utf-8" if encoding == "utf-8-sig" else encoding


# --- the shared outline ---------------------------------------------------------------------


@dataclass(frozen=True)
class Heading:
    level: int
    text: str


Block = Heading | str  # a str block is one finished paragraph

# Lines that begin a new line inside a paragraph instead of continuing the previous one:
# list items and table rows read as a run-on sentence otherwise.
NEW_LINE_IN_PARAGRAPH = re.compile(r"^\s*(?:[-*+•]|\d{1,3}[.)]|\.{1,5}|\*{1,5}|\|)\s")


CODE_FENCE = "```"


def squash(text: str) -> str:
    return " ".join(text.split())


def optional_str(value: Any) -> str | None:
    text = squash(str(value)) if value is not None else ""
    return text or None


class BlockWriter:
    """Collects headings and paragraphs in reading order for the line-based formats."""

    def __init__(self, inline: Callable[[str], str] | None = None) -> None:
        self.blocks: list[Block] = []
        self._lines: list[str] = []
        # Inline markup is removed per joined line, so a role or link that wraps lines still matches.
        self._inline = inline

    def line(self, text: str) -> None:
        """Add a source line; a blank one ends the current paragraph."""
        self._lines.append(text)

    def heading(self, level: int, text: str) -> None:
        self.flush()
        text = squash(text)
        if text:
            self.blocks.append(Heading(level, text))

    def verbatim(self, text: str) -> None:
        """Add a code or literal block as one fenced paragraph, keeping its line breaks: the
        fence tells the answerer (rag.sentences) that this is code, never prose to quote."""
        self.flush()
        text = textwrap.dedent(text.strip("\n")).rstrip()
        if text.strip():
            self.blocks.append(f"{CODE_FENCE}\n{text}\n{CODE_FENCE}")

    def table(self, header: Sequence[str], rows: Sequence[Sequence[str]]) -> None:
        """Add a table as one paragraph per row, each row readable on its own with its headers."""
        self.flush()
        self.blocks.extend(table_row_texts(header, rows))

    def definition(self, term: str, definition: str) -> None:
        """Add a definition-list entry as one paragraph, so the term never loses its value."""
        self.flush()
        if text := definition_text(term, definition):
            self.blocks.append(text)

    def flush(self) -> None:
        current: list[str] = []
        for raw in [*self._lines, ""]:
            text = squash(raw)
            if not text:
                if current:
                    self.blocks.append("\n".join(map(self._inline, current) if self._inline else current))
                current = []
            elif current and not NEW_LINE_IN_PARAGRAPH.match(raw):
                current[-1] += " " + text
            else:
                current.append(text)
        self._lines = []

    def finish(self) -> list[Block]:
        self.flush()
        return self.blocks

    def is_empty(self) -> bool:
        return not self.blocks and not any(line.strip() for line in self._lines)

    def has_text(self) -> bool:
        """Whether any paragraph has been written yet; headings do not count."""
        return any(isinstance(block, str) for block in self.blocks) or any(line.strip() for line in self._lines)


def take_title_heading(blocks: Sequence[Block], explicit_title: str | None) -> tuple[str | None, list[Block]]:
    """Find the level-1 heading that titles the document and drop it from the outline.

    Without an explicit title (frontmatter, <title>) the first H1 is the title. With one,
    the first H1 still is when it opens the outline and is either the only H1 or repeats
    the explicit title; otherwise it is a real section and stays.
    """
    headings = [index for index, block in enumerate(blocks) if isinstance(block, Heading)]
    top_level = [index for index in headings if blocks[index].level == 1]  # type: ignore[union-attr]
    if not top_level:
        return None, list(blocks)
    first = top_level[0]
    heading = blocks[first]
    assert isinstance(heading, Heading)
    if explicit_title is not None:
        opens_outline = first == headings[0]
        repeats_title = squash(heading.text).casefold() == squash(explicit_title).casefold()
        if not (opens_outline and (len(top_level) == 1 or repeats_title)):
            return None, list(blocks)
    return heading.text, [*blocks[:first], *blocks[first + 1 :]]


def build_sections(title: str, blocks: Sequence[Block]) -> list[Section]:
    """Group paragraphs under their heading and give each a breadcrumb from the title.

    The shallowest heading level present becomes level 1, so a Markdown file whose
    sections start at `##` (the `#` being the title) numbers them like any other.
    """
    levels = [block.level for block in blocks if isinstance(block, Heading)]
    shift = min(levels, default=1) - 1
    sections: list[Section] = []
    trail: list[Heading] = []
    current: Heading | None = None
    paragraphs: list[str] = []

    def close() -> None:
        if current is None:
            if paragraphs:
                sections.append(Section((title,), 0, "\n\n".join(paragraphs)))
        else:
            path = (title, *(heading.text for heading in trail))
            sections.append(Section(path, current.level, "\n\n".join(paragraphs)))

    for block in blocks:
        if isinstance(block, str):
            paragraphs.append(block)
            continue
        close()
        paragraphs = []
        current = Heading(block.level - shift, block.text)
        while trail and trail[-1].level >= current.level:
            trail.pop()
        trail.append(current)
    close()
    return sections


# --- tables and definition lists -----------------------------------------------------------------


def outline_document(title: str, format: str, blocks: Sequence[Block], **fields: Any) -> ParsedDocument:
    """A document whose sections are its outline (the markup formats): the blocks grouped under their headings."""
    return ParsedDocument(title=title, format=format, sections=build_sections(title, blocks), **fields)


def joined_line(paragraph: str, line: str) -> str:
    """A wrapped line added to its paragraph (PDF text, OCR): a word hyphenated across the break is made whole."""
    if paragraph.endswith("-") and line[:1].islower():
        return paragraph[:-1] + line
    return f"{paragraph} {line}"


def _sentence(text: str) -> str:
    text = squash(text)
    return text if not text or text[-1] in ".!?:;" else text + "."


def table_row_texts(header: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    """"Rate limit per API key: 2.0: 600 requests per minute; 2.1: 1000 requests per minute."

    The first cell names the row; every other cell is read with its column's header, so a
    row quoted alone still says what each value means. Without a header the cells are joined.
    """
    header = [squash(cell) for cell in header]
    texts: list[str] = []
    if len(header) < 2:
        rows = [header, *rows]  # one cell names no columns: it is a row like the others, not to be dropped
    for row in rows:
        cells = [squash(cell) for cell in row]
        if not any(cells):
            continue
        if len(header) < 2 or len(cells) < 2:
            texts.append(_sentence("; ".join(cell for cell in cells if cell)))
            continue
        named = [f"{name}: {value}" if name else value
                 for name, value in zip(header[1:], cells[1:]) if value]
        label = cells[0] or header[0]
        texts.append(_sentence(f"{label}: {'; '.join(named)}" if named else label))
    return texts


def definition_text(term: str, definition: str) -> str:
    """"auth.token_ttl: Default 12h. Lifetime of Admin API access tokens." as one paragraph."""
    term, definition = squash(term).rstrip(":"), squash(definition)
    if not term:
        return definition
    return f"{term}: {definition}" if definition else term


# --- inline markup --------------------------------------------------------------------------

InlineRules = tuple[tuple[re.Pattern[str], "str | Callable[[re.Match[str]], str]"], ...]  # a replacement or a function

_CODE_SPAN = re.compile(r"(`+)([^`]+)\1")


def emphasis_rules(*markers: str, inside_words: bool = True) -> list[tuple[re.Pattern[str], str]]:
    """Patterns that unwrap `**text**` and friends. The text may not contain the marker's
    character, which keeps matching linear on lines full of stray asterisks."""
    rules = []
    for marker in markers:
        char, quoted = re.escape(marker[0]), re.escape(marker)
        pattern = rf"{quoted}(?=[^\s{char}])([^{char}]+?)(?<=[^\s{char}]){quoted}"
        if not inside_words:  # single `*` / `_` only count at word edges: snake_case stays
            pattern = rf"(?<![\w{char}]){pattern}(?![\w{char}])"
        rules.append((re.compile(pattern), r"\1"))
    return rules


def strip_inline_outside_code(text: str, rules: InlineRules) -> str:
    """Apply markup rules to prose only; backtick code spans keep their text untouched
    (`**kwargs`), minus the backticks."""
    pieces = _CODE_SPAN.split(text)
    out: list[str] = []
    for index, piece in enumerate(pieces):
        kind = index % 3  # split() yields prose, backtick run, code, prose, ...
        if kind == 0:
            for pattern, replacement in rules:
                piece = pattern.sub(replacement, piece)
            out.append(piece)
        elif kind == 2:
            out.append(piece.strip())
    return "".join(out)


def without_closing_marks(heading: str, mark: str) -> str:
    """`## Title ##` -> `Title`. Plain string work: a regex for this backtracks badly on
    long runs of spaces."""
    stripped = heading.rstrip()
    candidate = stripped.rstrip(mark)
    if candidate != stripped and (not candidate or candidate[-1] in " \t"):
        return candidate.rstrip()
    return stripped


@dataclass(frozen=True)
class ParseLimits:
    """Bounds on what one file may cost; the pipeline fills them from settings."""

    max_unpacked_bytes: int = 256 * 1024 * 1024  # what an Office/OpenDocument zip may unpack to
    max_cells_per_sheet: int = 200_000  # cells read per spreadsheet sheet; the rest is skipped and said
    max_ocr_pages: int = 60  # pages OCR reads per file: ~5 s each on one core, under the task time limit


# Parsers that take long (OCR) say how far they are, e.g. "OCR page 3 of 12", for the job page.
Progress = Callable[[str], None]


def no_progress(_message: str) -> None:
    """The default when nobody is watching (tests, the command line)."""
