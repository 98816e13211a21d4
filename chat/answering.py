"""Answers with citations: extractive by default, an LLM when one is configured.

Extractive answers quote the sentences of the top results that are closest to
the question in the encoder's space, number each source once ([N]) and, where
the sources disagree, state the newest and cite the older document that differs.
"""

from __future__ import annotations

import math
import re
import time
from functools import lru_cache
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from django.conf import settings
from django.db.models import Q

from chat.prompts import llm_messages
from rag import embeddings
from rag.dedup.facts import fact_differences
from rag.ingest.pipeline import embed_with_cache
from rag.models import Chunk, ChunkVariant, Contradiction
from rag.sentences import sentence_spans

_WORD = re.compile(r"[a-z0-9][a-z0-9._-]*")
_STOP = frozenset(
    "a an and are as at be by can do does for from how i in is it me my of on or the this to what when where which "
    "who why will with you your should there their much many".split()
)


@dataclass
class Answer:
    text: str
    citations: list[dict[str, Any]]
    mode: str  # "extractive" | "llm"
    notice: str = ""
    search: dict[str, Any] = field(default_factory=dict)
    timings: dict[str, float] = field(default_factory=dict)

    def metadata(self) -> dict[str, Any]:
        return {"citations": self.citations, "search": self.search, "timings": self.timings, "mode": self.mode,
                "notice": self.notice}


@dataclass
class _Sentence:
    result_rank: int
    result: Any
    sentence_index: int
    text: str
    score: float = 0.0
    vector: list[float] = field(default_factory=list, repr=False)

    @property
    def key(self) -> tuple[int, int]:
        return (self.result.chunk_id, self.sentence_index)


def _content_words(text: str) -> set[str]:
    return {w.strip("._-") for w in _WORD.findall(text.lower())} - _STOP


def _cosine(a: Sequence[float], b: Sequence[float]) -> float:
    dot = sum(x * y for x, y in zip(a, b))
    norm = math.sqrt(sum(x * x for x in a)) * math.sqrt(sum(y * y for y in b))
    return dot / norm if norm else 0.0


def _iso(value) -> str | None:
    return value.isoformat() if value else None


def _candidate_sentences(results: Sequence[Any]) -> list[_Sentence]:
    sentences = []
    for rank, result in enumerate(results):
        headings = {part.strip().lower() for part in (result.heading_path or "").split(">")}
        for span in sentence_spans(result.text):
            words = span.text.split()
            heading_like = len(words) < 10 and not span.text.rstrip().endswith((".", "!", "?", ":", ")", '"'))
            if len(words) < 4 or heading_like or span.text.strip().lower() in headings:
                continue  # headings and fragments answer nothing
            if len(words) > settings.ANSWER_SENTENCE_MAX_WORDS:
                continue  # a table or list run together, not a sentence a reader can check
            sentences.append(_Sentence(rank, result, span.index, span.text))
    return sentences


@lru_cache(maxsize=256)
def _encoded_question(encoder_name: str, question: str) -> tuple[float, ...]:
    return tuple(embeddings.encode_query(question))


def _question_vector(question: str) -> tuple[float, ...]:
    """One encoding per question, however many sources are scored against it."""
    return _encoded_question(embeddings.get_encoder().name, question)


def _score(question: str, sentences: list[_Sentence]) -> None:
    """Meaning first (encoder cosine), word overlap second, the retrieval rank last."""
    question_vector = _question_vector(question)
    # Sentences of popular chunks recur across questions: the embedding cache encodes each once.
    sentence_vectors, _ = embed_with_cache([s.text for s in sentences])
    question_words = _content_words(question)
    for sentence, vector in zip(sentences, sentence_vectors):
        sentence.vector = list(vector)
        overlap = len(question_words & _content_words(sentence.text)) / max(1, len(question_words))
        sentence.score = 0.75 * _cosine(question_vector, vector) + 0.2 * overlap + 0.05 / (1 + sentence.result_rank)


def _pick(sentences: list[_Sentence], *, limit: int) -> list[_Sentence]:
    ranked = sorted(sentences, key=lambda s: -s.score)
    if not ranked:
        return []
    best = ranked[0].score
    picked: list[_Sentence] = []
    per_source: dict[int, int] = {}
    seen_words: list[set[str]] = []
    for sentence in ranked:
        if len(picked) >= limit or sentence.score < settings.ANSWER_SENTENCE_MIN_RATIO * best:
            break
        words = _content_words(sentence.text)
        if any(len(words & other) / max(1, len(words | other)) > 0.7 for other in seen_words):
            continue  # the same statement from another source adds nothing
        if per_source.get(sentence.result_rank, 0) >= 2:
            continue
        picked.append(sentence)
        seen_words.append(words)
        per_source[sentence.result_rank] = per_source.get(sentence.result_rank, 0) + 1
    # Read in source order, and within a source in text order.
    return sorted(picked, key=lambda s: (s.result_rank, s.sentence_index))


def citation_for(result: Any, *, n: int, position: int, relevance: float, sentence_ids: list[str], role: str = "answer") -> dict:
    return {
        "n": n,
        "chunk_id": result.chunk_id,
        "document_id": result.document_id,
        "document_title": result.title,
        "path": result.path,
        "doc_date": _iso(result.doc_date),
        "doc_type": result.doc_type,
        "heading_path": result.heading_path,
        "relevance": round(max(0.0, min(1.0, relevance)), 3),
        "position": position,
        "sentence_ids": sentence_ids,
        "variant_count": getattr(result, "variant_count", 0) or 0,
        "has_contradictions": bool(getattr(result, "has_contradictions", False)),
        "canonical_record_id": getattr(result, "canonical_record_id", None),
        "provenance": _provenance_entries(getattr(result, "provenance", None)),
        "role": role,
        # Kept so that "2.1 · superseded by 3.0" still reads right when the page is reloaded.
        "family_id": getattr(result, "family_id", None),
        "version_label": getattr(result, "version_label", "") or "",
        "is_latest_version": bool(getattr(result, "is_latest_version", True)),
        "lineage": getattr(result, "lineage", "") or "",
        "superseded_by_label": getattr(result, "superseded_by_label", "") or "",
    }


def _provenance_entries(provenance: dict | None) -> list[dict]:
    """Every document of the result's record with its date (canonical first, then newest), JSON-ready."""
    members = (provenance or {}).get("members") or []
    if len(members) < 2:
        return []
    return [
        {
            "document_id": m["document_id"],
            "chunk_id": m["chunk_id"],
            "title": m.get("title", ""),
            "path": m.get("path", ""),
            "doc_date": m["doc_date"] if isinstance(m.get("doc_date"), str) else _iso(m.get("doc_date")),
            "is_canonical": m.get("role") == "canonical",
        }
        for m in members
    ]


@dataclass
class _OtherVersion:
    """A chunk that says something else about the same passage, shaped like a search result."""

    chunk_id: int
    document_id: int
    title: str
    path: str
    doc_date: Any
    doc_type: str
    heading_path: str
    text: str
    variant_count: int = 0
    has_contradictions: bool = True
    canonical_record_id: int | None = None
    provenance: dict | None = None


def _date_key(value) -> float:
    return value.timestamp() if value else float("-inf")  # unknown dates are the oldest


def _other_versions(result: Any) -> list[_OtherVersion]:
    """Pending contradictions of the chunk, else record members whose text differs."""
    pairs = Contradiction.objects.filter(status=Contradiction.Status.PENDING).filter(
        Q(chunk_a_id=result.chunk_id) | Q(chunk_b_id=result.chunk_id)
    ).values_list("chunk_a_id", "chunk_b_id")
    partner_ids = {a if b == result.chunk_id else b for a, b in pairs}
    chunks = list(Chunk.objects.filter(pk__in=partner_ids, document__archived=False).select_related("document"))
    if not chunks and getattr(result, "canonical_record_id", None):
        chunks = [
            variant.chunk
            for variant in ChunkVariant.objects.filter(record_id=result.canonical_record_id).select_related("chunk__document")
            if variant.chunk.text.strip() != result.text.strip()
        ]
    return [
        _OtherVersion(c.pk, c.document_id, c.document.title, c.document.path, c.document.doc_date, c.document.doc_type,
                      c.heading_path, c.text, canonical_record_id=getattr(result, "canonical_record_id", None))
        for c in chunks
    ]


def _best_sentence(question: str, source: Any) -> _Sentence | None:
    sentences = _candidate_sentences([source])
    if not sentences:
        return None
    _score(question, sentences)
    return max(sentences, key=lambda s: s.score)


def _restates_differently(a: _Sentence, b: _Sentence) -> bool:
    """Two documents say the same thing with different facts (600 vs 1200 requests per minute)."""
    if a.result.document_id == b.result.document_id:
        return False
    if _cosine(a.vector, b.vector) < settings.ANSWER_CONFLICT_SIMILARITY:
        return False
    return bool(fact_differences(a.text, b.text))


def _newest(sentences: list[_Sentence]) -> _Sentence:
    return max(sentences, key=lambda s: (_date_key(s.result.doc_date), s.score))


def _resolve_conflicts(
    question: str, picked: list[_Sentence], candidates: list[_Sentence]
) -> tuple[list[_Sentence], list[tuple[_Sentence, _Sentence]]]:
    """The newest version of each picked statement, and (older, newer) pairs where versions disagree."""
    statements: list[_Sentence] = []
    notes: list[tuple[_Sentence, _Sentence]] = []
    settled: set[tuple[int, int]] = set()
    for sentence in sorted(picked, key=lambda s: -s.score):
        if sentence.key in settled:
            continue
        rivals = [c for c in candidates if c.key not in settled and _restates_differently(sentence, c)]
        versions = [sentence, *rivals]
        # Versions of this passage the search did not surface: contradictions and record variants.
        if getattr(sentence.result, "has_contradictions", False) or getattr(sentence.result, "variant_count", 0):
            for other in _other_versions(sentence.result):
                quoted = _best_sentence(question, other)
                if quoted is not None and quoted.key not in settled:
                    versions.append(quoted)
        newest = _newest(versions)
        older = [v for v in versions if _date_key(v.result.doc_date) < _date_key(newest.result.doc_date)]
        if newest is not sentence and not fact_differences(sentence.text, newest.text):
            older = []  # a newer wording of the same facts: no conflict to report
        statements.append(newest)
        settled |= {v.key for v in versions}
        if older and newest.result.doc_date is not None:
            previous = _newest(older)
            # Only an older sentence about the same thing is a disagreement worth a note.
            close = _cosine(previous.vector, newest.vector) >= settings.ANSWER_CONFLICT_SIMILARITY
            if close and fact_differences(previous.text, newest.text):
                notes.append((previous, newest))
    return statements, notes


def compose_extractive(question: str, results: Sequence[Any]) -> tuple[str, list[dict]]:
    """Quote the best sentences, one [N] per source; where versions disagree, lead with the newest."""
    sentences = _candidate_sentences(results)
    if not sentences:
        return ("I found nothing in this workspace's documents that answers that.", [])
    _score(question, sentences)
    picked = _pick(sentences, limit=settings.ANSWER_MAX_SENTENCES)
    statements, notes = _resolve_conflicts(question, picked, sentences)

    numbers: dict[int, int] = {}
    citations: list[dict] = []

    def cite(sentence: _Sentence, role: str, position: int) -> int:
        source = sentence.result
        if source.chunk_id not in numbers:
            numbers[source.chunk_id] = len(numbers) + 1
            citations.append(citation_for(source, n=numbers[source.chunk_id], position=position, relevance=0.0,
                                          sentence_ids=[], role=role))
        citation = citations[numbers[source.chunk_id] - 1]
        sentence_id = f"{source.chunk_id}.{sentence.sentence_index}"
        if sentence_id not in citation["sentence_ids"]:
            citation["sentence_ids"].append(sentence_id)
        citation["relevance"] = round(max(citation["relevance"], min(1.0, max(0.0, sentence.score))), 3)
        return numbers[source.chunk_id]

    # Read source by source, in the order the sources first matter, and in text order within one.
    order = {id(s.result): i for i, s in reversed(list(enumerate(sorted(statements, key=lambda s: -s.score))))}
    statements.sort(key=lambda s: (order[id(s.result)], s.sentence_index))
    parts = [f"{s.text} [{cite(s, 'answer', s.result_rank + 1)}]" for s in statements]
    reported: set[int] = set()
    for older, newer in notes:
        if older.result.document_id in reported:
            continue
        reported.add(older.result.document_id)
        n_older = cite(older, "older_version", len(results) + 1)
        newer_date = newer.result.doc_date.date().isoformat()
        older_date = older.result.doc_date.date().isoformat() if older.result.doc_date else "undated"
        parts.append(
            f"Note: this follows the newest source [{numbers[newer.result.chunk_id]}] ({newer_date}); an older "
            f"document, {older.result.title} ({older_date}), differs: \u201c{older.text}\u201d [{n_older}]"
        )
    return " ".join(parts), citations


_MARKER = re.compile(r"\[(\d{1,2})\]")


def cited_numbers(text: str) -> list[int]:
    """The [N] markers of a reply, in first-use order."""
    seen: list[int] = []
    for match in _MARKER.finditer(text):
        n = int(match.group(1))
        if n not in seen:
            seen.append(n)
    return seen


def llm_citations(reply: str, results: Sequence[Any]) -> list[dict]:
    """Citations for the sources the reply actually cites, numbered as in the prompt."""
    citations = []
    for n in cited_numbers(reply):
        if 1 <= n <= len(results):
            result = results[n - 1]
            citations.append(citation_for(result, n=n, position=n, relevance=float(result.score), sentence_ids=[]))
    return citations


def llm_configured() -> bool:
    return bool(settings.LLM_BASE_URL and settings.LLM_MODEL)


class Timer:
    def __init__(self) -> None:
        self.timings: dict[str, float] = {}
        self._start = time.perf_counter()

    def lap(self, name: str) -> None:
        now = time.perf_counter()
        self.timings[name] = round((now - self._start) * 1000, 1)
        self._start = now


def _search(question: str, *, workspace, options: dict) -> tuple[list[Any], dict[str, Any]]:
    """Run retrieval with a conversation's options; returns results and what was used."""
    from rag.retrieval import search_for_chat

    # Provenance is always fetched (where licensed); the option only decides whether it starts expanded.
    results, used = search_for_chat(question, workspace=workspace, options={**options, "provenance": True},
                                    top_k=settings.ANSWER_TOP_K, query_embedding=_question_vector(question))
    used = {**used, "options": dict(options)}
    return list(results), used


def _compose(question: str, results: Sequence[Any], used: dict[str, Any]) -> tuple[str, list[dict]]:
    """A change question states each version's side; any other question, the best statements."""
    stats = used.get("stats", {})
    versions = stats.get("versions") or {}
    if versions.get("mode") == "change" and stats.get("change_sides"):
        return compose_change(versions.get("topic") or question, results, stats["change_sides"])
    return compose_extractive(question, results)


def compose_change(topic: str, results: Sequence[Any], sides: Sequence[dict]) -> tuple[str, list[dict]]:
    """"In 2.1 (2025-02-20): ... [1] In 3.0 (2025-10-06): ... [2]": each version's best statement of the topic,
    oldest first, each cited and dated. A version with nothing on the topic says so."""
    sentences = _candidate_sentences(results)
    if not sentences:
        return ("I found nothing in this workspace's documents that answers that.", [])
    _score(topic, sentences)
    by_side = [sorted((s for s in sentences if s.result.chunk_id in set(side["chunk_ids"])), key=lambda s: -s.score)
               for side in sides]
    chosen = [ranked[0] if ranked else None for ranked in by_side]
    if len(by_side) == 2 and all(by_side):
        # The change itself: two statements of one thing (close in meaning) whose facts differ.
        def pair_score(old: _Sentence, new: _Sentence) -> float:
            changed = _cosine(old.vector, new.vector) >= settings.ANSWER_CONFLICT_SIMILARITY and bool(
                fact_differences(old.text, new.text))
            return old.score + new.score + (1.0 if changed else 0.0)

        window = settings.ANSWER_CHANGE_CANDIDATES
        chosen = list(max(((old, new) for old in by_side[0][:window] for new in by_side[1][:window]),
                          key=lambda pair: pair_score(*pair)))
    parts: list[str] = []
    citations: list[dict] = []
    for side, best in zip(sides, chosen):
        if best is None:
            parts.append(f"In {side['label']}: nothing in the documents of that version states it.")
            continue
        source = best.result
        n = len(citations) + 1
        citations.append(citation_for(source, n=n, position=best.result_rank + 1,
                                      relevance=round(min(1.0, max(0.0, best.score)), 3),
                                      sentence_ids=[f"{source.chunk_id}.{best.sentence_index}"]))
        dated = f" ({source.doc_date.date().isoformat()})" if source.doc_date else ""
        parts.append(f"In {side['label']}{dated}: {best.text} [{n}]")
    return " ".join(parts), citations


def answer(question: str, *, workspace, options: dict) -> Answer:
    """The extractive answer, or the LLM's when one is configured (falling back on failure)."""
    timer = Timer()
    results, used = _search(question, workspace=workspace, options=options)
    timer.lap("search_ms")
    notice = ""
    if llm_configured() and results:
        from chat.llm import LLMError, stream_chat

        try:
            reply = "".join(stream_chat(llm_messages(question, results)))
            timer.lap("llm_ms")
            return Answer(reply, llm_citations(reply, results), "llm", search=used, timings=timer.timings)
        except LLMError as exc:
            notice = f"The language model did not answer ({exc}); this is the extractive answer instead."
    text, citations = _compose(question, results, used)
    timer.lap("compose_ms")
    return Answer(text, citations, "extractive", notice=notice, search=used, timings=timer.timings)


def answer_stream(question: str, *, workspace, options: dict) -> Iterator[str | Answer]:
    """Yield reply pieces as the LLM writes them, then the finished Answer (extractive on failure)."""
    timer = Timer()
    results, used = _search(question, workspace=workspace, options=options)
    timer.lap("search_ms")
    if not results or not llm_configured():
        text, citations = _compose(question, results, used)
        timer.lap("compose_ms")
        yield Answer(text, citations, "extractive", search=used, timings=timer.timings)
        return
    from chat.llm import LLMError, stream_chat

    pieces: list[str] = []
    try:
        for piece in stream_chat(llm_messages(question, results)):
            pieces.append(piece)
            yield piece
    except LLMError as exc:
        text, citations = _compose(question, results, used)
        timer.lap("compose_ms")
        notice = f"The language model did not answer ({exc}); this is the extractive answer instead."
        yield Answer(text, citations, "extractive", notice=notice, search=used, timings=timer.timings)
        return
    reply = "".join(pieces)
    timer.lap("llm_ms")
    yield Answer(reply, llm_citations(reply, results), "llm", search=used, timings=timer.timings)
