"""Extractive answers: whole statements quoted from the sources, best first, or an honest abstention.

A statement is an answer unit: a sentence with what it needs to stand alone (a
definition with its term, a table row with its headers, a list item with its
lead-in, an "It ..." sentence with the one before it). Units are scored for the
question with the encoder and the question's rare terms, the current version is
preferred, and 1-3 of them make the answer. When even the best is below the
relevance floor the answer says so and lists the nearest sources as closest
matches, never as citations. Where versions disagree, one line after the current
statement names the older one ("2.1 said: ... [2]").
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from django.conf import settings

from chat.answer_ranker import about_the_document, heading_only, pointer, ranker_score, unit_features
from chat.citations import citation_for
from chat.questions import answering_power, asked_value_kind, question_kind
from chat.releases import row_for_release, subject_said, version_said, without_subjects
from rag import embeddings
from rag.facts import fact_differences
from rag.embeddings import embed_with_cache
from rag.releases import asks_whats_new, heading_release, of_release, parse_version, version_in_series
from rag.retrieval import subjects_named
from rag.selectors import chunks_other_versions, contradiction_decisions, decision_among
from chat.units import Unit, answer_units, content_words, cosine, has_term  # noqa: F401 - has_term: evaluation's

NOTHING_FOUND = "I found nothing in this workspace's documents that answers that."
ABSTAINED = "The documents in this workspace don't answer that."
# A release notes section that says what a release brings ("Highlights", "What's new in 5.0", "Features added"):
# where a "what's new" answer begins.
_HIGHLIGHTS_SECTION = re.compile(r"\b(?:highlights|what(?:'s|’s|\s+is)\s+new|new\s+features|features(?:\s+added)?|"
                                 r"major\s+(?:changes|features)|new\s+in\b)", re.I)


@dataclass
class Extract:
    """An extractive answer: its text and citations, or an abstention with the closest matches."""

    text: str
    citations: list[dict]
    abstained: bool = False
    closest: list[dict] = field(default_factory=list)
    evidence: float = 0.0  # the best statement's score, whatever the floor: what the floor is calibrated on


# --- scoring ------------------------------------------------------------------------------------


@lru_cache(maxsize=256)
def _encoded_question(encoder_name: str, question: str) -> tuple[float, ...]:
    return tuple(embeddings.encode_query(question))


def question_vector(question: str) -> tuple[float, ...]:
    """One encoding per question, however many sources are scored against it."""
    return _encoded_question(embeddings.get_query_encoder().name, question)


def _is_stale(result: Any) -> bool:
    return getattr(result, "lineage", "") in ("superseded", "retired") or not getattr(result, "is_latest_version", True)


def _release_against(result: Any, as_of: str) -> int:
    """1: the asked release's own statement; -1: another release's; 0: no release asked, or an unlabelled passage."""
    if not as_of:
        return 0
    label = getattr(result, "version_label", "") or ""  # the release the passage speaks for (rag.retrieval)
    if of_release(label, as_of):
        return 1
    return -1 if label else 0


def notes_release(result: Any) -> str:
    """The release whose notes a passage is ("Release 5.3.0 (released Oct 16, 2022)" in its heading path), or ""."""
    for part in reversed((getattr(result, "heading_path", "") or "").split(">")):
        if found := heading_release(part):
            return found[0]
    return ""


def _older_notes(results: Sequence[Any], as_of: str) -> set[int]:
    """Chunk ids of an older release's notes: a present question is answered by the newest release the results
    speak for, a question about one release by that release's notes, never an earlier one's ("Bugs fixed" of
    5.3 in a changelog that ships with 8.1 is 5.3's, whatever the file's label)."""
    notes = {result.chunk_id: release for result in results if (release := notes_release(result))}
    if not notes:
        return set()
    if as_of and parse_version(as_of) is not None:
        return {chunk_id for chunk_id, release in notes.items() if not of_release(release, as_of)}
    known = [*notes.values(), *(getattr(result, "version_label", "") or "" for result in results)]
    newest = max((version for label in known if (version := parse_version(label))), default=None)
    if newest is None:
        return set()
    return {chunk_id for chunk_id, release in notes.items()
            if (version := parse_version(release)) is not None and version < newest
            and not version_in_series(version, newest)}


def score_units(question: str, units: list[Unit], *, as_of: str = "", kind: str = "",
                vectors: dict[str, Sequence[float]] | None = None, subjects: set[str] = frozenset(),
                ranker: str = "") -> None:
    """Relevance, what the abstention floor reads: meaning (encoder cosine) and the question's rare terms, a little
    for the retrieval rank. The score that orders the units: the learned ranker's (chat.answer_ranker: does it
    state a value of the asked kind about the asked subject, in the asked release?), or with ANSWER_RANKER "hand"
    relevance plus answering power. Both are multiplied down for a superseded or retired passage, or, for a
    question about one release (`as_of`), for another release's. `vectors`: the units' vectors by text where the
    caller read them already; `subjects`: whom the question names (a sibling's subject): naming them is not
    answering; `ranker`: "hand" or "learned" whatever ANSWER_RANKER says."""
    if not units:
        return
    kind = kind or question_kind(question)
    asked = asked_value_kind(question)
    # Whom the question names, search has found (rag.retrieval.subjects); what it asks is the rest of it.
    question = (without_subjects(question, subjects) or question) if subjects else question
    vector = question_vector(question)
    if vectors is not None and all(unit.text in vectors for unit in units):
        unit_vectors = [vectors[unit.text] for unit in units]
    else:
        # Units of popular chunks recur across questions: the embedding cache encodes each once.
        unit_vectors, _ = embed_with_cache([unit.text for unit in units], encoder=embeddings.get_query_encoder())
    terms = content_words(question)
    unit_words = [content_words(unit.text) for unit in units]
    # A term few candidate statements contain says more about which one answers than a common one.
    weights = {term: math.log(1 + len(units) / (1 + sum(term in words for words in unit_words))) for term in terms}
    total = sum(weights.values()) or 1.0
    learned = (ranker or settings.ANSWER_RANKER) != "hand"
    # A change question reads each release's own notes: none of them is stale there.
    older_notes = set() if kind == "change" else \
        _older_notes(list({id(unit.result): unit.result for unit in units}.values()), as_of)
    for unit, unit_vector, words in zip(units, unit_vectors, unit_words):
        unit.vector = list(unit_vector)
        unit.cosine = cosine(vector, unit_vector)
        unit.asked_terms = {term: weight for term, weight in weights.items() if term in words}
        rare = sum(unit.asked_terms.values()) / total
        unit.relevance = 0.7 * unit.cosine + 0.3 * rare + 0.03 / (1 + unit.result_rank)
        unit.power = answering_power(kind, unit.text, unit.kind, new_words=len(words - terms), subject=rare)
        release = _release_against(unit.result, as_of)
        unit.features = unit_features(
            text=unit.text, unit_kind=unit.kind, heading_path=getattr(unit.result, "heading_path", "") or "",
            sentence_index=unit.sentence_index, result_rank=unit.result_rank, cosine=unit.cosine, rare=rare,
            power=unit.power, terms=terms, words=words, asked=asked, release=release,
            stale=not as_of and _is_stale(unit.result))
        # A page's scope ("This reference covers ... 3.0.") answers only which release a page is of: asked
        # that, of no release named, it may lead; otherwise it is filler, the more so for a question naming the release.
        unit.evasive = learned and (heading_only(unit.text) and unit.kind != "item" or pointer(unit.text)) \
            or about_the_document(unit.text) and (asked != "version" or bool(as_of))
        unit.score = ranker_score(unit.features) if learned else \
            unit.relevance + settings.ANSWER_POWER_WEIGHT * unit.power
        factor = 1.0
        if release:
            # Another release's statement never leads a question about one release.
            factor = 1 / settings.ANSWER_STALE_FACTOR if release > 0 else settings.ANSWER_STALE_FACTOR
        elif not as_of and _is_stale(unit.result):
            factor = settings.ANSWER_STALE_FACTOR
        if unit.result.chunk_id in older_notes:
            factor = min(factor, settings.ANSWER_STALE_FACTOR)  # an older release's notes answer neither
        unit.relevance *= factor
        unit.score *= factor


def _same_subject(lead: Unit, unit: Unit) -> bool:
    """A further statement is about what the lead answers: it holds one of the question's words the lead holds
    ("Kubernetes liveness probe": "The 3.0 chart requires Kubernetes 1.28" shares none with a lead on the probe)."""
    return not lead.asked_terms or any(term in unit.asked_terms for term in lead.asked_terms)


def _pick(units: list[Unit], *, limit: int) -> list[Unit]:
    """The best units above the floor and near the best, best first; one statement said once."""
    # A statement that only restates the question, a bare heading or a pointer ("see ...") never leads, whatever
    # its score: the best of the others sets the bar.
    ranked = sorted(units, key=lambda u: (u.relevance < settings.ANSWER_RELEVANCE_FLOOR, u.power <= -1, u.evasive,
                                          -u.score))
    if not ranked:
        return []
    floor = settings.ANSWER_SENTENCE_MIN_RATIO * ranked[0].score
    picked: list[Unit] = []
    seen_words: list[set[str]] = []
    per_source: dict[int, int] = {}
    for unit in ranked:
        if len(picked) >= limit:
            break
        if unit.score < floor or picked and (unit.evasive or not _same_subject(picked[0], unit)):
            continue  # a heading, a pointer, a page's scope or another subject's statement never follows the answer
        if unit.relevance < settings.ANSWER_RELEVANCE_FLOOR:
            continue
        words = content_words(unit.text)
        overlaps = any(unit.result is other.result and set(unit.indexes) & set(other.indexes) for other in picked)
        if overlaps or any(len(words & other) / max(1, len(words | other)) > 0.7 for other in seen_words):
            continue  # the same statement again, or from another source: it adds nothing
        if per_source.get(unit.result_rank, 0) >= 2:
            continue
        picked.append(unit)
        seen_words.append(words)
        per_source[unit.result_rank] = per_source.get(unit.result_rank, 0) + 1
    return picked


def _steps(best: Unit, units: list[Unit]) -> Unit:
    """A "how do I" answer: every step of the list the best item belongs to, in order, under its lead-in."""
    led = len(best.indexes) > 1
    items = sorted((u for u in units if u.result is best.result and u.kind == "item"
                    and (u.indexes[0] == best.indexes[0] if led else len(u.indexes) == 1)), key=lambda u: u.indexes[-1])
    lead = _lead_text(best)
    text = " ".join([lead, *(u.text.removeprefix(lead).strip() for u in items)]).strip()
    if len(items) < 2 or len(text.split()) > 2 * settings.ANSWER_UNIT_MAX_WORDS:
        return best
    indexes = tuple(dict.fromkeys([*best.indexes[:1 if led else 0], *(u.indexes[-1] for u in items)]))
    return Unit(best.result_rank, best.result, indexes, text, "steps", score=best.score, cosine=best.cosine,
                relevance=best.relevance, power=best.power, vector=best.vector)


def _highlights(question: str, units: list[Unit], as_of: str) -> Unit | None:
    """A "what's new" answer: the highlights of the asked release's own notes (the newest release's for the
    present), each item's first statement in the notes' order, as many as one answer holds; None when no notes'
    highlights section is among the results."""
    if not asks_whats_new(question):
        return None
    sections: dict[int, tuple[Any, list[Unit]]] = {}
    for unit in units:
        heading = (getattr(unit.result, "heading_path", "") or "").split(">")[-1]
        # Each highlight is about itself, not the question's words: the answer's floor is met already.
        if _HIGHLIGHTS_SECTION.search(heading) and notes_release(unit.result) and _release_against(unit.result, as_of) >= 0:
            sections.setdefault(unit.result.chunk_id, (unit.result, []))[1].append(unit)
    if not sections:
        return None

    def newest(section: tuple[Any, list[Unit]]) -> tuple:
        version = parse_version(notes_release(section[0]))
        return version is not None, version, -section[0].chunk_id

    result, found = max(sections.values(), key=newest)
    items: list[Unit] = []
    for unit in sorted(found, key=lambda u: u.indexes):
        if unit.evasive or any(set(unit.indexes) & set(item.indexes) for item in items):
            continue  # an item's later sentences: its first one says what it is
        if sum(len(item.text.split()) for item in [*items, unit]) > 2 * settings.ANSWER_UNIT_MAX_WORDS:
            break
        items.append(unit)
    if not items:
        return None
    best = max(items, key=lambda u: u.score)
    return Unit(best.result_rank, result, tuple(i for item in items for i in item.indexes),
                " ".join(item.text if item.text.endswith((".", "!", "?")) else item.text + "." for item in items),
                "steps", score=best.score, cosine=best.cosine, relevance=max(u.relevance for u in items),
                power=best.power, vector=best.vector)


def _lead_text(unit: Unit) -> str:
    """The lead-in an item unit was quoted under ("To rotate an API key:"), or ""."""
    head, colon, _rest = unit.text.partition(": ")
    return head + ":" if colon and len(unit.indexes) > 1 else ""


# --- versions that disagree ----------------------------------------------------------------------


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
    version_label: str = ""
    variant_count: int = 0
    has_contradictions: bool = True
    canonical_record_id: int | None = None
    provenance: dict | None = None


def _date_key(value) -> float:
    return value.timestamp() if value else float("-inf")  # unknown dates are the oldest


def _other_versions(results: Sequence[Any]) -> dict[int, list[_OtherVersion]]:
    """chunk id -> its older and newer versions and pending contradictions, else record members whose text
    differs: read for all the results at once."""
    records = {result.chunk_id: getattr(result, "canonical_record_id", None) for result in results}
    found = chunks_other_versions(chunks=[(r.chunk_id, records[r.chunk_id], r.text) for r in results]) \
        if results else {}
    return {chunk_id: [
        _OtherVersion(c.pk, c.document_id, c.document.title, c.document.path, c.document.doc_date, c.document.doc_type,
                      c.heading_path, c.text, version_label=c.document.version_label or "",
                      canonical_record_id=records[chunk_id])
        for c in chunks
    ] for chunk_id, chunks in found.items()}


def _best_units(question: str, sources: dict[int, list[Any]]) -> dict[int, list[Unit]]:
    """chunk id -> the best statement of each of its other versions, each scored alone as before, the vectors
    of all of them read in one embedding-cache call."""
    units = {chunk_id: [answer_units([source]) for source in found] for chunk_id, found in sources.items()}
    texts = list(dict.fromkeys(unit.text for groups in units.values() for group in groups for unit in group))
    vectors = dict(zip(texts, embed_with_cache(texts, encoder=embeddings.get_query_encoder())[0])) if texts else {}
    best: dict[int, list[Unit]] = {}
    for chunk_id, groups in units.items():
        for group in groups:
            score_units(question, group, vectors=vectors)
            if group:
                best.setdefault(chunk_id, []).append(max(group, key=lambda u: u.score))
    return best


def _restates_differently(a: Unit, b: Unit) -> bool:
    """Two documents say the same thing with different facts (600 vs 1200 requests per minute)."""
    if a.result.document_id == b.result.document_id or _subjects_differ(a, b):
        return False
    if cosine(a.vector, b.vector) < settings.ANSWER_CONFLICT_SIMILARITY:
        return False
    return bool(fact_differences(a.text, b.text))


def _subjects_differ(a: Unit, b: Unit) -> bool:
    """Siblings' passages (two customers' fees) are each true for their own subject, never versions."""
    subjects = getattr(a.result, "subject", ""), getattr(b.result, "subject", "")
    return all(subjects) and subjects[0] != subjects[1]


def _newest(units: list[Unit]) -> Unit:
    return max(units, key=lambda u: (_date_key(u.result.doc_date), u.score))


def _reviewer_decision(versions: list[Unit], decisions: list[tuple[int, int, int, int]]) -> tuple[Unit, Unit] | None:
    """(kept, overruled) where a reviewer resolved a contradiction between two of these statements' passages;
    `decisions`: contradiction_decisions of every passage the answer may name."""
    by_chunk = {v.result.chunk_id: v for v in versions}
    if len(by_chunk) < 2:
        return None
    decision = decision_among(decisions, by_chunk)
    if decision is None:
        return None
    kept, overruled = decision
    return by_chunk[kept], by_chunk[overruled]


def _resolve_conflicts(question: str, picked: list[Unit], candidates: list[Unit]) -> tuple[list[Unit], list[tuple[Unit, Unit]]]:
    """The newest version of each picked statement, and (older, newer) pairs where versions disagree.

    The database is read twice for the whole answer, not per statement: the other versions of every picked
    passage that may have some, then the reviewer decisions among all of them and the candidates.
    """
    statements: list[Unit] = []
    notes: list[tuple[Unit, Unit]] = []
    settled: set[tuple[int, int]] = set()
    # Versions of these passages the search did not surface: contradictions and record variants.
    may_have_others = {u.result.chunk_id: u.result for u in picked
                       if getattr(u.result, "has_contradictions", False) or getattr(u.result, "variant_count", 0)
                       or getattr(u.result, "family_id", None)}
    found = _other_versions(list(may_have_others.values()))
    others = _best_units(question, found)
    named = {u.result.chunk_id for u in [*picked, *candidates]} \
        | {other.chunk_id for versions in found.values() for other in versions}
    decisions = contradiction_decisions(chunk_ids=named) if len(named) > 1 else []
    for unit in picked:
        if unit.key in settled:
            continue
        versions = [unit, *(c for c in candidates if c.key not in settled and _restates_differently(unit, c))]
        versions += [quoted for quoted in others.get(unit.result.chunk_id, []) if quoted.key not in settled]
        newest = _newest(versions)
        reviewed = _reviewer_decision(versions, decisions)
        if reviewed is not None and reviewed[1].result.chunk_id == newest.result.chunk_id:
            # A reviewer kept the other side of this contradiction: their decision outranks the dates.
            kept, overruled = reviewed
            statements.append(kept)
            settled |= {v.key for v in versions}
            notes.append((overruled, kept))
            continue
        older = [v for v in versions if _date_key(v.result.doc_date) < _date_key(newest.result.doc_date)]
        if newest is not unit and not fact_differences(unit.text, newest.text):
            older = []  # a newer wording of the same facts: no conflict to report
        statements.append(newest)
        settled |= {v.key for v in versions}
        if older and newest.result.doc_date is not None:
            previous = _newest(older)
            # Only an older statement about the same thing is a disagreement worth a line.
            close = cosine(previous.vector, newest.vector) >= settings.ANSWER_CONFLICT_SIMILARITY
            same_release = _version_name(previous) == _version_name(newest) and bool(
                getattr(newest.result, "version_label", ""))
            if close and not same_release and fact_differences(previous.text, newest.text):
                notes.append((previous, newest))
    return statements, notes


# --- composing ------------------------------------------------------------------------------------


def closest_matches(results: Sequence[Any], units: list[Unit]) -> list[dict]:
    """The nearest sources of an abstention: named so the reader can look, not cited as support."""
    best: dict[int, float] = {}
    for unit in units:
        best[unit.result.chunk_id] = max(best.get(unit.result.chunk_id, 0.0), unit.score)
    entries = []
    for result in results[: settings.ANSWER_CLOSEST_MATCHES]:
        entries.append({
            "chunk_id": result.chunk_id, "document_id": result.document_id, "document_title": result.title,
            "path": result.path, "heading_path": result.heading_path,
            "doc_date": result.doc_date.isoformat() if result.doc_date else None,
            "relevance": round(max(0.0, min(1.0, best.get(result.chunk_id, 0.0))), 3),
        })
    return entries


def _version_name(unit: Unit) -> str:
    """"2.1", else the title and date: what the older line says said it."""
    label = getattr(unit.result, "version_label", "") or ""
    if label:
        return label
    date = unit.result.doc_date.date().isoformat() if unit.result.doc_date else "undated"
    return f"{unit.result.title} ({date})"


def _quoted(text: str) -> str:
    return text.rstrip().rstrip(".")


def compose_extractive(question: str, results: Sequence[Any], *, as_of: str = "", as_of_said: str = "") -> Extract:
    """The best 1-3 statements, best first, one [N] per source; where versions disagree the current
    statement leads and one line names the older one. Below the relevance floor: an abstention.

    For a question about one release (`as_of`, the search already scoped to it) that release's
    statements are what is asked for: no newer version replaces them; the answer is headed with `as_of_said`
    ("In 2.1 (2.1.2):"), else `as_of`.
    """
    units = answer_units(results, examples=question_kind(question) == "steps")
    if not units:
        return Extract(NOTHING_FOUND, [], abstained=True, closest=closest_matches(results, units))
    named = subjects_named(question, {r.subject: [] for r in results if getattr(r, "subject", "")})
    if named:  # the question names whose: statements of other subjects' documents never answer it
        units = [u for u in units if not getattr(u.result, "subject", "") or u.result.subject in named] or units
    score_units(question, units, as_of=as_of, subjects=set(named))
    evidence = round(max(unit.relevance for unit in units), 4)
    picked = _pick(units, limit=settings.ANSWER_MAX_UNITS)
    if not picked:
        return Extract(ABSTAINED, [], abstained=True, closest=closest_matches(results, units), evidence=evidence)
    if question_kind(question) == "steps" and picked[0].kind == "item":
        picked = [_steps(picked[0], units)]
    highlights = _highlights(question, units, as_of)
    if highlights is not None:
        picked = [highlights]  # what a release brings, from its own notes, is the answer: no other page replaces it
    statements, notes = (picked, []) if as_of or highlights else _resolve_conflicts(question, picked, units)

    numbers: dict[int, int] = {}
    citations: list[dict] = []

    def cite(unit: Unit, role: str, position: int) -> int:
        source = unit.result
        if source.chunk_id not in numbers:
            numbers[source.chunk_id] = len(numbers) + 1
            citations.append(citation_for(source, n=numbers[source.chunk_id], position=position, relevance=0.0,
                                          sentence_ids=[], role=role))
        citation = citations[numbers[source.chunk_id] - 1]
        for sentence_id in unit.sentence_ids:
            if sentence_id not in citation["sentence_ids"]:
                citation["sentence_ids"].append(sentence_id)
        # What the reader sees as "relevance": the statement's meaning and rare terms against the question (the
        # abstention floor's scale), not the ranker's score, which passes 1 for nearly every answer (100% each).
        citation["relevance"] = round(max(citation["relevance"], min(1.0, max(0.0, unit.relevance))), 3)
        return numbers[source.chunk_id]

    release = as_of if re.fullmatch(r"v?\d+(?:\.[\w-]+)*", as_of) else ""  # a release, not a date
    lines = [f"{subject_said(getattr(unit.result, 'subject', ''), row_for_release(unit.text, release))} "
             f"[{cite(unit, 'answer', unit.result_rank + 1)}]" for unit in statements]
    if lines and release:
        lines[0] = version_said(as_of_said or as_of, lines[0])
    if notes:
        # One clean line: the most recent older statement that differs from the current one.
        older, _newer = max(notes, key=lambda pair: _date_key(pair[0].result.doc_date))
        n_older = cite(older, "older_version", len(results) + 1)
        lines.append(f"{_version_name(older)} said: {_quoted(older.text)} [{n_older}]")
    return Extract(" ".join(lines[: len(statements)]) + "".join(f"\n{line}" for line in lines[len(statements):]),
                   citations, evidence=evidence)
