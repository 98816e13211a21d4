"""A reST page written again as Markdown, AsciiDoc or Word, the way an export tool would write it.

The page is read by Docent's own parser (`rag.parsers.parse_document`, as
demo/real/convert_formats.py does), so headings, paragraphs, code and tables come out as Docent reads
them, and each is written in the target's own syntax: `#`/`=` headings, fenced or `----` code, pipe or
`|===` tables, Word heading styles and tables. What the parser drops on the way and a real export keeps
is put back from the reST source: inline literals (``name``, :setting:`X`) as code spans, emphasis
(Django's `*April 11, 2022*` line under a release-notes title), and Sphinx's "New in version 2.0" /
"Changed in version 3.1:" labels emphasised as Sphinx prints them. A converter that lost those would
make the release measurement meaningless: they are what tells a page's release.

Tables: the parser flattens a table into one sentence per row; to write a real table the writer's
`table` hook is wrapped while parsing (`tables_kept`), and each table leaves a placeholder paragraph
that the writers replace.
"""

from __future__ import annotations

import contextlib
import io
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from datetime import datetime
from pathlib import Path

import docx
from docx.shared import Pt

from rag.parsers import ParsedDocument, Section, parse_document
from rag.parsers._common import BlockWriter, table_row_texts

CODE_FENCE = "```"
_TABLE_MARK = re.compile(r"\x00table (\d+)\x00")
_VERSION_LABEL = re.compile(r"^((?:New in|Changed in|Deprecated since|Removed in) version \S+?)([.:])(?=\s|$)")
# reST inline markup in the source: ``literal``, :role:`text`, **strong**, *emphasis* (not inside a literal).
_RST_LITERAL = re.compile(r"``(?P<text>[^`]+?)``")
_RST_ROLE = re.compile(r":(?P<role>[\w+.-]+(?::[\w+.-]+)?):`(?P<text>[^`]+)`")
_RST_DEFAULT_ROLE = re.compile(r"(?<![:`\w])`(?P<text>[^`<>]+?)`(?![`_\w])")  # `name`: code under Sphinx's default role
_RST_STRONG = re.compile(r"(?<![\w*])\*\*(?P<text>[^*\s][^*]*?)\*\*(?![\w*])")
_RST_EMPHASIS = re.compile(r"(?<![\w*])\*(?P<text>[^*\s][^*]*?)\*(?![\w*])")
# Roles Sphinx shows as plain link or term text; every other role (:class:, :setting:, :option:) as code.
_PLAIN_ROLES = {"ref", "doc", "term", "pep", "rfc", "ticket", "commit", "cve", "abbr", "guilabel",
                "menuselection", "kbd", "sup", "sub", "math", "numref", "download", "title-reference"}
_CODE_SPAN = re.compile(r"(`+)([^`]+)\1")
_DUNDER = re.compile(r"(?<![\w`])\w*__\w+__\w*(?![\w`])")  # `__init__` in prose: markup to Markdown, code to an export


@dataclass(frozen=True)
class Table:
    header: list[str]
    rows: list[list[str]]


@dataclass
class Page:
    """A parsed page and what its source says of its inline markup."""

    parsed: ParsedDocument
    tables: list[Table]
    literals: set[str] = field(default_factory=set)
    emphasis: set[str] = field(default_factory=set)
    strong: set[str] = field(default_factory=set)
    titled: bool = True  # False: the source has no title, and the parser fell back on the (old) file name

    def paragraphs(self, section_text: str) -> list[str | Table]:
        """A section's paragraphs, each table as a Table."""
        found: list[str | Table] = []
        for paragraph in section_text.split("\n\n"):
            open_code = found and isinstance(found[-1], str) and found[-1].startswith(CODE_FENCE + "\n") \
                and not found[-1].endswith("\n" + CODE_FENCE)
            if open_code:  # a code block's blank line: the block goes on
                found[-1] = f"{found[-1]}\n\n{paragraph}"
                continue
            mark = _TABLE_MARK.fullmatch(paragraph)
            found.append(self.tables[int(mark.group(1))] if mark else paragraph)
        return found

    def text_of(self, text: str) -> str:
        """A section's text as Docent reads the source: every table back to its row sentences."""
        def rows(mark: re.Match[str]) -> str:
            table = self.tables[int(mark.group(1))]
            return "\n\n".join(table_row_texts(table.header, table.rows))

        return _TABLE_MARK.sub(rows, text)

    def sections(self) -> list[Section]:
        """The sections as an unhooked parse gives them (tables as row sentences)."""
        return [replace(section, text=self.text_of(section.text)) for section in self.parsed.sections]


@contextlib.contextmanager
def tables_kept(tables: list[Table]) -> Iterator[None]:
    """While parsing, every table goes to `tables` and leaves a placeholder paragraph (restored on exit)."""
    original = BlockWriter.table

    def table(writer: BlockWriter, header, rows) -> None:  # noqa: ANN001 - the hook's own signature
        writer.flush()
        tables.append(Table([str(cell) for cell in header], [[str(cell) for cell in row] for row in rows]))
        writer.blocks.append(f"\x00table {len(tables) - 1}\x00")

    BlockWriter.table = table  # type: ignore[method-assign]
    try:
        yield
    finally:
        BlockWriter.table = original  # type: ignore[method-assign]


def _role_text(role: str, text: str) -> str:
    """What Sphinx shows for a role: "Text" of `Text <target>`, "run" of `~a.B.run`, else the text."""
    if match := re.fullmatch(r"(.*?)\s*<[^<>]*>", text, re.S):
        return match.group(1) if match.group(1) else text
    if text.startswith("~"):
        return text[1:].rsplit(".", 1)[-1]
    return text.lstrip("!")


def page_read(path: Path, data: bytes) -> Page:
    """Parse a source page with Docent's parser and note its inline markup (reST sources only)."""
    tables: list[Table] = []
    with tables_kept(tables):
        parsed = parse_document(path, data)
    page = Page(parsed, tables, titled=parsed.title != path.stem)
    if parsed.format != "rst":
        return page
    source = data.decode("utf-8", "replace")
    squash = lambda text: " ".join(text.split())  # noqa: E731
    page.literals = {squash(m["text"]) for m in _RST_LITERAL.finditer(source)}
    for match in _RST_ROLE.finditer(source):
        role = match["role"].rpartition(":")[2]
        if role not in _PLAIN_ROLES:
            page.literals.add(squash(_role_text(role, match["text"])))
    prose = _RST_ROLE.sub(" ", _RST_LITERAL.sub(" ", source))
    page.literals |= {squash(m["text"]) for m in _RST_DEFAULT_ROLE.finditer(prose)}
    prose = _RST_DEFAULT_ROLE.sub(" ", prose)
    page.strong = {squash(m["text"]) for m in _RST_STRONG.finditer(prose)}
    page.emphasis = {squash(m["text"]) for m in _RST_EMPHASIS.finditer(_RST_STRONG.sub(" ", prose))}
    page.literals = {text for text in page.literals if text and "`" not in text}
    return page


def _alternation(texts: set[str]) -> re.Pattern[str] | None:
    texts = {text for text in texts if len(text) >= 2}
    if not texts:
        return None
    body = "|".join(re.escape(text) for text in sorted(texts, key=lambda text: (-len(text), text)))
    return re.compile(rf"(?<![\w`])(?:{body})(?![\w`])")


@dataclass
class InlineWriter:
    """Puts a page's inline markup back into its parsed text, in one target syntax."""

    page: Page
    code: Callable[[str], str]
    emphasis: Callable[[str], str]
    strong: Callable[[str], str]

    def __post_init__(self) -> None:
        self._literals = _alternation(self.page.literals)
        self._emphasis = _alternation(self.page.emphasis)
        self._strong = _alternation(self.page.strong)

    def line(self, text: str) -> str:
        if self._literals is not None:
            text = self._literals.sub(lambda m: self.code(m.group(0)), text)
        text = _outside_code(text, lambda prose: _DUNDER.sub(lambda m: self.code(m.group(0)), prose))
        whole = text.strip()

        def marked(prose: str) -> str:
            for pattern, wrap in ((self._strong, self.strong), (self._emphasis, self.emphasis)):
                if pattern is not None:
                    prose = pattern.sub(lambda m, wrap=wrap: wrap(m.group(0)) if _worth_marking(m.group(0), whole)
                                        else m.group(0), prose)
            return prose

        return _outside_code(text, marked)

    def paragraph(self, text: str) -> str:
        """A prose paragraph: Sphinx's version label emphasised, its lines (list items) kept apart."""
        lines = text.split("\n")
        if match := _VERSION_LABEL.match(lines[0]):
            rest = lines[0][match.end():]
            lines[0] = self.emphasis(match.group(1) + match.group(2)) + (self.line(rest) if rest else "")
            return "\n".join([lines[0], *(self.line(line) for line in lines[1:])])
        return "\n".join(self.line(line) for line in lines)


def _outside_code(text: str, change: Callable[[str], str]) -> str:
    """`change` applied to the prose between code spans; the spans kept as they are."""
    pieces = _CODE_SPAN.split(text)  # prose, backticks, code, prose, ...
    return "".join(change(piece) if index % 3 == 0 else f"{pieces[index - 1]}{piece}{pieces[index - 1]}"
                   for index, piece in enumerate(pieces) if index % 3 != 1)


def _worth_marking(text: str, line: str) -> bool:
    """Emphasis is put back on a whole line (a release date under its title) or a phrase long enough to be that
    phrase: a one-word *not* in the source would otherwise be emphasised everywhere on the page."""
    return text == line or len(text) >= 12


def _code_of(paragraph: str) -> tuple[str, str] | None:
    """(language, code) of a code paragraph: a fenced block, or a doctest (`>>>` lines), which reST writes as
    a paragraph and every export as code."""
    if paragraph.startswith(CODE_FENCE + "\n") and paragraph.endswith("\n" + CODE_FENCE):
        return "", paragraph[len(CODE_FENCE) + 1:-len(CODE_FENCE) - 1]
    if paragraph.startswith(">>> "):
        return "pycon", paragraph
    return None


def _wrapped_code(text: str, mark: str) -> str:
    return f"{mark}{text}{mark}" if mark not in text else f"{mark * 2} {text} {mark * 2}"


# --- Markdown and AsciiDoc ------------------------------------------------------------------------


@dataclass(frozen=True)
class Syntax:
    """How one markup language writes what a page holds."""

    heading: str  # the heading mark, repeated per level ("#", "=")
    emphasis: Callable[[str], str]
    strong: Callable[[str], str]
    escaped: Callable[[str], str]  # a prose line moved off anything the language reads at a line start
    table: Callable[[Table, InlineWriter], list[str]]  # a table with a header row
    code: Callable[[str, str], list[str]]  # (language, code) -> lines

    def writer(self, page: Page) -> InlineWriter:
        return InlineWriter(page, code=lambda text: _wrapped_code(text, "`"), emphasis=self.emphasis,
                            strong=self.strong)

    def body(self, page: Page) -> list[str]:
        writer = self.writer(page)
        out: list[str] = []
        for section in page.parsed.sections:
            if section.level:
                out += [f"{self.heading * min(section.level + 1, 6)} {writer.line(section.heading_path[-1])}", ""]
            for paragraph in page.paragraphs(section.text):
                out += [*self._block(paragraph, writer), ""]
        return out

    def title(self, page: Page, title: str) -> list[str]:
        return [f"{self.heading} {self.writer(page).line(title)}"]

    def _block(self, paragraph: str | Table, writer: InlineWriter) -> list[str]:
        if isinstance(paragraph, Table):
            if len(paragraph.header) < 2:  # no header: Docent reads each row as one sentence, so does the export
                return [self.escaped(text) + "\n" for text in table_row_texts([], paragraph.rows)]
            return self.table(paragraph, writer)
        if (found := _code_of(paragraph)) is not None:
            return self.code(*found)
        return [self.escaped(line) for line in writer.paragraph(paragraph).split("\n")]


def _cells(table: Table, row: list[str]) -> list[str]:
    width = len(table.header)
    return (row + [""] * width)[:width]


_MD_LINE_START = re.compile(
    r"^(?: {0,3}#| {0,3}(?:={2,}|-{2,})[ \t]*$| {0,3}(?:(?:-[ \t]*){3,}|(?:\*[ \t]*){3,}|(?:_[ \t]*){3,})$"
    r"| {0,3}(?:`{3,}|~{3,})| {0,3}>| {0,3}\[[^\]]+\]:\s)")


def _md_line(line: str) -> str:
    """A prose line CommonMark would read as a heading, rule, fence, quote or link definition, indented out of
    the line start (a table divider, which indentation does not hide, escaped)."""
    if "|" in line and "---" in line and set(line.strip()) <= set("|-: \t"):
        return "\\" + line
    return "    " + line if _MD_LINE_START.match(line) else line


def _md_table(table: Table, writer: InlineWriter) -> list[str]:
    def row(cells: list[str]) -> str:
        return "| " + " | ".join(writer.line(cell).replace("|", "\\|") for cell in _cells(table, cells)) + " |"

    return [row(table.header), "|" + "---|" * len(table.header), *(row(cells) for cells in table.rows)]


def _md_code(language: str, code: str) -> list[str]:
    fence = CODE_FENCE
    while any(line.lstrip().startswith(fence) for line in code.splitlines()):
        fence += "`"
    return [fence + language, code, fence]


MARKDOWN = Syntax("#", emphasis=lambda text: f"*{text}*", strong=lambda text: f"**{text}**", escaped=_md_line,
                  table=_md_table, code=_md_code)


def to_markdown(page: Page, *, frontmatter: dict[str, str]) -> str:
    """The page as Markdown with YAML frontmatter (values already written as YAML scalars)."""
    out = ["---", *(f"{key}: {value}" for key, value in frontmatter.items()), "---", ""]
    out += [*MARKDOWN.title(page, page.parsed.title), ""] if page.titled else []
    return "\n".join(out + MARKDOWN.body(page)).rstrip("\n") + "\n"


_ADOC_LINE_START = re.compile(
    r"^(?::!?[A-Za-z0-9_][A-Za-z0-9_-]*!?:(?:\s|$)|={1,6}\s+\S|(?:-{4,}|\.{4,}|={4,}|\*{4,}|_{4,}|\+{4,}|/{4,}|--"
    r"|\|={3,}|```.*)$|\[[^\]]*\]$|(?:include|ifdef|ifndef|ifeval|endif|toc|image|video|audio)::|//|\.[^\s.]"
    r"|(?!\s)(?:.+?)(?::{2,4}|;;)(?:[ \t]+.*)?$)")


def _adoc_line(line: str) -> str:
    """A prose line AsciiDoc would read as an attribute, section, block delimiter, block title or definition,
    moved off the line start (a leading space: a literal paragraph to Asciidoctor, text to Docent)."""
    return " " + line if _ADOC_LINE_START.match(line) else line


def _adoc_table(table: Table, writer: InlineWriter) -> list[str]:
    def row(cells: list[str]) -> str:
        return " ".join("|" + writer.line(cell).replace("|", "{vbar}") for cell in _cells(table, cells))

    return ['[options="header"]', "|===", row(table.header), "", *(row(cells) for cells in table.rows), "|==="]


def _adoc_code(language: str, code: str) -> list[str]:
    delimiter = "----"
    while any(line.rstrip() == delimiter for line in code.splitlines()):
        delimiter += "-"
    return [f"[source{',' + language if language else ''}]", delimiter, code, delimiter]


ASCIIDOC = Syntax("=", emphasis=lambda text: f"_{text}_" if "_" not in text else text,
                  strong=lambda text: f"*{text}*", escaped=_adoc_line, table=_adoc_table, code=_adoc_code)


def to_asciidoc(page: Page, *, revdate: str, title: str) -> str:
    """The page as AsciiDoc: `= Title`, `:revdate:`, `==` sections, `----` listings, `|===` tables."""
    needs_vbar = any("|" in cell for table in page.tables for row in [table.header, *table.rows] for cell in row)
    out = ASCIIDOC.title(page, title) if page.titled else []
    out += [f":revdate: {revdate}", *([":vbar: |"] if needs_vbar else []), ""]
    return "\n".join(out + ASCIIDOC.body(page)).rstrip("\n") + "\n"


# --- Word -------------------------------------------------------------------------------------

_LIST_ITEM = re.compile(r"^(?:[-*+•]|(\d{1,3})[.)])\s+")


def to_docx(page: Page, *, title: str, created: datetime, modified: datetime, revision: int, author: str) -> bytes:
    """The page as .docx: a Title paragraph, heading styles, list styles, tables with a header row, code in a
    monospace font; core properties title, author, created, modified, last modified by and revision (a save
    counter, as Word keeps it: never a version)."""
    document = docx.Document()
    properties = document.core_properties
    properties.title, properties.author, properties.last_modified_by = title, author, author
    properties.created, properties.modified, properties.revision = created, modified, revision
    document.add_paragraph(title, style="Title")
    for section in page.parsed.sections:
        if section.level:
            document.add_heading(section.heading_path[-1], level=min(section.level, 9))
        for paragraph in page.paragraphs(section.text):
            _docx_block(document, paragraph)
    buffer = io.BytesIO()
    document.save(buffer)
    return buffer.getvalue()


def _docx_block(document, paragraph: str | Table) -> None:  # noqa: ANN001 - python-docx's Document
    if isinstance(paragraph, Table):
        if len(paragraph.header) < 2:
            for text in table_row_texts([], paragraph.rows):
                document.add_paragraph(text)
            return
        width = len(paragraph.header)
        table = document.add_table(rows=0, cols=width)
        table.style = "Table Grid"
        for row in [paragraph.header, *paragraph.rows]:
            cells = table.add_row().cells
            for cell, text in zip(cells, (row + [""] * width)[:width]):
                cell.text = text
        return
    if (found := _code_of(paragraph)) is not None:
        for line in found[1].splitlines():
            if line.strip():
                run = document.add_paragraph(style="No Spacing").add_run(line)
                run.font.name, run.font.size = "Courier New", Pt(9)
        return
    for line in paragraph.split("\n"):
        if match := _LIST_ITEM.match(line):
            document.add_paragraph(line[match.end():], style="List Number" if match.group(1) else "List Bullet")
        else:
            document.add_paragraph(line)
