"""reStructuredText: adornment-styled titles and sections, directives, literal blocks."""

from __future__ import annotations

import re
import textwrap
from typing import Any

from docutils.parsers.rst.tableparser import GridTableParser, SimpleTableParser, TableMarkupError
from docutils.statemachine import StringList

from rag.parsers._common import (
    NEW_LINE_IN_PARAGRAPH,
    Block,
    BlockWriter,
    Heading,
    InlineRules,
    ParsedDocument,
    emphasis_rules,
    outline_document,
    squash,
)

_ADORNMENT_CHARS = set("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~")
_EXPLICIT_MARKUP = re.compile(r"^(\s*)\.\.(?:\s+(.*))?$")
_DIRECTIVE = re.compile(r"^(?:\|[^|]+\|\s+)?([\w:-]+)::(?:\s+(.*))?$")
_OPTION = re.compile(r"^\s*:[\w\s-]+:(?:\s|$)")
_CODE_DIRECTIVES = {"code-block", "code", "sourcecode", "highlight", "parsed-literal"}
_DROPPED_DIRECTIVES = {
    "image", "toctree", "include", "raw", "contents", "sectnum", "meta", "index", "literalinclude",
}  # fmt: skip
# Directives whose text lives elsewhere, by what a person is told about a page holding nothing else; autodoc's
# `auto*` directives are documentation generated from code too.
_ELSEWHERE_DIRECTIVES = {
    "toctree": "a table of contents", "include": "text included from other files",
    "literalinclude": "text included from other files", "click": "documentation generated from code",
    "argparse": "documentation generated from code", "program-output": "documentation generated from code",
    "command-output": "documentation generated from code",
}  # fmt: skip
_ARGUMENT_IS_TEXT = {
    "note", "warning", "tip", "important", "caution", "danger", "attention", "hint", "error",
    "admonition", "seealso", "topic", "sidebar", "rubric",
}  # fmt: skip
# Sphinx object descriptions (`.. confval:: html_theme`, `.. py:method:: run()`): the argument is
# the name a reader looks for (`.. module::` shows none). Matched without domain or autodoc's `auto`.
_SIGNATURE_DIRECTIVES = {
    "describe", "object", "function", "class", "method", "classmethod", "staticmethod", "attribute",
    "property", "data", "exception", "decorator", "confval", "option", "cmdoption", "envvar", "event",
    "role", "directive",
}  # fmt: skip
# Sphinx's own wording, so the text reads as it does on the built page.
_VERSION_DIRECTIVES = {
    "versionadded": ("added", "New in version {}"),
    "versionchanged": ("changed", "Changed in version {}"),
    "deprecated": ("deprecated", "Deprecated since version {}"),
    "versionremoved": ("removed", "Removed in version {}"),
}
_FIELD = re.compile(r"^:((?:[^:\\\s]|\\.)(?:[^:\\]|\\.)*):(?:\s+(.*))?$")  # `:Date: 2025-02-27`
# Sphinx info fields that name what they describe (`:param timeout:`): the name is what a reader asks about.
_FIELD_ARGUMENT = {"param", "parameter", "arg", "argument", "key", "keyword", "kwarg", "kwparam"}
_FIELD_KINDS = _FIELD_ARGUMENT | {"type", "raises", "raise", "except", "exception", "var", "ivar", "cvar", "vartype"}
_LITERAL = re.compile(r"``([^`]+)``")
_SIMPLE_TABLE_BORDER = re.compile(r"^\s*=+(?: +=+)+\s*$")
_GRID_TABLE_BORDER = re.compile(r"^\s*\+(?:-+\+)+\s*$")
# Sphinx object options worth reading (`.. confval:: x` with `:default: 5`): the value a reader asks for.
_SIGNATURE_OPTIONS = ("default", "type")
_OPTION_VALUE = re.compile(r"^\s*:([\w-]+):(?:\s+(.*))?$")
# A cross-reference's target as Sphinx shows it when the role gives no title: `~a.B.run` reads "run", the
# leading dot of `.create_engine` (search from here) and a private module alias (`_sa.create_engine`,
# `_engine.Engine`, as SQLAlchemy writes them) go; a `:ref:`/`:doc:` label (`pooling_toplevel`) reads as words.
_ROLE_TARGET = re.compile(r":((?:[\w+.-]+:){0,1}[\w+.-]+):`([^`<]*)`")
_PRIVATE_ALIAS = re.compile(r"^_[a-z]\w*\.")


def _role_text(match: re.Match[str]) -> str:
    role, target = match.group(1).rpartition(":")[2], match.group(2).strip()
    if target.startswith("!"):
        target = target[1:]  # no link, same text
    if role in ("ref", "doc", "numref", "term", "keyword", "token", "option", "envvar") and not target.startswith("~"):
        return target.rpartition("/")[2].replace("_", " ").replace("-", " ") if role in ("ref", "doc") else target
    if target.startswith("~"):
        return target[1:].rpartition(".")[2]
    return _PRIVATE_ALIAS.sub("", target.lstrip("."))


_INLINE_RULES: InlineRules = (
    (re.compile(r":(?:[\w+.-]+:){1,2}`([^`<]*?)\s*<[^`>]*>`"), r"\1"),  # :ref:`Text <label>`
    (_ROLE_TARGET, _role_text),  # :meth:`~a.B.run`, :func:`.create_engine`, :command:`docent`
    (re.compile(r"`([^`<]+?)\s*<[^`>]*>`__?"), r"\1"),  # `Text <https://...>`_
    (re.compile(r"`([^`]+)`__?"), r"\1"),
    *emphasis_rules("**"),
    *emphasis_rules("*", inside_words=False),
    (re.compile(r"`([^`]+)`"), r"\1"),
)


def adornment(line: str) -> str | None:
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


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())


def _indented_block(lines: list[str], start: int, indent: int = 0) -> tuple[list[str], int]:
    """Lines from `start` up to the next non-blank line indented `indent` or less."""
    end = start
    while end < len(lines) and (not lines[end].strip() or _indent(lines[end]) > indent):
        end += 1
    return lines[start:end], end


def _dedented(lines: list[str]) -> list[str]:
    return textwrap.dedent("\n".join(lines)).splitlines()


def _table_end(lines: list[str], start: int) -> int:
    """The index after a table whose first border is lines[start].

    A simple table ends at the border followed by a blank line (or the end); a grid table
    at its last line starting with `+` or `|`.
    """
    end = start + 1
    if _GRID_TABLE_BORDER.match(lines[start]):
        while end < len(lines) and lines[end].lstrip()[:1] in ("+", "|"):
            end += 1
        return end
    while end < len(lines):
        if _SIMPLE_TABLE_BORDER.match(lines[end]) and (end + 1 >= len(lines) or not lines[end + 1].strip()):
            return end + 1
        end += 1
    return end


def _field_name(name: str) -> str:
    """The name a body field is about: `:param timeout:` and `:type timeout:` are timeout's, `:raises ValueError:`
    ValueError's; any other field (`:timeout:`, `:Version:`) is its own name."""
    words = _strip_inline(name.replace("\\", "")).split()
    if len(words) > 1 and words[0].lower() in _FIELD_KINDS:
        return " ".join(words[1:]) + ("" if words[0].lower() in _FIELD_ARGUMENT else f" ({words[0].lower()})")
    return " ".join(words)


def _is_signature(directive: str) -> bool:
    name = directive.rpartition(":")[2]
    return name in _SIGNATURE_DIRECTIVES or name.removeprefix("auto") in _SIGNATURE_DIRECTIVES


def parse_rst(stem: str, text: str) -> ParsedDocument:
    reader = _Reader()
    reader.read(text.splitlines())
    blocks = reader.writer.finish()
    styles, style_uses, docinfo = reader.styles, reader.style_uses, reader.docinfo
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
    metadata: dict[str, Any] = dict(docinfo.fields)
    if reader.version_directives:
        metadata["version_directives"] = reader.version_directives
    if reader.elsewhere:
        # "a table of contents (toctree)", "documentation generated from code (automodule)": said when skipped.
        metadata["elsewhere"] = [f"{kind} ({', '.join(sorted(names))})"
                                 for kind, names in sorted(reader.elsewhere.items())]
    return outline_document(title, "rst", blocks, metadata=metadata, metadata_lines=docinfo.lines)


class _Reader:
    """Turns reST lines into blocks; directive bodies are read by the same rules, nested."""

    def __init__(self) -> None:
        self.writer = BlockWriter(inline=_strip_inline)
        self.styles: list[tuple[bool, str]] = []  # (has overline, character), in order of first use
        self.style_uses: dict[tuple[bool, str], int] = {}
        self.docinfo = _Docinfo()
        # Sphinx versionadded/versionchanged/deprecated, in reading order: version evidence.
        self.version_directives: list[dict[str, str]] = []
        # Directives whose text lives in other files (a table of contents, an include, autodoc): a page that
        # holds nothing else is skipped, not failed.
        self.elsewhere: dict[str, set[str]] = {}  # what a person is told -> the directives

    def add_heading(self, style: tuple[bool, str], heading: str) -> None:
        if style not in self.styles:
            self.styles.append(style)
        self.style_uses[style] = self.style_uses.get(style, 0) + 1
        self.writer.heading(self.styles.index(style) + 1, _strip_inline(heading))

    def read(self, lines: list[str], nested: bool = False) -> None:
        """Read a run of lines; `nested` (a directive's body) can hold no headings or docinfo."""
        writer = self.writer
        previous_blank = True
        literal_indent: int | None = None  # set after a paragraph that ends with `::`
        index = 0
        while index < len(lines):
            line = lines[index]
            stripped = line.strip()
            if not stripped:
                writer.line("")
                previous_blank = True
                index += 1
                continue
            if literal_indent is not None and _indent(line) > literal_indent:  # the block after `::`
                block, index = _indented_block(lines, index, literal_indent)
                writer.verbatim("\n".join(block))
                literal_indent, previous_blank = None, True
                continue
            literal_indent = None
            over = adornment(line)
            if not nested and over and index + 2 < len(lines) and lines[index + 1].strip():
                under_line = lines[index + 2].rstrip()
                heading = lines[index + 1].strip()
                if adornment(under_line) == over and len(under_line) >= len(heading):
                    self.add_heading((True, over), heading)
                    index += 3
                    previous_blank = True
                    continue
            under = adornment(lines[index + 1]) if index + 1 < len(lines) else None
            if not nested and under and not over and previous_blank and not line[0].isspace():
                if len(lines[index + 1].rstrip()) >= len(stripped):
                    self.add_heading((False, under), stripped)
                    index += 2
                    previous_blank = True
                    continue
            if over:  # a transition, or an underline too short to make a heading
                writer.line("")
                index += 1
                continue
            if not nested and sum(self.style_uses.values()) <= 1 and _FIELD.match(line) and not writer.has_text():
                # A field list before any text, at the top or under the title: docutils' docinfo.
                block, end = _indented_block(lines, index + 1)
                self.docinfo.add(writer, index + 1, [line, *block])
                index = end
                previous_blank = True
                continue
            if (field := _FIELD.match(stripped)) and previous_blank or field and _FIELD.match(lines[index - 1].strip()):
                # A field list in the body (`:timeout: Seconds to wait. Default: 4.`, `:param retries: ...`): each
                # field one "name: text" paragraph, as Sphinx shows it, never a raw `:name:`.
                block, index = _indented_block(lines, index + 1, _indent(line))
                writer.definition(_field_name(field.group(1)),
                                  _strip_inline(" ".join([field.group(2) or "", *(part.strip() for part in block)])))
                previous_blank = True
                continue
            if _SIMPLE_TABLE_BORDER.match(line) or _GRID_TABLE_BORDER.match(line):
                end = _table_end(lines, index)
                if self._table(lines[index:end]):
                    index, previous_blank = end, True
                    continue
            if match := _EXPLICIT_MARKUP.match(line):
                block, index = _indented_block(lines, index + 1, len(match.group(1)))
                self._explicit_markup(match.group(2) or "", block)
                previous_blank = True
                continue
            following = lines[index + 1] if index + 1 < len(lines) else ""
            if (previous_blank and following.strip() and _indent(following) > _indent(line)
                    and not stripped.endswith("::") and not NEW_LINE_IN_PARAGRAPH.match(line)
                    and not _FIELD.match(stripped)):
                # A definition list item: the term, then its indented definition, read as one paragraph.
                body, index = _indented_block(lines, index + 1, _indent(line))
                writer.line("")
                writer.line(_strip_inline(stripped).rstrip(":") + ":")
                self.read(_dedented(body), nested=True)
                writer.line("")
                previous_blank = True
                continue
            if stripped == "::":
                literal_indent = _indent(line)
                writer.line("")
            else:
                if stripped.endswith("::"):  # "Example::" reads "Example:" and "Example ::" reads "Example"
                    literal_indent = _indent(line)
                    stripped = stripped[:-2].rstrip() + (":" if not stripped[:-2].endswith(" ") else "")
                writer.line(stripped)  # inline markup goes when the paragraph is joined
            previous_blank = False
            index += 1

    def _explicit_markup(self, body: str, block: list[str]) -> None:
        """A `.. something` construct: keep what a reader sees, drop what only configures."""
        writer = self.writer
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
        if argument and _is_signature(name):
            # `.. confval:: copyright` with `project_copyright` on the next line: more names of one entry.
            while content and content[0].strip() and not _OPTION.match(content[0]):
                argument += ", " + content.pop(0).strip()
        options: dict[str, str] = {}
        while content and _OPTION.match(content[0]):
            if option := _OPTION_VALUE.match(content.pop(0)):
                options[option.group(1).lower()] = option.group(2) or ""
        content = _dedented(content)
        if kind := _ELSEWHERE_DIRECTIVES.get(name) or (
                "documentation generated from code" if name.rpartition(":")[2].startswith("auto") else None):
            self.elsewhere.setdefault(kind, set()).add(name)
        if name in _CODE_DIRECTIVES:
            writer.verbatim("\n".join(content))
        elif name in _VERSION_DIRECTIVES and argument:
            self._version_change(name, argument, content)
        elif name not in _DROPPED_DIRECTIVES:
            if argument and _is_signature(name):
                # "html_theme: Default: 'alabaster'; Type: str." opens the description, as one paragraph.
                facts = [f"{key.capitalize()}: {_strip_inline(options[key])}" for key in _SIGNATURE_OPTIONS
                         if options.get(key)]
                writer.line(_strip_inline(argument) + (": " + "; ".join(facts) + "." if facts else ":"))
                while content and not content[0].strip():
                    content.pop(0)
            elif argument and name in _ARGUMENT_IS_TEXT:
                writer.line(_strip_inline(argument))
            self.read(content, nested=True)
        writer.line("")

    def _table(self, table_lines: list[str]) -> bool:
        """A simple or grid table through docutils' table parsers; False when it is not one."""
        parser = GridTableParser() if table_lines[0].lstrip().startswith("+") else SimpleTableParser()
        try:
            _, head_rows, body_rows = parser.parse(StringList([line.rstrip() for line in _dedented(table_lines)]))
        except TableMarkupError:
            return False

        def texts(row: list) -> list[str]:
            return [_strip_inline(squash(" ".join(cell[3]))) if cell else "" for cell in row]

        header = texts(head_rows[-1]) if head_rows else []
        self.writer.table(header, [texts(row) for row in body_rows])
        return True

    def _version_change(self, name: str, argument: str, content: list[str]) -> None:
        """`.. versionchanged:: 4.1 note` reads "Changed in version 4.1: note", then its body."""
        kind, label = _VERSION_DIRECTIVES[name]
        version, _, note = argument.partition(" ")
        self.version_directives.append({"kind": kind, "version": version})
        while content and not content[0].strip():
            content.pop(0)  # the label opens the first paragraph of the body, as in Sphinx
        label = label.format(version)
        self.writer.line(f"{label}: {_strip_inline(note)}" if note or content else f"{label}.")
        self.read(content, nested=True)


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
