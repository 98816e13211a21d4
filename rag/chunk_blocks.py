"""A chunk's text as the document page shows it: prose and code blocks, the cited sentences marked.

The stored text stays as the parsers wrote it (code fenced with CODE_FENCE lines); only the
page drops the fence lines and sets the code apart. The template escapes every piece.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from rag.facts import highlight_segments
from rag.sentences import CODE_FENCE, code_blocks


@dataclass(frozen=True)
class ChunkBlock:
    is_code: bool
    pieces: list[tuple[str, bool]]  # (text, cited) runs, in order


def chunk_blocks(text: str, cited: Sequence[tuple[int, int]] = ()) -> list[ChunkBlock]:
    """The text cut into prose and code blocks; `cited` are (start, end) offsets to mark, in order."""
    regions: list[tuple[bool, int, int]] = []
    cursor = 0
    for start, end in code_blocks(text):
        regions.append((False, cursor, start))
        inner_start = start + len(CODE_FENCE) + 1
        closed = end - len(CODE_FENCE) - 1 >= inner_start and text[end - len(CODE_FENCE) - 1:end] == "\n" + CODE_FENCE
        regions.append((True, inner_start, end - len(CODE_FENCE) - 1 if closed else end))
        cursor = end
    regions.append((False, cursor, len(text)))
    blocks = []
    for is_code, start, end in regions:
        if not is_code:  # the line breaks around a code block are its box's edges, not prose
            while start < end and text[start] == "\n":
                start += 1
            while end > start and text[end - 1] == "\n":
                end -= 1
        if start < end:
            within = [(low - start, high - start) for low, high in cited]
            blocks.append(ChunkBlock(is_code=is_code, pieces=highlight_segments(text[start:end], within)))
    return blocks

