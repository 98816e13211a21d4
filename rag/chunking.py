"""Cut a parsed document into retrieval-sized chunks that follow its headings.

A chunk that mixes two top-level sections answers neither question well, and
one cut mid-section loses its context, so chunks are built from whole
sections where they fit, long sections are split on paragraph and sentence
boundaries with a little overlap, and every section inside a chunk starts
with its heading line, which is often the best keyword match for a query.

Sentence boundaries are rag.sentences' (the spans citations point at): a part
of a split section ends where a citation's sentence ends, never inside one.
"""

from __future__ import annotations

from dataclasses import dataclass

from rag.parsers import ParsedDocument, Section
from rag.sentences import sentence_spans

# A chunk this small says too little to be retrieved on its own; it joins its neighbour.
TINY_CHUNK_WORDS = 40
# How full a part of a split section must be before we prefer ending it at a paragraph.
PARAGRAPH_BREAK_FILL = 0.75
_PARAGRAPH_BREAK = "\n\n"


@dataclass(frozen=True)
class ChunkDraft:
    """A chunk before it has an embedding or a row: the pipeline adds both."""

    text: str
    heading_path: str
    chunk_index: int
    total_chunks: int
    chunk_position: str  # "start" | "middle" | "end" | "only"
    page: int | None = None  # the page its first piece starts on, so a citation opens there


@dataclass
class _Piece:
    """A whole section, or one part of a long one, ready to be placed in a chunk."""

    text: str
    heading_path: tuple[str, ...]
    group: int  # index of the top-level section it belongs to
    # The first piece of a top-level section, and every later part of a split section
    # (it overlaps the part before, so the two never share a chunk), start a chunk.
    starts_chunk: bool
    has_body: bool
    page: int | None = None


@dataclass
class _Chunk:
    pieces: list[_Piece]

    @property
    def words(self) -> int:
        return sum(_word_count(piece.text) for piece in self.pieces)


def _word_count(text: str) -> int:
    return len(text.split())


def chunk_document(
    parsed: ParsedDocument, *, target_words: int = 250, max_words: int = 300, overlap_words: int = 30
) -> list[ChunkDraft]:
    """Chunks in reading order; [] for a document without text."""
    if not 0 <= overlap_words < target_words <= max_words:
        raise ValueError("need 0 <= overlap_words < target_words <= max_words")
    pieces = _pieces(parsed.sections, target_words=target_words, max_words=max_words, overlap_words=overlap_words)

    chunks: list[_Chunk] = []
    for piece in pieces:
        current = chunks[-1] if chunks else None
        if current is None or piece.starts_chunk or current.words + _word_count(piece.text) > max_words:
            chunks.append(_Chunk([piece]))
        else:
            current.pieces.append(piece)

    # Tiny chunks at the end of a top-level section join the chunk before them; this may
    # pass max_words by less than TINY_CHUNK_WORDS, which beats a chunk too small to match.
    merged: list[_Chunk] = []
    for index, chunk in enumerate(chunks):
        previous = merged[-1] if merged else None
        following = chunks[index + 1] if index + 1 < len(chunks) else None
        is_last_of_group = following is None or following.pieces[0].group != chunk.pieces[0].group
        if (
            previous is not None
            and is_last_of_group
            and chunk.words < TINY_CHUNK_WORDS
            and previous.pieces[-1].group == chunk.pieces[0].group
        ):
            previous.pieces.extend(chunk.pieces)
        else:
            merged.append(chunk)
    # A heading with nothing under it is not worth a chunk (an empty "Appendix").
    kept = [chunk for chunk in merged if any(piece.has_body for piece in chunk.pieces)]

    total = len(kept)
    return [
        ChunkDraft(
            text="\n\n".join(piece.text for piece in chunk.pieces),
            heading_path=" > ".join(chunk.pieces[0].heading_path),
            chunk_index=index,
            total_chunks=total,
            chunk_position=_position(index, total),
            page=chunk.pieces[0].page,
        )
        for index, chunk in enumerate(kept)
    ]


def _position(index: int, total: int) -> str:
    if total == 1:
        return "only"
    if index == 0:
        return "start"
    return "end" if index == total - 1 else "middle"


def _pieces(sections: list[Section], *, target_words: int, max_words: int, overlap_words: int) -> list[_Piece]:
    pieces: list[_Piece] = []
    group = -1
    previous: Section | None = None
    for section in sections:
        # Consecutive level-0 sections (the pages of a PDF without headings) are one stretch of text, not
        # separate top-level sections; so is a section carried on over pages or slides under the same heading.
        continued = previous is not None and section.level > 0 and section.heading_path == previous.heading_path
        opens_group = not continued and (
            group < 0 or section.level == 1 or (section.level == 0 and previous is not None and previous.level != 0))
        previous = section
        if opens_group:
            group += 1
        heading = section.heading_path[-1] if section.level > 0 and not continued else ""
        body = section.text.strip()
        if not heading and not body:
            continue
        if _word_count(heading) + _word_count(body) <= max_words:
            parts = [body]
        else:
            limit = max_words - _word_count(heading)
            parts = _split(body, target_words=target_words, limit=limit, overlap_words=overlap_words)
        for number, part in enumerate(parts):
            text = f"{heading}\n{part}" if heading and part else heading or part
            starts_chunk = (opens_group and number == 0) or number > 0
            pieces.append(_Piece(text, section.heading_path, group, starts_chunk, bool(part), section.page))
    return pieces


def _split(body: str, *, target_words: int, limit: int, overlap_words: int) -> list[str]:
    """Split a long section into parts of about target_words, each starting with the last
    overlap_words words of the one before, so a sentence cut at a seam survives in one.

    Parts end at paragraph boundaries once they are PARAGRAPH_BREAK_FILL full; before
    that a paragraph is broken between sentences to fill the part, so parts come out
    close to target_words rather than one short paragraph each.
    """
    budget = max(target_words - overlap_words, 1)  # new words per part; the overlap fills the rest
    # Units of a part: (text, what goes before it unless it opens the part).
    parts: list[list[tuple[str, str]]] = []
    current: list[tuple[str, str]] = []
    current_words = 0

    def close_part() -> None:
        nonlocal current, current_words
        if current:
            parts.append(current)
        current, current_words = [], 0

    for paragraph in (p for p in body.split("\n\n") if p.strip()):
        paragraph_words = _word_count(paragraph)
        if current_words + paragraph_words <= budget:
            current.append((paragraph, _PARAGRAPH_BREAK))
            current_words += paragraph_words
            continue
        if current_words >= budget * PARAGRAPH_BREAK_FILL:
            close_part()
            if paragraph_words <= budget:
                current, current_words = [(paragraph, _PARAGRAPH_BREAK)], paragraph_words
                continue
        for number, (sentence, gap) in enumerate(_sentences(paragraph, budget)):
            sentence_words = _word_count(sentence)
            if current and current_words + sentence_words > budget:
                close_part()
            current.append((sentence, _PARAGRAPH_BREAK if number == 0 else gap))
            current_words += sentence_words
    if current:
        # A small tail reads better as the end of the part before than as a part of its own.
        previous_words = sum(_word_count(unit) for unit, _ in parts[-1]) if parts else 0
        if parts and current_words < TINY_CHUNK_WORDS and previous_words + current_words + overlap_words <= limit:
            parts[-1].extend(current)
        else:
            parts.append(current)

    texts = [_join_units(part) for part in parts]
    with_overlap = texts[:1]
    for previous, text in zip(texts, texts[1:], strict=False):
        overlap = " ".join(previous.split()[-overlap_words:]) if overlap_words else ""
        with_overlap.append(f"{overlap} {text}" if overlap else text)
    return with_overlap


def _join_units(units: list[tuple[str, str]]) -> str:
    text = ""
    for unit, separator in units:
        text = f"{text}{separator}{unit}" if text else unit
    return text


def _sentences(paragraph: str, budget: int) -> list[tuple[str, str]]:
    """(sentence, the whitespace before it) of a paragraph, cut where rag.sentences cuts, so that the
    sentences of a part joined again are that slice of the paragraph; one longer than budget (a log
    dump) is cut into word windows."""
    cuts = [span.start for span in sentence_spans(paragraph)][1:]
    pieces: list[tuple[str, str]] = []
    gap = ""
    for begin, end in zip([0, *cuts], [*cuts, len(paragraph)], strict=True):
        raw = paragraph[begin:end]
        sentence = raw.rstrip() if end < len(paragraph) else raw
        words = sentence.split()
        if len(words) <= budget:
            pieces.append((sentence, gap))
        else:
            pieces.extend((" ".join(words[start : start + budget]), gap if start == 0 else " ")
                          for start in range(0, len(words), budget))
        gap = raw[len(sentence):]
    return [(piece, before) for piece, before in pieces if piece.strip()]
