"""Whose document it is: the subject a template fills in (a customer, a hire, a product, a country).

A pile of company documents is full of siblings: one template filled in for many subjects (a service
agreement per customer, an offer letter per hire, a datasheet per product, a policy per country). They share a
title and most of their text, yet none is a version of another. What tells them apart is where the template
was filled in: line up the opening sentences of two documents and the places where one names "Acme Corp" and
the other "Fjord AS" are the template's blanks. Versions of one document keep their names there and change
numbers, dates and wording ("Amended and Restated", "Edition 2025", a fee); two releases of a product's
documentation change versions, not names.

Pure text work on the documents' opening lines (the title and the first sentences of the body); lineage
(rag.lineage.evidence) reads it to keep siblings out of families, and what the blanks hold is each sibling's
subject, which search and answers use ("Acme Corp: the Customer pays ...").
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from difflib import SequenceMatcher
from functools import lru_cache

from rag.sentences import split_sentences

OPENING_SENTENCES = 8  # the title and the first sentences: where a template names its subject
OPENING_CHARACTERS = 1500
_ALIGNED_RATIO = 0.5  # one template's sentence: the longer repeats this share of the shorter's tokens
_SHARED_TOKENS = 0.45  # and this share of both sentences' tokens together
_COMPARABLE_LENGTH = 0.6  # two sentences of one template differ in length by their blanks only
_BLANK_TOKENS = 4  # "Tidewater Marine", "Cirrus R20": a name, a word or two beside it
_MIN_SENTENCE_TOKENS = 3  # "Policy - Norway": a title is a sentence of its template too

# A sentence that gives an example ("For example, Alice signs in as admin."): a name in it is the example's, not
# whom the document is for; two versions of one guide may pick other examples.
_EXAMPLE = re.compile(r"\b(?:for (?:example|instance)|e\.\s?g\.|example:|examples:|such as|suppose|let's say|imagine)",
                      re.I)
_TOKEN = re.compile(r"\w(?:[\w'’&.-]*\w)?|[^\w\s]")
# Capitalised words that begin sentences or name parts of a document, never a subject.
_COMMON = {
    "a", "an", "the", "this", "that", "these", "those", "it", "its", "our", "your", "we", "you", "he", "she", "they",
    "in", "on", "at", "of", "for", "to", "by", "with", "from", "and", "or", "as", "if", "no", "not", "all", "any",
    "each", "every", "is", "are", "be", "dear", "mr", "mrs", "ms", "dr", "edition", "version", "release", "rev",
    "revision", "page", "section", "chapter", "part", "appendix", "table", "figure", "note", "see", "new", "amended",
    "restated", "updated", "draft", "final", "annex", "schedule", "exhibit", "january", "february", "march",
    "april", "may", "june", "july", "august", "september", "october", "november", "december", "monday",
    "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday", "true", "false", "none", "null",
}  # fmt: skip


@dataclass(frozen=True)
class Blank:
    """A place two siblings fill differently: the name on each side."""

    ours: str
    theirs: str


def opening_lines(title: str, text: str) -> tuple[str, ...]:
    """The title and the first sentences of a document's text (its first chunk does): what a template fills in
    first."""
    sentences = [sentence for sentence in split_sentences(text[:OPENING_CHARACTERS]) if sentence.strip()]
    lines = [title.strip()] if title.strip() else []
    for sentence in sentences[:OPENING_SENTENCES]:
        if sentence.strip() != title.strip():
            lines.append(sentence.strip())
    return tuple(lines)


def _is_name(token: str) -> bool:
    """A word that names someone or something: capitalised and not a common word, or a model's code ("X320").

    Not a name: code ("Field.clean", "USE_L10N", "IsValid", "STORAGES"), a document number or a date-bearing id
    ("NS-2023-0855"), a constant ("True").
    """
    token = re.sub(r"['’]s$", "", token)
    if not token[:1].isalpha() or not token[:1].isupper() or re.search(r"[._()]", token):
        return False
    if re.search(r"[a-z][A-Z]", token) or (token.isalpha() and token.isupper() and len(token) >= 4):
        return False  # CamelCase and long all-capitals words are identifiers in code
    if any(ch.isdigit() for ch in token):
        return not re.search(r"\d{4}", token)  # "X320", "LS-40"
    return token.lower() not in _COMMON


def _name_part(token: str) -> bool:
    """A word that belongs to a name beside one, though alone it would not name: "Fjord AS", "Cobalt GmbH"."""
    return _is_name(token) or bool(re.fullmatch(r"[A-Z]{2,3}|[A-Z][a-z]+[A-Z][A-Za-z]*", token))


def _name_at(tokens: list[str], start: int, end: int) -> str:
    """The whole name around tokens[start:end]: the run of name words it belongs to ("Acme Corp", "Fjord AS")."""
    while start > 0 and _name_part(tokens[start - 1]):
        start -= 1
    while end < len(tokens) and _name_part(tokens[end]):
        end += 1
    parts = [re.sub(r"['’]s$", "", token) for token in tokens[start:end] if _name_part(token)]
    return " ".join(parts) if any(_is_name(token) for token in tokens[start:end]) else ""


def _normal(name: str) -> str:
    return re.sub(r"['’]s\b", "", name).casefold()


@lru_cache(maxsize=8192)
def _tokens(line: str) -> tuple[str, ...]:
    return tuple(_TOKEN.findall(line))


def _blanks_in(ours: tuple[str, ...], theirs: tuple[str, ...]) -> list[Blank]:
    """Names one sentence of a template holds where the other's same sentence holds another name."""
    matcher = SequenceMatcher(None, ours, theirs, autojunk=False)
    blanks = []
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag != "replace" or max(i2 - i1, j2 - j1) > _BLANK_TOKENS:
            continue  # a blank holds a name, not a rewritten clause
        # A sentence's first word is capitalised whatever it is ("How", "Writing"): it names nothing alone.
        if not any(_is_name(token) for token in ours[max(i1, 1):i2]) \
                or not any(_is_name(token) for token in theirs[max(j1, 1):j2]):
            continue
        if _a_value(ours, i1, i2) or _a_value(theirs, j1, j2):
            continue  # "4 GB" where the other says "8 MB": a value and its unit changed, not a name
        mine, other = _name_at(list(ours), i1, i2), _name_at(list(theirs), j1, j2)
        if mine and other and _normal(mine) != _normal(other):
            blanks.append(Blank(mine, other))
    return blanks


_NUMBER = re.compile(r"\d+(?:[.,]\d+)*")


def _a_value(tokens: tuple[str, ...], start: int, end: int) -> bool:
    return any(_NUMBER.fullmatch(token) for token in tokens[max(start - 1, 0):end])


def _title_case(tokens: tuple[str, ...]) -> bool:
    """A title or heading ("Lumen Gateway Operations Runbook"): every word capitalised, so none stands out as a
    name; two titles of one product differ in such words without naming two subjects."""
    words = [token for token in tokens if token[:1].isalpha() and len(token) > 3]  # "of", "and", "the" aside
    return len(words) >= 2 and all(word[:1].isupper() for word in words)


def _alignment(ours: tuple[str, ...], theirs: tuple[str, ...]) -> float:
    """How much of the shorter sentence the longer one repeats: a filled-in blank may be long on one side
    ("Cirrus R20 - branch-office router" against "Nimbus X320 - indoor Wi-Fi 6 access point")."""
    shorter, longer = sorted((len(ours), len(theirs)))
    if shorter < _COMPARABLE_LENGTH * longer:
        return 0.0  # a short sentence inside a long one is not the same sentence of a template
    matched = sum(block.size for block in SequenceMatcher(None, ours, theirs, autojunk=False).get_matching_blocks())
    if 2 * matched < _SHARED_TOKENS * (shorter + longer):
        return 0.0  # most of both is something else: two sentences that share some words
    return matched / max(1, shorter)


def template_blanks(ours: tuple[str, ...], theirs: tuple[str, ...]) -> list[Blank]:
    """Where two documents' opening sentences are one template's sentence filled with different names.

    Each of our sentences is lined up with the closest of theirs; a pair counts when most of its tokens match
    (one template's sentence), and then only where both sides hold a name in the same place. An example sentence
    names no subject.
    """
    their_tokens = [tokens for line in theirs if not _title_case(tokens := _tokens(line)) and not _EXAMPLE.search(line)]
    blanks: list[Blank] = []
    for line in ours:
        tokens = _tokens(line)
        if len(tokens) < _MIN_SENTENCE_TOKENS or _title_case(tokens) or _EXAMPLE.search(line):
            continue
        best, best_ratio = None, 0.0
        for candidate in their_tokens:
            ratio = _alignment(tokens, candidate)
            if ratio > best_ratio:
                best, best_ratio = candidate, ratio
        if best is not None and best_ratio >= _ALIGNED_RATIO:
            blanks.extend(_blanks_in(tokens, best))
    return blanks


def siblings(ours: tuple[str, ...], theirs: tuple[str, ...]) -> bool:
    """One template filled in for two subjects: their opening sentences hold different names in one place."""
    return bool(template_blanks(ours, theirs))


def subject_of(ours: tuple[str, ...], others: list[tuple[str, ...]]) -> str:
    """The name this document fills the template's blanks with, most often against its siblings ("" for none)."""
    counts: dict[str, int] = {}
    for theirs in others:
        for blank in template_blanks(ours, theirs):
            counts[blank.ours] = counts.get(blank.ours, 0) + 1
    if not counts:
        return ""
    return max(sorted(counts), key=lambda name: (counts[name], len(name)))
