"""Sentence spans of a chunk: the ids `chunk_id.sentence_index` that citations point at.

The chat composer and the document page both split here, so an id means the
same sentence in both places.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

import pysbd



@dataclass(frozen=True)
class SentenceSpan:
    index: int
    start: int
    end: int
    text: str


@lru_cache(maxsize=1)
def _segmenter() -> pysbd.Segmenter:
    return pysbd.Segmenter(language="en", clean=False, char_span=True)


def sentence_spans(text: str) -> list[SentenceSpan]:
    """Sentences within lines/paragraphs: a heading line never glues onto the next sentence."""
    spans: list[SentenceSpan] = []
    for block in re.finditer(r"[^\n]+(?:\n(?!\s*\n)[^\n]+)*", text):
        block_text = block.group(0)
        for piece in _segmenter().segment(block_text):
            stripped = piece.sent.strip()
            if not stripped:
                continue
            offset = piece.sent.find(stripped)
            start = block.start() + piece.start + max(offset, 0)
            spans.append(SentenceSpan(len(spans), start, start + len(stripped), stripped))
    return spans


def split_sentences(text: str) -> list[str]:
    return [span.text for span in sentence_spans(text)]
