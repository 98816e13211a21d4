"""Turn one uploaded file into a title, metadata and heading-aware sections.

Pure Python on bytes (no Django, no database), so the pipeline, the command
line and the tests call it alike. Every format is reduced to the same stream
of headings and paragraphs, and one outline builder turns that stream into
sections, so the rules for titles, level numbering and breadcrumbs live in
one place instead of six.
"""

from __future__ import annotations

import codecs
import io
import math
import re
import statistics
import textwrap
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import date, datetime
from pathlib import Path
from typing import Any

import pdfplumber
import yaml
from bs4 import BeautifulSoup, NavigableString, Tag
from bs4.element import Comment, Declaration, Doctype, ProcessingInstruction
from frontmatter.default_handlers import YAMLHandler
from pdfminer.pdfdocument import PDFEncryptionError
from pdfplumber.utils.exceptions import PdfminerException

FORMATS_BY_EXTENSION: dict[str, str] = {
    ".md": "markdown",
    ".markdown": "markdown",
    ".adoc": "asciidoc",
    ".asciidoc": "asciidoc",
    ".rst": "rst",
    ".txt": "text",
    ".text": "text",
    ".html": "html",
    ".htm": "html",
    ".pdf": "pdf",
}


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


@dataclass
class ParsedDocument:
    """What every parser returns, whatever the format, so the pipeline has one shape to store.

    tags, entities, doc_type and source_type come from Markdown frontmatter only;
    pdf_dates holds the raw ModDate/CreationDate strings for dates.py to interpret.
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

    @property
    def text(self) -> str:
        """Body text of the whole document, for content hashes and classification."""
        return "\n\n".join(section.text for section in self.sections if section.text)


def detect_format(path: Path) -> str:
    """Pick the parser by extension: uploads carry reliable names, and sniffing bytes would
    index things (images, archives) that we cannot turn into text anyway."""
    suffix = path.suffix.lower()
    if suffix in FORMATS_BY_EXTENSION:
        return FORMATS_BY_EXTENSION[suffix]
    raise UnsupportedFormat(f"unsupported file type {suffix}" if suffix else "unsupported file type (no extension)")


def parse_document(path: Path, data: bytes) -> ParsedDocument:
    """Parse the bytes of one file; `path` is used only for its extension and stem."""
    doc_format = detect_format(path)
    if not data.strip():
        raise ParseError("empty file")
    if doc_format == "pdf":
        return _parse_pdf(path.stem, data)
    text, encoding = _decode_text(data)
    if not text.strip():
        raise ParseError("empty file")
    parsed = _TEXT_PARSERS[doc_format](path.stem, text)
    if encoding != "utf-8":
        # Kept so that someone looking at odd characters can see we guessed the encoding.
        parsed.metadata.setdefault("source_encoding", encoding)
    return parsed


# --- decoding -------------------------------------------------------------------------------

# C0 controls other than tab/newline/form feed/carriage return, DEL, and C1 controls: text
# editors do not write these, so many of them mean we were handed a binary file.
_CONTROL_CHARS = re.compile(r"[\x00-\x08\x0b\x0e-\x1f\x7f-\x9f]")
_BINARY_CONTROL_RATIO = 0.05


def _decode_text(data: bytes) -> tuple[str, str]:
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
class _Heading:
    level: int
    text: str


_Block = _Heading | str  # a str block is one finished paragraph

# Lines that begin a new line inside a paragraph instead of continuing the previous one:
# list items and table rows read as a run-on sentence otherwise.
_NEW_LINE_IN_PARAGRAPH = re.compile(r"^\s*(?:[-*+•]|\d{1,3}[.)]|\.{1,5}|\*{1,5}|\|)\s")


def _squash(text: str) -> str:
    return " ".join(text.split())


def _fold(text: str) -> str:
    return _squash(text).casefold()


class _BlockWriter:
    """Collects headings and paragraphs in reading order for the line-based formats."""

    def __init__(self) -> None:
        self.blocks: list[_Block] = []
        self._lines: list[str] = []

    def line(self, text: str) -> None:
        """Add a source line; a blank one ends the current paragraph."""
        self._lines.append(text)

    def heading(self, level: int, text: str) -> None:
        self.flush()
        text = _squash(text)
        if text:
            self.blocks.append(_Heading(level, text))

    def verbatim(self, text: str) -> None:
        """Add a code or literal block as one paragraph, keeping its line breaks."""
        self.flush()
        text = textwrap.dedent(text.strip("\n")).rstrip()
        if text.strip():
            self.blocks.append(text)

    def flush(self) -> None:
        current: list[str] = []
        for raw in [*self._lines, ""]:
            text = _squash(raw)
            if not text:
                if current:
                    self.blocks.append("\n".join(current))
                current = []
            elif current and not _NEW_LINE_IN_PARAGRAPH.match(raw):
                current[-1] += " " + text
            else:
                current.append(text)
        self._lines = []

    def finish(self) -> list[_Block]:
        self.flush()
        return self.blocks

    def is_empty(self) -> bool:
        return not self.blocks and not any(line.strip() for line in self._lines)


def _take_title_heading(blocks: Sequence[_Block], explicit_title: str | None) -> tuple[str | None, list[_Block]]:
    """Find the level-1 heading that titles the document and drop it from the outline.

    Without an explicit title (frontmatter, <title>) the first H1 is the title. With one,
    the first H1 still is when it opens the outline and is either the only H1 or repeats
    the explicit title; otherwise it is a real section and stays.
    """
    headings = [index for index, block in enumerate(blocks) if isinstance(block, _Heading)]
    top_level = [index for index in headings if blocks[index].level == 1]  # type: ignore[union-attr]
    if not top_level:
        return None, list(blocks)
    first = top_level[0]
    heading = blocks[first]
    assert isinstance(heading, _Heading)
    if explicit_title is not None:
        opens_outline = first == headings[0]
        if not (opens_outline and (len(top_level) == 1 or _fold(heading.text) == _fold(explicit_title))):
            return None, list(blocks)
    return heading.text, [*blocks[:first], *blocks[first + 1 :]]


def _build_sections(title: str, blocks: Sequence[_Block]) -> list[Section]:
    """Group paragraphs under their heading and give each a breadcrumb from the title.

    The shallowest heading level present becomes level 1, so a Markdown file whose
    sections start at `##` (the `#` being the title) numbers them like any other.
    """
    levels = [block.level for block in blocks if isinstance(block, _Heading)]
    shift = min(levels, default=1) - 1
    sections: list[Section] = []
    trail: list[_Heading] = []
    current: _Heading | None = None
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
        current = _Heading(block.level - shift, block.text)
        while trail and trail[-1].level >= current.level:
            trail.pop()
        trail.append(current)
    close()
    return sections


def _emphasis_rules(*markers: str, inside_words: bool = True) -> list[tuple[re.Pattern[str], str]]:
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


def _without_closing_marks(heading: str, mark: str) -> str:
    """`## Title ##` -> `Title`. Plain string work: a regex for this backtracks badly on
    long runs of spaces."""
    stripped = heading.rstrip()
    candidate = stripped.rstrip(mark)
    if candidate != stripped and (not candidate or candidate[-1] in " \t"):
        return candidate.rstrip()
    return stripped


def _as_list(value: Any) -> list[str]:
    """Frontmatter lists arrive as YAML lists or as one comma-separated string."""
    if value is None:
        return []
    items = value.split(",") if isinstance(value, str) else value if isinstance(value, list | tuple | set) else [value]
    result: list[str] = []
    for item in items:
        text = _squash(str(item)) if item is not None else ""
        if text and text not in result:
            result.append(text)
    return result


def _optional_str(value: Any) -> str | None:
    text = _squash(str(value)) if value is not None else ""
    return text or None


def _json_safe(value: Any) -> Any:
    """Metadata is stored in a JSON column, and YAML hands us dates and other objects."""
    if isinstance(value, dict):
        return {str(key): _json_safe(item) for key, item in value.items()}
    if isinstance(value, list | tuple | set):
        return [_json_safe(item) for item in value]
    if isinstance(value, datetime | date):
        return value.isoformat()
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)  # YAML's .nan/.inf: JSON (and PostgreSQL's jsonb) has no such number
    if value is None or isinstance(value, str | int | float | bool):
        return value
    return str(value)


# --- Markdown -------------------------------------------------------------------------------


class _LenientYAMLLoader(yaml.SafeLoader):
    """SafeLoader that keeps an impossible date (`2025-13-45`) as text, since PyYAML would
    otherwise reject the whole frontmatter and dates.py decides what a date is worth, and
    that refuses aliases: nobody needs them in frontmatter, and nested aliases ("billion
    laughs") would blow up when we copy the metadata into JSON."""

    def compose_node(self, parent: Any, index: Any) -> Any:
        if self.check_event(yaml.AliasEvent):
            mark = self.peek_event().start_mark
            raise yaml.composer.ComposerError(None, None, "aliases are not allowed in frontmatter", mark)
        return super().compose_node(parent, index)


def _construct_timestamp_or_text(loader: yaml.SafeLoader, node: yaml.Node) -> Any:
    try:
        return yaml.SafeLoader.construct_yaml_timestamp(loader, node)  # type: ignore[arg-type]
    except ValueError:
        return loader.construct_scalar(node)  # type: ignore[arg-type]


_LenientYAMLLoader.add_constructor("tag:yaml.org,2002:timestamp", _construct_timestamp_or_text)


class _LenientYAMLHandler(YAMLHandler):
    def load(self, fm: str, **kwargs: object) -> Any:
        return yaml.load(fm, Loader=_LenientYAMLLoader)  # noqa: S506 - a SafeLoader subclass


def _split_frontmatter(text: str) -> tuple[dict[str, Any], str, str | None]:
    """Return (frontmatter, body, error). Broken YAML never fails the document: its lines
    stay in the body as text (minus the `---` fences, which would read as headings)."""
    handler = _LenientYAMLHandler()
    text = text.lstrip("\n")
    if not handler.detect(text):
        return {}, text, None
    try:
        raw, body = handler.split(text)
    except ValueError:  # no closing fence: the opening `---` was a rule, not frontmatter
        return {}, text, None
    try:
        data = handler.load(raw)
    except (yaml.YAMLError, RecursionError) as error:
        reason = _squash(str(error).splitlines()[0]) if str(error) else type(error).__name__
        return {}, raw + "\n\n" + body, f"invalid YAML: {reason}"
    if data is None:
        return {}, body, None
    if not isinstance(data, dict):
        return {}, raw + "\n\n" + body, "frontmatter is not a mapping of keys to values"
    return data, body, None


_MD_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_MD_ATX = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]+(.*))?$")
_MD_SETEXT_UNDERLINE = re.compile(r"^ {0,3}(?:={2,}|-{2,})[ \t]*$")
_MD_RULE = re.compile(r"^ {0,3}(?:(?:-[ \t]*){3,}|(?:\*[ \t]*){3,}|(?:_[ \t]*){3,})$")
_MD_LINK_DEFINITION = re.compile(r"^ {0,3}\[[^\]]+\]:\s+\S")
_MD_QUOTE = re.compile(r"^\s{0,3}(?:>\s?)+")
_MD_CODE_SPAN = re.compile(r"(`+)([^`]+)\1")
_MD_INLINE_RULES: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"!\[([^\[\]]*)\]\([^()]*\)"), r"\1"),  # image -> alt text
    (re.compile(r"\[([^\[\]]+)\](?:\([^()]*\)|\[[^\[\]]*\])"), r"\1"),  # link -> its text
    (re.compile(r"<((?:https?|mailto):[^>\s]+)>"), r"\1"),  # autolink
    *_emphasis_rules("**", "__", "~~"),
    *_emphasis_rules("*", "_", inside_words=False),
)


def _strip_markdown_inline(text: str) -> str:
    """Drop emphasis and link markup; code spans keep their text untouched (`**kwargs`)."""
    pieces = _MD_CODE_SPAN.split(text)
    out: list[str] = []
    for index, piece in enumerate(pieces):
        kind = index % 3  # split() yields prose, backtick run, code, prose, ...
        if kind == 0:
            for pattern, replacement in _MD_INLINE_RULES:
                piece = pattern.sub(replacement, piece)
            out.append(piece)
        elif kind == 2:
            out.append(piece.strip())
    return "".join(out)


def _is_table_divider(line: str) -> bool:
    """`|---|:--:|` under a table header: no content, only layout."""
    stripped = line.strip()
    return "|" in stripped and "---" in stripped and set(stripped) <= set("|-: \t")


def _without_html_comments(text: str) -> str:
    """Drop `<!-- ... -->`; an unclosed one is left as text. str.find, not a regex, so
    a file full of unclosed comment openers stays linear."""
    kept: list[str] = []
    position = 0
    while (start := text.find("<!--", position)) != -1:
        end = text.find("-->", start + 4)
        if end == -1:
            break
        kept.append(text[position:start])
        position = end + 3
    kept.append(text[position:])
    return "".join(kept)


def _parse_markdown(stem: str, text: str) -> ParsedDocument:
    frontmatter, body, frontmatter_error = _split_frontmatter(text)
    lines = _without_html_comments(body).splitlines()
    writer = _BlockWriter()
    fence: str | None = None
    code: list[str] = []
    in_paragraph = False  # a setext underline only makes a heading of a one-line paragraph
    index = 0
    while index < len(lines):
        line = lines[index]
        index += 1
        if fence is not None:
            if line.strip().startswith(fence) and set(line.strip()) == {fence[0]}:
                writer.verbatim("\n".join(code))
                fence, code = None, []
            else:
                code.append(line)
            continue
        if match := _MD_FENCE.match(line):
            fence, in_paragraph = match.group(1), False
            writer.flush()
            continue
        if match := _MD_ATX.match(line):
            heading = _without_closing_marks(match.group(2) or "", "#")
            writer.heading(len(match.group(1)), _strip_markdown_inline(heading))
            in_paragraph = False
            continue
        following = lines[index] if index < len(lines) else ""
        if (
            line.strip()
            and not in_paragraph
            and _MD_SETEXT_UNDERLINE.match(following)
            and not _MD_RULE.match(line)
            and not _NEW_LINE_IN_PARAGRAPH.match(line)
            and not _MD_QUOTE.match(line)
        ):
            writer.heading(1 if "=" in following else 2, _strip_markdown_inline(line))
            index += 1
            in_paragraph = False
            continue
        if _MD_RULE.match(line) or _MD_SETEXT_UNDERLINE.match(line) or _MD_LINK_DEFINITION.match(line):
            writer.line("")  # a rule (or an underline we did not take) separates paragraphs
            in_paragraph = False
            continue
        if _is_table_divider(line):
            continue
        writer.line(_strip_markdown_inline(_MD_QUOTE.sub("", line)))
        in_paragraph = bool(line.strip())
    if fence is not None:  # an unclosed fence runs to the end of the document
        writer.verbatim("\n".join(code))

    explicit_title = _optional_str(frontmatter.get("title"))
    heading_title, blocks = _take_title_heading(writer.finish(), explicit_title)
    title = explicit_title or heading_title or stem
    metadata = _json_safe(frontmatter)
    if frontmatter_error:
        metadata["frontmatter_error"] = frontmatter_error
    return ParsedDocument(
        title=title,
        format="markdown",
        sections=_build_sections(title, blocks),
        metadata=metadata,
        tags=_as_list(frontmatter.get("tags")),
        entities=_as_list(frontmatter.get("entities")),
        doc_type=_optional_str(frontmatter.get("doc_type")),
        source_type=_optional_str(frontmatter.get("source_type")),
    )


# --- AsciiDoc -------------------------------------------------------------------------------

_ADOC_ATTRIBUTE = re.compile(r"^:(!?)([A-Za-z0-9_][A-Za-z0-9_-]*)(!?):(?:[ \t]+(.*))?$")
_ADOC_SECTION = re.compile(r"^(={1,6})[ \t]+(\S.*)$")
_ADOC_DELIMITER = re.compile(r"^(?:-{4,}|\.{4,}|={4,}|\*{4,}|_{4,}|\+{4,}|/{4,}|--|\|={3,}|```.*)$")
_ADOC_BLOCK_ATTRIBUTES = re.compile(r"^\[[^\]]*\]$")  # [source,yaml], [NOTE], [[anchor]]
_ADOC_SKIPPED_MACRO = re.compile(r"^(?:include|ifdef|ifndef|ifeval|endif|toc|image|video|audio)::")
_ADOC_BLOCK_TITLE = re.compile(r"^\.([^\s.].*)$")
_ADOC_REVISION = re.compile(r"^v?(?P<number>[^,:\s]+),\s*(?P<date>[^:]*)(?::\s*(?P<remark>.*))?$")
_ADOC_CODE_SPAN = re.compile(r"(`+)([^`]+)\1")
_ADOC_INLINE_RULES: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"<<([^,<>]+),\s*([^<>]+)>>"), r"\2"),
    (re.compile(r"<<([^,<>]+)>>"), r"\1"),
    (re.compile(r"\b(?:link|xref|mailto):([^\s\[]*)\[\]"), r"\1"),
    (re.compile(r"\b(?:link|xref|mailto|kbd|btn|menu|footnote|pass):[^\s\[]*\[([^\[\]]*)\]"), r"\1"),
    (re.compile(r"(https?://[^\s\[]+)\[\]"), r"\1"),
    (re.compile(r"https?://[^\s\[]+\[([^\[\]]+)\]"), r"\1"),
    *_emphasis_rules("**", "__", "##", "++"),
    *_emphasis_rules("*", "_", "+", inside_words=False),
    (re.compile(r"\s\+$"), ""),  # hard line break marker
)
_ADOC_VERBATIM_BLOCKS = ("-", ".", "+", "`")
_ADOC_ATTRIBUTE_REFERENCE = re.compile(r"\{([A-Za-z0-9_][A-Za-z0-9_-]*)\}")


def _strip_asciidoc_inline(text: str, attributes: dict[str, Any]) -> str:
    text = _ADOC_ATTRIBUTE_REFERENCE.sub(lambda match: str(attributes.get(match.group(1), match.group(0))), text)
    pieces = _ADOC_CODE_SPAN.split(text)
    out: list[str] = []
    for index, piece in enumerate(pieces):
        if index % 3 == 0:
            for pattern, replacement in _ADOC_INLINE_RULES:
                piece = pattern.sub(replacement, piece)
            out.append(piece)
        elif index % 3 == 2:
            out.append(piece.strip())
    return "".join(out)


def _parse_asciidoc(stem: str, text: str) -> ParsedDocument:
    metadata: dict[str, Any] = {}
    # dates.py only trusts :revdate:/:date: in the first 50 lines, so it needs to know where each was.
    attribute_lines: dict[str, int] = {}
    writer = _BlockWriter()
    title: str | None = None
    open_blocks: list[str] = []
    verbatim: list[str] = []
    header_lines_seen: int | None = None  # None: not in the header (the lines right after `= Title`)
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.rstrip()
        innermost = open_blocks[-1] if open_blocks else None
        if innermost is not None and (innermost[0] in _ADOC_VERBATIM_BLOCKS or innermost.startswith("//")):
            if line == innermost or (innermost.startswith("```") and line == "```"):
                open_blocks.pop()
                if innermost[0] in _ADOC_VERBATIM_BLOCKS:
                    writer.verbatim("\n".join(verbatim))
                verbatim = []
            elif innermost[0] in _ADOC_VERBATIM_BLOCKS:
                verbatim.append(raw)
            continue
        if _ADOC_DELIMITER.match(line):
            if open_blocks and line == open_blocks[-1]:
                open_blocks.pop()
            else:
                open_blocks.append(line)
            writer.line("")
            header_lines_seen = None
            continue
        if line.startswith("//"):
            continue
        if match := _ADOC_ATTRIBUTE.match(line):
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
                _read_asciidoc_header_line(line, header_lines_seen, number, metadata, attribute_lines)
                header_lines_seen += 1
                continue
        if match := _ADOC_SECTION.match(line):
            level = len(match.group(1)) - 1
            heading = _strip_asciidoc_inline(_without_closing_marks(match.group(2), "="), metadata)
            if level == 0 and title is None and writer.is_empty():
                title, header_lines_seen = _squash(heading), 0
            else:
                writer.heading(max(level, 1), heading)
            continue
        if _ADOC_BLOCK_ATTRIBUTES.match(line) or _ADOC_SKIPPED_MACRO.match(line):
            continue
        if match := _ADOC_BLOCK_TITLE.match(line):
            writer.line("")
            writer.line(_strip_asciidoc_inline(match.group(1), metadata))
            writer.line("")
            continue
        writer.line(_strip_asciidoc_inline(line, metadata))
    if open_blocks and verbatim:  # an unclosed listing block runs to the end
        writer.verbatim("\n".join(verbatim))
    title = title or stem
    metadata["attribute_lines"] = attribute_lines
    sections = _build_sections(title, writer.finish())
    return ParsedDocument(title=title, format="asciidoc", sections=sections, metadata=metadata)


def _read_asciidoc_header_line(
    line: str, position: int, number: int, metadata: dict[str, Any], attribute_lines: dict[str, int]
) -> None:
    """The author line and revision line (`v2.1, 2025-03-14: remark`) under the title.

    Explicit `:revdate:` attributes win because they are assigned, and these only fill gaps.
    """
    if position == 0:
        metadata.setdefault("author", line)
        return
    match = _ADOC_REVISION.match(line)
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


# --- reStructuredText -----------------------------------------------------------------------

_RST_ADORNMENT_CHARS = set("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~")
_RST_EXPLICIT_MARKUP = re.compile(r"^\.\.(?:\s+(.*))?$")
_RST_DIRECTIVE = re.compile(r"^(?:\|[^|]+\|\s+)?([\w:-]+)::(?:\s+(.*))?$")
_RST_OPTION = re.compile(r"^\s*:[\w\s-]+:(?:\s|$)")
_RST_CODE_DIRECTIVES = {"code-block", "code", "sourcecode", "highlight", "parsed-literal"}
_RST_DROPPED_DIRECTIVES = {
    "image", "toctree", "include", "raw", "contents", "sectnum", "meta", "index", "literalinclude",
}  # fmt: skip
_RST_ARGUMENT_IS_TEXT = {
    "note", "warning", "tip", "important", "caution", "danger", "attention", "hint", "error",
    "admonition", "seealso", "topic", "sidebar", "rubric", "deprecated", "versionadded", "versionchanged",
}  # fmt: skip
_RST_LITERAL = re.compile(r"``([^`]+)``")
_RST_INLINE_RULES: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r":(?:[\w+.-]+:){1,2}`([^`<]*?)\s*<[^`>]*>`"), r"\1"),  # :ref:`Text <label>`
    (re.compile(r":(?:[\w+.-]+:){1,2}`([^`]*)`"), r"\1"),  # :command:`docent`, :py:func:`x`
    (re.compile(r"`([^`<]+?)\s*<[^`>]*>`__?"), r"\1"),  # `Text <https://...>`_
    (re.compile(r"`([^`]+)`__?"), r"\1"),
    *_emphasis_rules("**"),
    *_emphasis_rules("*", inside_words=False),
    (re.compile(r"`([^`]+)`"), r"\1"),
)


def _rst_adornment(line: str) -> str | None:
    """The character of an underline/overline (`=====`), or None for any other line."""
    stripped = line.rstrip()
    if len(stripped) >= 3 and stripped[0] in _RST_ADORNMENT_CHARS and stripped == stripped[0] * len(stripped):
        return stripped[0]
    return None


def _strip_rst_inline(text: str) -> str:
    pieces = _RST_LITERAL.split(text)
    out: list[str] = []
    for index, piece in enumerate(pieces):
        if index % 2 == 0:
            for pattern, replacement in _RST_INLINE_RULES:
                piece = pattern.sub(replacement, piece)
        out.append(piece)
    return "".join(out)


def _rst_indented_block(lines: list[str], start: int) -> tuple[list[str], int]:
    """Lines from `start` up to the next non-blank line that is not indented."""
    end = start
    while end < len(lines) and (not lines[end].strip() or lines[end][0].isspace()):
        end += 1
    return lines[start:end], end


def _parse_rst(stem: str, text: str) -> ParsedDocument:
    lines = text.splitlines()
    writer = _BlockWriter()
    styles: list[tuple[bool, str]] = []  # (has overline, character), in order of first use
    style_uses: dict[tuple[bool, str], int] = {}
    previous_blank, literal_pending = True, False
    index = 0

    def add_heading(style: tuple[bool, str], heading: str) -> None:
        if style not in styles:
            styles.append(style)
        style_uses[style] = style_uses.get(style, 0) + 1
        writer.heading(styles.index(style) + 1, _strip_rst_inline(heading))

    while index < len(lines):
        line = lines[index]
        stripped = line.strip()
        if not stripped:
            writer.line("")
            previous_blank = True
            index += 1
            continue
        if literal_pending and line[0].isspace():  # the indented block after a `::` paragraph
            block, index = _rst_indented_block(lines, index)
            writer.verbatim("\n".join(block))
            literal_pending, previous_blank = False, True
            continue
        literal_pending = False
        over = _rst_adornment(line)
        if over and index + 2 < len(lines) and lines[index + 1].strip():
            under_line = lines[index + 2].rstrip()
            heading = lines[index + 1].strip()
            if _rst_adornment(under_line) == over and len(under_line) >= len(heading):
                add_heading((True, over), heading)
                index += 3
                previous_blank = True
                continue
        under = _rst_adornment(lines[index + 1]) if index + 1 < len(lines) else None
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
        if match := _RST_EXPLICIT_MARKUP.match(line):
            block, index = _rst_indented_block(lines, index + 1)
            _read_rst_explicit_markup(match.group(1) or "", block, writer)
            previous_blank = True
            continue
        if stripped == "::":
            literal_pending = True
            writer.line("")
        else:
            literal_pending = stripped.endswith("::")
            if literal_pending:  # "Example::" reads "Example:" and "Example ::" reads "Example"
                stripped = stripped[:-2].rstrip() + (":" if not stripped[:-2].endswith(" ") else "")
            writer.line(_strip_rst_inline(stripped))
        previous_blank = False
        index += 1

    blocks = writer.finish()
    title: str | None = None
    # As docutils does: the first heading style is the title only if it titles nothing else.
    if styles and style_uses[styles[0]] == 1:
        first = next(i for i, block in enumerate(blocks) if isinstance(block, _Heading))
        title = blocks[first].text  # type: ignore[union-attr]
        blocks = [*blocks[:first], *blocks[first + 1 :]]
    title = title or stem
    return ParsedDocument(title=title, format="rst", sections=_build_sections(title, blocks), metadata={})


def _read_rst_explicit_markup(body: str, block: list[str], writer: _BlockWriter) -> None:
    """A `.. something` construct: keep what a reader sees, drop what only configures."""
    directive = _RST_DIRECTIVE.match(body)
    writer.line("")
    if directive is None:
        if body.startswith("["):  # footnote or citation: its text is content
            writer.line(_strip_rst_inline(body))
            for line in block:
                writer.line(_strip_rst_inline(line))
        # otherwise a comment, a hyperlink target or a substitution: nothing to read
        writer.line("")
        return
    name, argument = directive.group(1).lower(), directive.group(2) or ""
    content = list(block)
    while content and _RST_OPTION.match(content[0]):
        content.pop(0)
    if name in _RST_CODE_DIRECTIVES:
        writer.verbatim("\n".join(content))
    elif name not in _RST_DROPPED_DIRECTIVES:
        if name in _RST_ARGUMENT_IS_TEXT and argument:
            writer.line(_strip_rst_inline(argument))
        for line in content:
            writer.line(_strip_rst_inline(line))
    writer.line("")


# --- plain text -----------------------------------------------------------------------------

_TEXT_UNDERLINE = re.compile(r"^\s*(?:={3,}|-{3,})\s*$")
_TEXT_SEPARATOR = re.compile(r"^\s*([=\-*_#~])\1{2,}\s*$")
_TEXT_NUMBERED = re.compile(r"^(\d{1,2}(?:\.\d{1,2})*)\.?\s+[A-Z]")
_TEXT_HEADING_MAX = 60
_TEXT_TITLE_MAX = 80


def _parse_text(stem: str, text: str) -> ParsedDocument:
    """Plain text has no markup, so headings are guessed from layout; see _text_heading_level."""
    lines = text.splitlines()
    first = next(index for index, line in enumerate(lines) if line.strip())
    title, start = stem, 0
    if len(lines[first].strip()) < _TEXT_TITLE_MAX:
        title, start = _squash(lines[first]), first + 1
        if start < len(lines) and _TEXT_UNDERLINE.match(lines[start]):
            start += 1
    body = lines[start:]

    levels: dict[int, int | None] = {}  # line index -> level, None for "a short isolated line"
    underlines: set[int] = set()
    for index, line in enumerate(body):
        if index in underlines:
            continue
        previous_blank = index == 0 or not body[index - 1].strip()
        following = body[index + 1] if index + 1 < len(body) else ""
        short = 0 < len(line.strip()) < _TEXT_HEADING_MAX
        if short and previous_blank and _TEXT_UNDERLINE.match(following):
            levels[index] = 1 if "=" in following else 2
            underlines.add(index + 1)
        elif previous_blank and (level := _text_heading_level(line, following)) != 0:
            levels[index] = level
    # Isolated short lines are the weakest signal: they are sections only where nothing
    # stronger marks sections, and subsections where something does.
    isolated_level = 2 if 1 in levels.values() else 1

    writer = _BlockWriter()
    for index, line in enumerate(body):
        if index in underlines:
            continue
        if index in levels:
            writer.heading(levels[index] or isolated_level, line)
        elif _TEXT_SEPARATOR.match(line):
            writer.line("")
        else:
            writer.line(line)
    return ParsedDocument(title=title, format="text", sections=_build_sections(title, writer.finish()), metadata={})


def _text_heading_level(line: str, following: str) -> int | None:
    """Level of a heading-looking line (it already follows a blank line): 0 if not one.

    Numbered lines ("3. Configuration", "3.2 Limits") are headings unless the next line
    continues a numbered list; ALL CAPS lines are top-level; other short lines that start
    with a capital, stand alone and end without sentence punctuation return None.
    """
    stripped = line.strip()
    if not stripped or len(stripped) >= _TEXT_HEADING_MAX or stripped[-1] in ".,;:" or line[0].isspace():
        return 0
    if match := _TEXT_NUMBERED.match(stripped):
        if _TEXT_NUMBERED.match(following.strip()):
            return 0
        return match.group(1).count(".") + 1
    letters = [char for char in stripped if char.isalpha()]
    if len(letters) >= 2 and all(char.isupper() for char in letters):
        return 1
    starts_like_a_title = stripped[0].isupper() or stripped[0].isdigit()
    if not following.strip() and starts_like_a_title and not _NEW_LINE_IN_PARAGRAPH.match(line):
        return None
    return 0


# --- HTML -----------------------------------------------------------------------------------

_HTML_DROPPED = [
    "script", "style", "noscript", "nav", "template", "iframe", "object", "embed", "svg", "canvas", "head", "title",
]  # fmt: skip
_HTML_HEADINGS = {"h1", "h2", "h3", "h4", "h5", "h6"}
_HTML_BLOCKS = {
    "address", "article", "aside", "blockquote", "body", "caption", "dd", "details", "dialog", "div",
    "dl", "dt", "fieldset", "figcaption", "figure", "footer", "form", "header", "hr", "html", "li",
    "main", "ol", "p", "section", "summary", "table", "tbody", "tfoot", "thead", "tr", "ul",
}  # fmt: skip


class _HtmlOutline:
    """Walks the DOM in document order, turning block elements into paragraphs.

    The walk keeps its own stack instead of recursing: generated HTML can nest deeper
    than Python's recursion limit.
    """

    _END_BLOCK = object()
    _SPACE = object()

    def __init__(self) -> None:
        self.writer = _BlockWriter()
        self._inline: list[str] = []

    def walk(self, root: Tag) -> None:
        pending: list[Any] = list(reversed(root.contents))
        while pending:
            node = pending.pop()
            if node is self._END_BLOCK:
                self._end_paragraph()
            elif node is self._SPACE:
                self._inline.append(" ")
            elif isinstance(node, Comment | Declaration | Doctype | ProcessingInstruction):
                continue
            elif isinstance(node, NavigableString):
                self._inline.append(str(node))
            elif isinstance(node, Tag):
                pending.extend(self._enter(node))

    def _enter(self, tag: Tag) -> list[Any]:
        """Handle an element; return what to visit next, in reverse order."""
        children = list(reversed(tag.contents))
        if tag.name in _HTML_HEADINGS:
            self._end_paragraph()
            self.writer.heading(int(tag.name[1]), tag.get_text().replace("¶", ""))
            return []
        if tag.name == "pre":
            self._end_paragraph()
            self.writer.verbatim(tag.get_text())
            return []
        if tag.name in ("br", "td", "th"):
            self._inline.append(" ")
            return [self._SPACE, *children]
        if tag.name in _HTML_BLOCKS:
            self._end_paragraph()
            return [self._END_BLOCK, *children]
        return children

    def _end_paragraph(self) -> None:
        text = _squash("".join(self._inline))
        self._inline = []
        if text:
            self.writer.line(text)
            self.writer.line("")

    def finish(self) -> list[_Block]:
        self._end_paragraph()
        return self.writer.finish()


def _parse_html(stem: str, text: str) -> ParsedDocument:
    soup = BeautifulSoup(text, "html.parser")
    title_tag = soup.find("title")
    explicit_title = _optional_str(title_tag.get_text()) if title_tag else None
    metadata: dict[str, Any] = {}
    for meta in soup.find_all("meta"):
        key, content = meta.get("name") or meta.get("property"), meta.get("content")
        if isinstance(key, str) and isinstance(content, str):
            metadata[key] = content
    for tag in soup.find_all(_HTML_DROPPED):
        if not tag.decomposed:
            tag.decompose()
    outline = _HtmlOutline()
    outline.walk(soup)
    heading_title, blocks = _take_title_heading(outline.finish(), explicit_title)
    title = explicit_title or heading_title or stem
    return ParsedDocument(title=title, format="html", sections=_build_sections(title, blocks), metadata=metadata)


# --- PDF ------------------------------------------------------------------------------------

# A line is a heading when its type is this much larger than the body text: enough to
# skip bold-only emphasis and rounding noise, small enough for modest heading styles.
_PDF_HEADING_RATIO = 1.15
_PDF_HEADING_MAX_CHARS = 100
_PDF_PARAGRAPH_GAP = 0.6  # a vertical gap above this fraction of a line's height ends a paragraph


@dataclass(frozen=True)
class _PdfLine:
    page: int
    text: str
    size: float
    top: float
    bottom: float


def _parse_pdf(stem: str, data: bytes) -> ParsedDocument:
    try:
        with pdfplumber.open(io.BytesIO(data)) as pdf:
            raw_metadata = dict(pdf.metadata)
            page_count = len(pdf.pages)
            lines = [line for number, page in enumerate(pdf.pages) for line in _pdf_page_lines(number, page)]
    except Exception as error:  # noqa: BLE001 - pdfminer raises anything on broken files
        raise _pdf_error(error) from error
    if not lines:
        raise ParseError("no extractable text (scanned PDF?)")
    metadata = {key: _pdf_value(value) for key, value in raw_metadata.items() if _pdf_value(value) is not None}
    pdf_dates = {key: metadata[key] for key in ("ModDate", "CreationDate") if metadata.get(key)}

    body_size = _weighted_median([(line.size, len(line.text)) for line in lines])
    lines = _merge_wrapped_headings(lines, body_size)
    headings = [line for line in lines if _is_pdf_heading(line, body_size)]
    # The biggest heading on the first page titles the document, like a Markdown H1.
    largest = max((line.size for line in headings), default=None)
    title_line = next((line for line in headings if line.page == 0 and line.size == largest), None)
    title = _pdf_metadata_title(metadata) or (title_line.text if title_line else None) or stem
    body_lines = [line for line in lines if line is not title_line]
    heading_set = {id(line) for line in headings if line is not title_line}
    sizes = sorted({line.size for line in headings if line is not title_line}, reverse=True)

    if not sizes:  # no visible structure: one section per page keeps citations page-sized
        sections = []
        for page in range(page_count):
            paragraphs = _pdf_paragraphs([line for line in body_lines if line.page == page])
            if paragraphs:
                sections.append(Section((title,), 0, "\n\n".join(paragraphs)))
    else:
        blocks: list[_Block] = []
        run: list[_PdfLine] = []
        for line in body_lines:
            if id(line) in heading_set:
                blocks.extend(_pdf_paragraphs(run))
                run = []
                blocks.append(_Heading(sizes.index(line.size) + 1, line.text))
            else:
                run.append(line)
        blocks.extend(_pdf_paragraphs(run))
        sections = _build_sections(title, blocks)
    return ParsedDocument(
        title=title, format="pdf", sections=sections, metadata=metadata, pdf_dates=pdf_dates, page_count=page_count
    )


# Titles that office tools write on their own ("Microsoft Word - report.docx", "Untitled",
# a bare file name): the biggest line on page one says more than these.
_PDF_PLACEHOLDER_TITLE = re.compile(
    r"^(?:microsoft (?:word|powerpoint|excel) - .*"
    r"|untitled(?: document)?\d*"
    r"|\S+\.(?:docx?|pptx?|xlsx?|odt|rtf|pdf|tex|dvi|indd))$",
    re.IGNORECASE,
)


def _pdf_metadata_title(metadata: dict[str, str]) -> str | None:
    title = _optional_str(metadata.get("Title"))
    if title is None or _PDF_PLACEHOLDER_TITLE.match(title):
        return None
    return title


def _pdf_error(error: Exception) -> ParseError:
    cause = error.args[0] if isinstance(error, PdfminerException) and error.args else error
    if isinstance(cause, PDFEncryptionError):
        return ParseError("encrypted PDF")
    reason = _squash(str(cause)) or type(cause).__name__
    return ParseError(f"not a readable PDF: {reason}")


def _pdf_value(value: Any) -> str | None:
    if isinstance(value, bytes):
        value = value.decode("latin-1")
    if isinstance(value, str | int | float):
        return _squash(str(value)) or None
    return None


def _pdf_page_lines(number: int, page: Any) -> list[_PdfLine]:
    """Text lines of a page with the median size of their visible characters, which is
    what the heading detector compares."""
    lines: list[_PdfLine] = []
    for raw in page.extract_text_lines(return_chars=True, strip=True):
        sizes = [char["size"] for char in raw["chars"] if char["text"].strip()]
        text = _squash(raw["text"])
        if not text or not sizes:
            continue
        size = round(statistics.median(sizes) * 2) / 2  # half points: absorbs rounding noise
        lines.append(_PdfLine(number, text, size, raw["top"], raw["bottom"]))
    return lines


def _weighted_median(values: list[tuple[float, int]]) -> float:
    values = sorted(values)
    half = sum(weight for _, weight in values) / 2
    seen = 0
    for value, weight in values:
        seen += weight
        if seen >= half:
            return value
    return values[-1][0]


def _is_pdf_heading(line: _PdfLine, body_size: float) -> bool:
    return (
        line.size >= body_size * _PDF_HEADING_RATIO
        and len(line.text) <= _PDF_HEADING_MAX_CHARS
        and any(char.isalpha() for char in line.text)
    )


def _merge_wrapped_headings(lines: list[_PdfLine], body_size: float) -> list[_PdfLine]:
    """A long heading wraps onto a second line of the same size; it is still one heading."""
    merged: list[_PdfLine] = []
    for line in lines:
        previous = merged[-1] if merged else None
        if (
            previous is not None
            and previous.page == line.page
            and previous.size == line.size
            and _is_pdf_heading(previous, body_size)
            and _is_pdf_heading(line, body_size)
            and line.top - previous.bottom < _PDF_PARAGRAPH_GAP * (previous.bottom - previous.top)
        ):
            merged[-1] = _PdfLine(line.page, f"{previous.text} {line.text}", line.size, previous.top, line.bottom)
        else:
            merged.append(line)
    return merged


def _pdf_paragraphs(lines: list[_PdfLine]) -> list[str]:
    """Join lines into paragraphs, breaking on page changes and on large vertical gaps,
    and re-joining words hyphenated across a line break."""
    paragraphs: list[str] = []
    current = ""
    previous: _PdfLine | None = None
    for line in lines:
        new_paragraph = (
            previous is None
            or line.page != previous.page
            or line.top - previous.bottom > _PDF_PARAGRAPH_GAP * (previous.bottom - previous.top)
        )
        if new_paragraph:
            if current:
                paragraphs.append(current)
            current = line.text
        elif current.endswith("-") and line.text[:1].islower():
            current = current[:-1] + line.text
        else:
            current = f"{current} {line.text}"
        previous = line
    if current:
        paragraphs.append(current)
    return paragraphs


_TEXT_PARSERS = {
    "markdown": _parse_markdown,
    "asciidoc": _parse_asciidoc,
    "rst": _parse_rst,
    "text": _parse_text,
    "html": _parse_html,
}
