"""Markdown: YAML frontmatter, ATX and setext headings, fenced code, light inline markup."""

from __future__ import annotations

import math
import re
from datetime import date, datetime
from typing import Any

import yaml
from frontmatter.default_handlers import YAMLHandler
from markdown_it import MarkdownIt

from rag.parsers._common import (
    NEW_LINE_IN_PARAGRAPH,
    BlockWriter,
    InlineRules,
    ParsedDocument,
    emphasis_rules,
    optional_str,
    outline_document,
    squash,
    strip_inline_outside_code,
    take_title_heading,
    without_closing_marks,
)

# --- frontmatter ----------------------------------------------------------------------------


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
        reason = squash(str(error).splitlines()[0]) if str(error) else type(error).__name__
        return {}, raw + "\n\n" + body, f"invalid YAML: {reason}"
    if data is None:
        return {}, body, None
    if not isinstance(data, dict):
        return {}, raw + "\n\n" + body, "frontmatter is not a mapping of keys to values"
    return data, body, None


def _as_list(value: Any) -> list[str]:
    """Frontmatter lists arrive as YAML lists or as one comma-separated string."""
    if value is None:
        return []
    items = value.split(",") if isinstance(value, str) else value if isinstance(value, list | tuple | set) else [value]
    result: list[str] = []
    for item in items:
        text = squash(str(item)) if item is not None else ""
        if text and text not in result:
            result.append(text)
    return result


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


# --- body -----------------------------------------------------------------------------------

_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_ATX = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]+(.*))?$")
_SETEXT_UNDERLINE = re.compile(r"^ {0,3}(?:={2,}|-{2,})[ \t]*$")
_RULE = re.compile(r"^ {0,3}(?:(?:-[ \t]*){3,}|(?:\*[ \t]*){3,}|(?:_[ \t]*){3,})$")
_LINK_DEFINITION = re.compile(r"^ {0,3}\[[^\]]+\]:\s+\S")
_QUOTE = re.compile(r"^\s{0,3}(?:>\s?)+")
_INLINE_RULES: InlineRules = (
    (re.compile(r"!\[([^\[\]]*)\]\([^()]*\)"), r"\1"),  # image -> alt text
    (re.compile(r"\[([^\[\]]+)\](?:\([^()]*\)|\[[^\[\]]*\])"), r"\1"),  # link -> its text
    (re.compile(r"<((?:https?|mailto):[^>\s]+)>"), r"\1"),  # autolink
    *emphasis_rules("**", "__", "~~"),
    *emphasis_rules("*", "_", inside_words=False),
)


def _strip_inline(text: str) -> str:
    """Drop emphasis and link markup; code spans keep their text untouched (`**kwargs`)."""
    return strip_inline_outside_code(text, _INLINE_RULES)


def _is_table_divider(line: str) -> bool:
    """`|---|:--:|` under a table header: no content, only layout."""
    stripped = line.strip()
    return "|" in stripped and "---" in stripped and set(stripped) <= set("|-: \t")


_TABLE_PARSER = MarkdownIt("commonmark").enable("table")


def _table_cells(lines: list[str]) -> tuple[list[str], list[list[str]]]:
    """Header and rows of a pipe table, cells split by a CommonMark parser (escaped pipes,
    pipes inside code spans) and stripped of inline markup."""
    header: list[str] = []
    rows: list[list[str]] = []
    current: list[str] | None = None
    in_head = False
    for token in _TABLE_PARSER.parse("\n".join(lines)):
        if token.type == "thead_open":
            in_head = True
        elif token.type == "thead_close":
            in_head = False
        elif token.type == "tr_open":
            current = []
        elif token.type == "tr_close" and current is not None:
            if in_head:
                header = current
            else:
                rows.append(current)
            current = None
        elif token.type == "inline" and current is not None:
            current.append(_strip_inline(token.content))
    return header, rows


def _table_end(lines: list[str], start: int) -> int:
    """The index after a pipe table whose header row is lines[start] (a divider follows it)."""
    end = start + 2
    while end < len(lines) and lines[end].strip() and "|" in lines[end]:
        end += 1
    return end


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


def parse_markdown(stem: str, text: str) -> ParsedDocument:
    frontmatter, body, frontmatter_error = _split_frontmatter(text)
    lines = _without_html_comments(body).splitlines()
    writer = BlockWriter()
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
        if match := _FENCE.match(line):
            fence, in_paragraph = match.group(1), False
            writer.flush()
            continue
        if match := _ATX.match(line):
            heading = without_closing_marks(match.group(2) or "", "#")
            writer.heading(len(match.group(1)), _strip_inline(heading))
            in_paragraph = False
            continue
        following = lines[index] if index < len(lines) else ""
        if (
            line.strip()
            and not in_paragraph
            and _SETEXT_UNDERLINE.match(following)
            and not _RULE.match(line)
            and not NEW_LINE_IN_PARAGRAPH.match(line)
            and not _QUOTE.match(line)
        ):
            writer.heading(1 if "=" in following else 2, _strip_inline(line))
            index += 1
            in_paragraph = False
            continue
        if _RULE.match(line) or _SETEXT_UNDERLINE.match(line) or _LINK_DEFINITION.match(line):
            writer.line("")  # a rule (or an underline we did not take) separates paragraphs
            in_paragraph = False
            continue
        if "|" in line and not in_paragraph and _is_table_divider(following):
            end = _table_end(lines, index - 1)
            header, rows = _table_cells(lines[index - 1 : end])
            if header or rows:
                writer.table(header, rows)
                index = end
                continue
        if _is_table_divider(line):
            continue
        writer.line(_strip_inline(_QUOTE.sub("", line)))
        in_paragraph = bool(line.strip())
    if fence is not None:  # an unclosed fence runs to the end of the document
        writer.verbatim("\n".join(code))

    explicit_title = optional_str(frontmatter.get("title"))
    heading_title, blocks = take_title_heading(writer.finish(), explicit_title)
    title = explicit_title or heading_title or stem
    metadata = _json_safe(frontmatter)
    if frontmatter_error:
        metadata["frontmatter_error"] = frontmatter_error
    return outline_document(
        title, "markdown", blocks,
        metadata=metadata,
        tags=_as_list(frontmatter.get("tags")),
        entities=_as_list(frontmatter.get("entities")),
        doc_type=optional_str(frontmatter.get("doc_type")),
        source_type=optional_str(frontmatter.get("source_type")),
    )
