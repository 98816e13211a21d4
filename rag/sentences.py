"""Sentence spans of a chunk: the ids `chunk_id.sentence_index` that citations point at.

The chat composer and the document page both split here, so an id means the
same sentence in both places. A fenced code block (the parsers fence every
literal block) is one span of kind "code", so no sentence is cut out of code
and the answerer can tell code from prose; a list line is of kind "item", so
that it can be quoted with its lead-in.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

import pysbd

CODE_FENCE = "```"  # the parsers' fence (rag.parsers._common.CODE_FENCE)
_PARAGRAPH = re.compile(r"[^\n]+(?:\n(?!\s*\n)[^\n]+)*")
_LIST_ITEM = re.compile(r"^\s*(?:[-*+•]|\d{1,3}[.)])\s+")


@dataclass(frozen=True)
class SentenceSpan:
    index: int
    start: int
    end: int
    text: str
    paragraph: int = 0  # the line it is on (the parsers write a paragraph per line); a code block is one
    kind: str = "prose"  # "prose" | "item" (a list line) | "code"


@lru_cache(maxsize=1)
def _segmenter() -> pysbd.Segmenter:
    return pysbd.Segmenter(language="en", clean=False, char_span=True)


def _blocks(text: str) -> list[tuple[int, str, str]]:
    """(offset, text, kind) of each paragraph, a fenced code block whole even across blank lines."""
    blocks: list[tuple[int, str, str]] = []
    position = 0
    while position < len(text):
        start = text.find(CODE_FENCE + "\n", position)
        at_line_start = start == 0 or (start > 0 and text[start - 1] == "\n")
        while start != -1 and not at_line_start:
            start = text.find(CODE_FENCE + "\n", start + 1)
            at_line_start = start > 0 and text[start - 1] == "\n"
        prose_end = start if start != -1 else len(text)
        for match in _PARAGRAPH.finditer(text, position, prose_end):
            blocks.append((match.start(), match.group(0), "prose"))
        if start == -1:
            break
        end = text.find("\n" + CODE_FENCE, start + len(CODE_FENCE))
        end = len(text) if end == -1 else end + 1 + len(CODE_FENCE)
        blocks.append((start, text[start:end], "code"))
        position = end
    return blocks


def code_blocks(text: str) -> list[tuple[int, int]]:
    """(start, end) of each fenced code block, fences included; an unclosed one runs to the end."""
    return [(offset, offset + len(block)) for offset, block, kind in _blocks(text) if kind == "code"]


# Chunks split recently, by text: the same popular chunks come back question after question, and pysbd
# is the dearest step of an extractive answer (measured under 10 askers: ~60% of composing, most of it
# compiling regular expressions it builds per call, more than the `re` module's cache holds).
SPLIT_CACHE_SIZE = 4096


_CODE_SPAN = re.compile(r"`[^`\n]+`")
_LONE_DOTS = re.compile(r"(?<=\s)(?:\.\.(?=\s)|\.(?=\w))")
_SENTENCE_MARKS = str.maketrans(".!?", "\u2024\u01c3\u0294")  # look-alikes, one character each


def _code_masked(line: str) -> str:
    """The line with the full stops inside `code spans` and after a space masked, one character for one: the
    splitter never ends a sentence inside `.. admonition::` or `conf.py`, and offsets into the line stay true."""
    masked = _CODE_SPAN.sub(lambda match: match.group(0).translate(_SENTENCE_MARKS), line)
    # A dot after a space ends no sentence: a reST directive quoted in prose ("use the .. note:: directive"), a
    # file extension or a relative name ("a collection of .pot files", "the .create_engine function").
    return _LONE_DOTS.sub(lambda match: match.group(0).translate(_SENTENCE_MARKS), masked)


def sentence_spans(text: str) -> list[SentenceSpan]:
    """Sentences within lines: a heading line never glues onto the next sentence.

    The parsers write each paragraph on one line, so a line is a paragraph here (a chunk's
    heading line, a list item, a table row); a fenced code block is one paragraph of its own.
    """
    return list(_sentence_spans(text))


@lru_cache(maxsize=SPLIT_CACHE_SIZE)
def _sentence_spans(text: str) -> tuple[SentenceSpan, ...]:
    spans: list[SentenceSpan] = []
    paragraph = -1
    for offset, block_text, kind in _blocks(text):
        if kind == "code":
            paragraph += 1
            stripped = block_text.strip()
            spans.append(SentenceSpan(len(spans), offset, offset + len(block_text), stripped, paragraph, "code"))
            continue
        line_start = 0
        for line in block_text.split("\n"):
            base, line_start = offset + line_start, line_start + len(line) + 1
            if not line.strip():
                continue
            paragraph += 1
            line_kind = "item" if _LIST_ITEM.match(line) else "prose"
            for piece in _segmenter().segment(_code_masked(line)):
                sent = line[piece.start:piece.start + len(piece.sent)]  # the line's own text, code spans as written
                stripped = sent.strip()
                if not stripped:
                    continue
                start = base + piece.start + max(sent.find(stripped), 0)
                spans.append(SentenceSpan(len(spans), start, start + len(stripped), stripped, paragraph, line_kind))
    return tuple(spans)


def split_sentences(text: str) -> list[str]:
    return [span.text for span in sentence_spans(text)]
