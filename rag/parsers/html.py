"""HTML: <title> and <meta>, h1-h6 headings, block elements as paragraphs, chrome dropped."""

from __future__ import annotations

from typing import Any

from bs4 import BeautifulSoup, NavigableString, Tag
from bs4.element import Comment, Declaration, Doctype, ProcessingInstruction

from rag.parsers._common import (
    Block,
    BlockWriter,
    ParsedDocument,
    optional_str,
    outline_document,
    squash,
    take_title_heading,
)

_DROPPED = [
    "script", "style", "noscript", "nav", "template", "iframe", "object", "embed", "svg", "canvas", "head", "title",
]  # fmt: skip
_HEADINGS = {"h1", "h2", "h3", "h4", "h5", "h6"}
_BLOCKS = {
    "address", "article", "aside", "blockquote", "body", "caption", "dd", "details", "dialog", "div",
    "dl", "dt", "fieldset", "figcaption", "figure", "footer", "form", "header", "hr", "html", "li",
    "main", "ol", "p", "section", "summary", "table", "tbody", "tfoot", "thead", "tr", "ul",
}  # fmt: skip


class _Outline:
    """Walks the DOM in document order, turning block elements into paragraphs.

    The walk keeps its own stack instead of recursing: generated HTML can nest deeper
    than Python's recursion limit.
    """

    _END_BLOCK = object()
    _SPACE = object()

    def __init__(self) -> None:
        self.writer = BlockWriter()
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
        if tag.name in _HEADINGS:
            self._end_paragraph()
            self.writer.heading(int(tag.name[1]), tag.get_text().replace("¶", ""))
            return []
        if tag.name == "pre":
            self._end_paragraph()
            self.writer.verbatim(tag.get_text())
            return []
        if tag.name == "table" and not tag.find("table"):
            self._end_paragraph()
            self.writer.table(*_table_cells(tag))
            return []
        if tag.name == "dl" and not tag.find("dl"):
            self._end_paragraph()
            for term, definition in _definitions(tag):
                self.writer.definition(term, definition)
            return []
        if tag.name in ("br", "td", "th"):
            self._inline.append(" ")
            return [self._SPACE, *children]
        if tag.name in _BLOCKS:
            self._end_paragraph()
            return [self._END_BLOCK, *children]
        return children

    def _end_paragraph(self) -> None:
        text = squash("".join(self._inline))
        self._inline = []
        if text:
            self.writer.line(text)
            self.writer.line("")

    def finish(self) -> list[Block]:
        self._end_paragraph()
        return self.writer.finish()


def _text(tag: Tag) -> str:
    return squash(tag.get_text(" ").replace("¶", ""))


def _table_cells(table: Tag) -> tuple[list[str], list[list[str]]]:
    """Header and body rows; the header is the <thead> row, else a first row of <th> cells."""
    rows = [[_text(cell) for cell in row.find_all(["th", "td"], recursive=False)] for row in table.find_all("tr")]
    first = table.find("tr")
    head = table.find("thead")
    has_header = first is not None and (
        (head is not None and head.find("tr") is first)
        or all(cell.name == "th" for cell in first.find_all(["th", "td"], recursive=False))
    )
    if has_header and rows:
        return rows[0], rows[1:]
    return [], rows


def _definitions(dl: Tag) -> list[tuple[str, str]]:
    """(term, definition) pairs of a <dl>; several <dd> of one <dt> read as one definition."""
    pairs: list[tuple[str, str]] = []
    for child in dl.find_all(["dt", "dd"]):
        if child.name == "dt":
            pairs.append((_text(child), ""))
        elif pairs:
            term, definition = pairs[-1]
            pairs[-1] = (term, f"{definition} {_text(child)}".strip())
        else:
            pairs.append(("", _text(child)))
    return pairs


def parse_html(stem: str, text: str) -> ParsedDocument:
    soup = BeautifulSoup(text, "html.parser")
    title_tag = soup.find("title")
    explicit_title = optional_str(title_tag.get_text()) if title_tag else None
    metadata: dict[str, Any] = {}
    for meta in soup.find_all("meta"):
        key, content = meta.get("name") or meta.get("property"), meta.get("content")
        if isinstance(key, str) and isinstance(content, str):
            metadata[key] = content
    for tag in soup.find_all(_DROPPED):
        if not tag.decomposed:
            tag.decompose()
    outline = _Outline()
    outline.walk(soup)
    heading_title, blocks = take_title_heading(outline.finish(), explicit_title)
    title = explicit_title or heading_title or stem
    return outline_document(title, "html", blocks, metadata=metadata)
