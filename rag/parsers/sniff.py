"""Tell reStructuredText and Markdown apart from plain text by content, whatever the extension.

Sphinx ships its sources as `_sources/*.rst.txt` and sdists carry `README.txt` files in
reST: parsed as plain text they get a row of `=` as their title. The plain-text parser
stays the choice unless the markup is unmistakable, because it is the one that reads
layout-only headings (ALL CAPS lines, "3.2 Limits") that the other two would run into
their paragraphs: an underlined title alone, or a `=====` banner, is not enough.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from rag.parsers.rst import adornment

_RST_EXPLICIT = re.compile(r"^\s*\.\. (?:\|[^|]+\|\s+)?(?:[\w:-]+::(?:\s|$)|_[^:]+:)")  # directive, `.. _target:`
_RST_ROLE = re.compile(r":[\w+.-]+:`[^`]+`")
_RST_LITERAL = re.compile(r"``[^`\s][^`]*``")
_RST_FIELD = re.compile(r"^:[A-Za-z][\w -]*:(?:\s|$)")
_RST_PLAIN_ADORNMENTS = "=-*#_"  # banner characters in plain text too; others (~ ^ " ') are reST's own
_MARKDOWN_ATX = re.compile(r"^#{1,6}[ \t]+(?=.*[^\W_])")  # `# ****` is a rule in a comment, not a heading
_MARKDOWN_FENCE = re.compile(r"^ {0,3}(?:```|~~~)")
_MARKDOWN_LINK = re.compile(r"\[[^\]\n]+\]\((?:https?://|/|\.|#)[^)\s]*\)")
_MARKDOWN_FRONTMATTER_KEY = re.compile(r"^[A-Za-z_][\w-]*:(?:\s|$)")
_MARKDOWN_SETEXT = re.compile(r"^(?:=+|-+)\s*$")

_THRESHOLD = 4  # points of evidence, counted in _rst_evidence and _markdown_evidence
_CAP = 6  # per kind of evidence: one construct repeated a hundred times is still one sign


@dataclass(frozen=True)
class Sniffed:
    """The markup a text file is written in, and the evidence, for a person to check."""

    format: str
    evidence: str


def sniff_markup(text: str) -> Sniffed | None:
    """'rst' or 'markdown' when the text clearly is written in it, else None (plain text)."""
    lines = text.splitlines()
    rst_score, rst_evidence = _rst_evidence(lines)
    markdown_score, markdown_evidence = _markdown_evidence(lines)
    if max(rst_score, markdown_score) < _THRESHOLD or rst_score == markdown_score:
        return None  # weak evidence, or as much of one as of the other: plain text is safer
    if rst_score > markdown_score:
        return Sniffed("rst", rst_evidence)
    return Sniffed("markdown", markdown_evidence)


def _describe(counts: dict[str, int]) -> str:
    return ", ".join(f"{kind}: {count}" for kind, count in counts.items() if count)


def _rst_evidence(lines: list[str]) -> tuple[int, str]:
    """Score section headings (a line over/underlined by a row at least as long) and
    markup (directives, targets, roles, ``literals``, docinfo). Without markup, headings
    count only in two styles, one of them reST's own (an overline, or `~ ^ "` and the like):
    `=`/`-` underlines are plain text's too, and the text parser reads them."""
    counts = dict.fromkeys(("headings", "directives or targets", "roles", "literals", "docinfo fields"), 0)
    styles: set[tuple[bool, str]] = set()
    index = 0
    while index < len(lines):
        line = lines[index]
        following = lines[index + 1] if index + 1 < len(lines) else ""
        after = lines[index + 2] if index + 2 < len(lines) else ""
        char = adornment(line)
        if char and following.strip() and adornment(after) == char and len(after.rstrip()) >= len(following.strip()):
            styles.add((True, char))
            counts["headings"] += 1
            index += 3
            continue
        under = adornment(following)
        previous_blank = index == 0 or not lines[index - 1].strip()
        if not char and under and previous_blank and line.strip() and not line[0].isspace():
            if len(following.rstrip()) >= len(line.rstrip()):
                styles.add((False, under))
                counts["headings"] += 1
                index += 2
                continue
        counts["directives or targets"] += bool(_RST_EXPLICIT.match(line))
        counts["roles"] += len(_RST_ROLE.findall(line))
        counts["literals"] += len(_RST_LITERAL.findall(line))
        index += 1
    top = [line for line in lines[:20] if line.strip() and not adornment(line)]
    counts["docinfo fields"] = sum(1 for line in top[:6] if _RST_FIELD.match(line))
    markup = sum(counts[kind] for kind in ("directives or targets", "roles", "literals", "docinfo fields"))
    distinctive = sum(1 for overline, char in styles if overline or char not in _RST_PLAIN_ADORNMENTS)
    if not markup and not (distinctive and len(styles) >= 2):
        return 0, ""
    score = (
        min(counts["headings"], _CAP)
        + distinctive
        + 3 * min(counts["directives or targets"], _CAP)
        + 2 * min(counts["roles"], _CAP)
        + min(counts["literals"], _CAP)
        + 3 * min(counts["docinfo fields"], 1)
    )
    return score, _describe(counts)


def _markdown_evidence(lines: list[str]) -> tuple[int, str]:
    """Score ATX headings (`# Title`), fenced code, YAML frontmatter, links and setext
    underlines too short for reST. `#` lines are also comments in config files and
    grammars, where they sit on what they describe; a Markdown heading has a blank line
    under it, so headings count only when most of them do."""
    counts = dict.fromkeys(("# headings", "code fences", "frontmatter", "links", "setext headings"), 0)
    spaced_headings = opening_heading = 0
    first_text = next((index for index, line in enumerate(lines) if line.strip()), 0)
    fence_open = False
    for index, line in enumerate(lines):
        previous = lines[index - 1] if index else ""
        tilde_underline = bool(previous.strip()) and set(line.strip()) == {"~"}  # reST's, under a heading
        if _MARKDOWN_FENCE.match(line) and (fence_open or not tilde_underline):
            counts["code fences"] += not fence_open
            fence_open = not fence_open
            continue
        if fence_open:
            continue
        following = lines[index + 1] if index + 1 < len(lines) else ""
        if _MARKDOWN_ATX.match(line) and not previous.startswith("#") and not following.startswith("#"):
            counts["# headings"] += 1
            if not following.strip():
                spaced_headings += 1
                opening_heading |= index == first_text
        elif line.strip() and _MARKDOWN_SETEXT.match(following) and 0 < len(following.rstrip()) < len(line.rstrip()):
            counts["setext headings"] += 1
        counts["links"] += len(_MARKDOWN_LINK.findall(line))
    counts["frontmatter"] = int(_has_frontmatter(lines))
    if 2 * spaced_headings < counts["# headings"]:
        spaced_headings = opening_heading = 0  # mostly comments over what they describe
    if not (spaced_headings or counts["code fences"] or counts["frontmatter"]):
        return 0, ""
    score = (
        2 * min(spaced_headings, _CAP)
        + 2 * opening_heading  # a document that opens with `# Title` is written in Markdown
        + 3 * min(counts["code fences"], _CAP)
        + 4 * counts["frontmatter"]
        + min(counts["links"], 3)
        + min(counts["setext headings"], _CAP)
    )
    return score, _describe(counts)


def _has_frontmatter(lines: list[str]) -> bool:
    """`---` on the first line, `key: value` lines, then a closing `---` or `...`."""
    if not lines or lines[0].rstrip() != "---":
        return False
    for index, line in enumerate(lines[1:40], start=1):
        if line.rstrip() in ("---", "..."):
            body = lines[1:index]  # nested values and list items are indented or start with `-`
            return bool(body) and all(
                _MARKDOWN_FRONTMATTER_KEY.match(entry) or entry[:1] in ("", " ", "\t", "-") for entry in body
            )
    return False
