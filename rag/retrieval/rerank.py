"""Reranking the head of the fused list by sentence-level evidence.

A chunk's vector averages every sentence in it, so a long reference section
that states the fact in one line can rank below a topic page that talks
around it. For the best RERANK_DEPTH candidates we therefore look for the
single sentence that best answers the question, in one of two ways
(RERANK_EVIDENCE):

- "terms" (the default; microseconds): the share of the question's rare-term
  weight (idf of its full-text lexemes, from the lexical stage's statistics)
  and of its identifiers that one sentence of the chunk, or its heading, holds;
- "vectors": the cosine of the chunk's sentence closest to the question, with
  the encoder we already have (no cross-encoder weights can be had here).
  Sentence vectors are computed at query time and kept in the bounded
  in-process cache of rag.embeddings (`embed_with_process_cache`); on this
  machine that costs seconds per uncached query, so it is opt-in.

    combined = fused / best fused in the head + RERANK_SENTENCE_WEIGHT * evidence

and the head is re-sorted by `combined`, rescaled onto the fused scale so the
later stages (doc-type boost, version demotions) act as before.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

import numpy as np

from rag import embeddings

MIN_SENTENCE_CHARS = 12  # shorter lines ("Default: 5", a lone heading) carry little of their own
MAX_SENTENCES_PER_CHUNK = 16  # a long table chunk must not cost a hundred encodings

_SENTENCE_END = re.compile(r"(?<=[.!?;:])\s+(?=[A-Z`*\"'(\[-])|\n+")


def chunk_sentences(text: str) -> list[str]:
    """The chunk's sentences and lines, cheaply: no full segmenter on the query path."""
    pieces = [" ".join(piece.split()) for piece in _SENTENCE_END.split(text or "")]
    kept = [piece for piece in pieces if len(piece) >= MIN_SENTENCE_CHARS]
    return kept[:MAX_SENTENCES_PER_CHUNK]


def best_sentence_similarities(query_vector: Sequence[float], texts: Sequence[str]) -> list[float]:
    """For each text, the cosine of its sentence closest to the query (0.0 for a text without sentences)."""
    per_text = [chunk_sentences(text) for text in texts]
    flat = [sentence for sentences in per_text for sentence in sentences]
    if not flat:
        return [0.0] * len(texts)
    matrix = embeddings.embed_with_process_cache(flat, encoder=embeddings.get_query_encoder())
    query = np.asarray(query_vector, dtype=np.float32)
    similarities = matrix @ query  # the encoder normalizes its vectors: a dot product is the cosine
    best, start = [], 0
    for sentences in per_text:
        best.append(float(similarities[start:start + len(sentences)].max()) if sentences else 0.0)
        start += len(sentences)
    return best


def identifier_pattern(identifiers: Sequence[str]) -> re.Pattern | None:
    """One regex that finds any of the identifiers as a whole token (case-blind, but `-W` is not `-w`)."""
    if not identifiers:
        return None
    alternatives = [
        re.escape(i) if i.startswith("-") and len(i) == 2 else "(?i:" + re.escape(i) + ")"
        for i in sorted(identifiers, key=len, reverse=True)
    ]
    return re.compile(r"(?<![\w.\-])(?:" + "|".join(alternatives) + r")(?![\w\-]|\.\w)")


def _found_identifiers(pattern: re.Pattern | None, piece: str) -> set[str]:
    if pattern is None:
        return set()
    return {m if m.startswith("-") and len(m) == 2 else m.lower() for m in pattern.findall(piece)}


def best_sentence_term_cover(texts: Sequence[str], headings: Sequence[str], *,
                             terms: Sequence[tuple[str, float]], identifiers: Sequence[str]) -> list[float]:
    """For each text, the largest share of the question's weight that one of its sentences (plus heading) holds.

    `terms` are (stemmed lexeme, idf); a word holds a lexeme when it starts with it (Snowball
    stems are prefixes of most of their words). Each identifier weighs as much as the rarest term.
    One regex per kind scans a sentence: this runs on ~30 chunks per search.
    """
    weight_of_identifier = max((idf for _, idf in terms), default=1.0)
    total = sum(idf for _, idf in terms) + weight_of_identifier * len(identifiers)
    if total <= 0:
        return [0.0] * len(texts)
    idf = {lexeme: weight for lexeme, weight in terms}
    lexeme_pattern = re.compile(
        r"\b(" + "|".join(re.escape(lexeme) for lexeme in sorted(idf, key=len, reverse=True)) + ")",
        re.IGNORECASE) if idf else None
    wanted = identifier_pattern(identifiers)

    def held(piece: str) -> tuple[set[str], set[str]]:
        lexemes = {m.lower() for m in lexeme_pattern.findall(piece)} if lexeme_pattern else set()
        return lexemes, _found_identifiers(wanted, piece)

    best = []
    for text, heading in zip(texts, headings):
        heading_lexemes, heading_identifiers = held(heading or "")
        top = 0.0
        for sentence in chunk_sentences(text) or [text]:
            lexemes, found = held(sentence)
            lexemes |= heading_lexemes
            found |= heading_identifiers
            top = max(top, (sum(idf.get(lexeme, 0.0) for lexeme in lexemes)
                            + weight_of_identifier * len(found)) / total)
        best.append(top)
    return best


def rerank_head(candidates: list[Any], *, query_vector: Sequence[float] | None, depth: int, sentence_weight: float,
                evidence: str = "terms", terms: Sequence[tuple[str, float]] = (),
                identifiers: Sequence[str] = ()) -> dict[str, Any]:
    """Re-sort the first `depth` candidates (best first, with `.score` and `.row`) in place."""
    head = candidates[:depth]
    if len(head) < 2:
        return {"reranked": 0}
    if evidence == "vectors" and query_vector is not None:
        best = best_sentence_similarities(query_vector, [c.row["text"] for c in head])
    elif evidence == "terms" and (terms or identifiers):
        best = best_sentence_term_cover([c.row["text"] for c in head], [c.row["heading_path"] for c in head],
                                        terms=terms, identifiers=identifiers)
    else:
        return {"reranked": 0}
    top_fused = max(c.score for c in head) or 1.0
    combined = [c.score / top_fused + sentence_weight * similarity for c, similarity in zip(head, best)]
    top_combined = max(combined) or 1.0
    for candidate, value in zip(head, combined):
        candidate.score = top_fused * value / top_combined
    head.sort(key=lambda c: -c.score)
    candidates[:depth] = head
    return {"reranked": len(head), "best_sentence": round(max(best), 4)}
