"""Answer units: the quotable statements of search results, each with what it needs to stand alone.

A statement is a sentence with what it needs to be read alone: a definition with its term, a table row
with its headers, a list item with its lead-in, an "It ..." sentence with the one before it, a code or
setting heading with the text under it. Headings, fragments and code are never units. chat.extractive
scores and quotes them; chat.changes weighs them per release.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from django.conf import settings

from rag.sentences import SentenceSpan, sentence_spans

_WORD = re.compile(r"[a-z0-9][a-z0-9._-]*")
_STOP = frozenset(
    "a an and are as at be by can do does for from how i in is it me my of on or the this to what when where which "
    "who why will with you your should there their much many get set use used using".split()
)
# "auth.token_ttl: Default 12h." / "Rate limit per API key: 2.0: 600 ...": a term (or a row's label) and its value.
_NAME_PARTS = re.compile(r"[._]")  # "proxy.upstream_timeout", "max_body_size"; not "2.0" (no part is a word)
_TERM = re.compile(r"^(?P<term>[^\s:][^:]{0,80}?):\s+\S")
_BULLET = re.compile(r"^\s*(?:[-*+•]|\d{1,3}[.)])\s+")
# A sentence that leans on the one before it ("It defaults to 12h.").
_LEANS_BACK = re.compile(r"^(?:it|its|this|that|these|those|they|their|such|both|the latter|the former)\b",
                         re.IGNORECASE)
# A heading that names a code, a setting or a path ("LG1504 upstream_timeout", "/healthz") gives the text under it its subject.
_CODE_LIKE = re.compile(r"[A-Za-z]+\d{2,}|\w+_\w+|/\w+")
_FRAGMENT_START = re.compile(r"^(?:for|in|on|at|with|from|to|by|of|and|or|but|see|as)\b", re.IGNORECASE)
# A sentence begun mid-way ("related object in the SELECT statement."): a plain lower-case word, not a name
# ("html_theme", "sphinx-build", "conf.py"); the tail of a sentence the splitter or a chunk edge cut.
_EXAMPLE_LINES, _EXAMPLE_WORDS = 3, 30  # a code example short enough to read as a statement
_MID_SENTENCE = re.compile(r"^([a-z]+) (\S+)")
# A reference entry's field ("Default: ``0``", "Type: int", "New in version 4.1"): read with the entry's name.
_ENTRY_FIELD = re.compile(r"^(?:Default|Type|Value|Values|Choices|Required|New in version|Changed in version|"
                          r"Deprecated since version|Removed in version)\b", re.IGNORECASE)

@dataclass
class Unit:
    """One quotable statement of one result: the sentence ids it spans and the text a reader sees."""

    result_rank: int
    result: Any
    indexes: tuple[int, ...]
    text: str
    kind: str  # "sentence" | "definition" | "item" | "pair" | "headed" | "field" | "example"
    score: float = 0.0  # the learned ranker's score (chat.answer_ranker), or the hand score: what orders the answer
    cosine: float = 0.0
    relevance: float = 0.0  # meaning and rare terms alone: what the abstention floor is calibrated on
    power: float = 0.0  # how much of what the question asks for it states (chat.questions)
    vector: list[float] = field(default_factory=list, repr=False)
    features: list[float] = field(default_factory=list, repr=False)  # chat.answer_ranker.FEATURES
    evasive: bool = False  # only a heading, a pointer elsewhere ("see ...") or a page's scope: never the lead
    asked_terms: dict[str, float] = field(default_factory=dict, repr=False)  # the question's terms it holds, by rarity

    @property
    def key(self) -> tuple[int, int]:
        return (self.result.chunk_id, self.indexes[0])

    @property
    def sentence_index(self) -> int:
        return self.indexes[0]

    @property
    def sentence_ids(self) -> list[str]:
        return [f"{self.result.chunk_id}.{index}" for index in self.indexes]


def content_words(text: str) -> set[str]:
    """Lower-cased words minus stop words, a plural "s" dropped so "tokens" meets "token". A setting's or a
    function's name is its parts too ("proxy.upstream_timeout": proxy, upstream, timeout), so the question
    "the default upstream timeout" meets the entry that names it."""
    words = {w.strip("._-") for w in _WORD.findall(text.lower())}
    words |= {part for word in words if _NAME_PARTS.search(word) for part in _NAME_PARTS.split(word) if len(part) > 2}
    return {w[:-1] if len(w) > 3 and w.endswith("s") and not w.endswith("ss") else w for w in words - _STOP}


def cosine(a: Sequence[float], b: Sequence[float]) -> float:
    dot = sum(x * y for x, y in zip(a, b))
    norm = math.sqrt(sum(x * x for x in a)) * math.sqrt(sum(y * y for y in b))
    return dot / norm if norm else 0.0


# --- units ------------------------------------------------------------------------------------


def _heading_like(text: str, headings: set[str]) -> bool:
    """A title line: short and not ended like a sentence ("LG1504 upstream_timeout (HTTP 504)" too)."""
    words = text.split()
    if text.strip().lower() in headings:
        return True
    endings = (".", "!", "?", ":") if len(words) < 6 else (".", "!", "?", ":", ")", '"')
    return len(words) < 10 and not text.rstrip().endswith(endings)


def has_term(text: str) -> bool:
    """"term: value" (a definition, a table row, a labelled list item), the term at most eight words."""
    match = _TERM.match(_BULLET.sub("", text))
    return bool(match) and len(match.group("term").split()) <= 8


def _begun_midway(span: SentenceSpan, spans: list[SentenceSpan]) -> bool:
    """A sentence begun mid-way: a plain lower-case first word. Not when its first two words come again in the
    passage ("lumenctl backup create writes ...", "lumenctl backup prune"): a command or name whose code span
    the parser unwrapped opens that sentence; a cut tail's opening words are not repeated."""
    match = _MID_SENTENCE.match(span.text)
    if match is None:
        return False
    opening = re.compile(rf"(?<![\w.-]){re.escape(match.group(1))} {re.escape(match.group(2).rstrip('.,;:'))}")
    return not any(opening.search(other.text, 1 if other is span else 0) for other in spans)


def _entry_name(span: SentenceSpan, spans: list[SentenceSpan], heading_path: str) -> str:
    """The name a reference entry's field belongs to: the heading line over it in the chunk, else the last
    heading of the passage ("CONN_MAX_AGE"), when it reads as a name (one or two words)."""
    before = next((s for s in reversed(spans[: span.index]) if s.paragraph < span.paragraph
                   and s.kind == "prose" and _heading_like(s.text, set()) and not has_term(s.text)), None)
    name = before.text if before is not None else (heading_path or "").split(">")[-1].strip()
    return name if name and len(name.split()) <= 2 and not _ENTRY_FIELD.match(name) else ""


def _unit_for(span: SentenceSpan, spans: list[SentenceSpan], paragraph: list[SentenceSpan],
              heading_path: str = "") -> tuple[tuple[int, ...], str, str]:
    """(sentence indexes, text, kind) of the statement this sentence belongs to."""
    head = paragraph[0]
    if span is head and span.kind == "prose" and _ENTRY_FIELD.match(span.text) \
            and (name := _entry_name(span, spans, heading_path)):
        # "Default: 0" under "CONN_MAX_AGE": a record of name, field and value, "the default of X" answered by it.
        return (span.index,), f"{name}: {span.text}", "field"
    head_text = _BULLET.sub("", head.text)
    if span is not head and head.kind == span.kind and has_term(head_text):
        # A later sentence of a definition is read with the term and the value the first one gives.
        return (head.index, span.index), f"{head_text} {span.text}", "definition"
    if span.kind == "item":
        item = _BULLET.sub("", span.text)
        lead = next((s for s in reversed(spans[: span.index]) if s.kind != "item"), None)
        if lead is not None and lead.kind == "prose" and lead.text.endswith(":"):
            return (lead.index, span.index), f"{lead.text} {item}", "item"
        return (span.index,), item, "item"
    before = spans[span.index - 1] if span.index > 0 else None
    if (before is not None and span is head and before.paragraph == span.paragraph - 1 and before.kind == "prose"
            and _CODE_LIKE.search(before.text)
            and _heading_like(before.text, set()) and span.kind == "prose"):
        # "LG1002 no_route (HTTP 404)" over "No route matched ...": the heading names what the text is about.
        return (before.index, span.index), f"{before.text}: {span.text}", "headed"
    if _LEANS_BACK.match(span.text) and span.index > 0:
        before = spans[span.index - 1]
        if before.kind == "prose" and before.paragraph == span.paragraph and not _begun_midway(before, spans):
            return (before.index, span.index), f"{before.text} {span.text}", "pair"
    return (span.index,), span.text, "sentence"


def _example(span: SentenceSpan, spans: list[SentenceSpan]) -> tuple[tuple[int, ...], str] | None:
    """A short code example with the sentence that introduces it ("To enable it, add to conf.py:"): one statement,
    the code as `code`, for a "how do I" question to lead with. Long code is no statement."""
    after = spans[span.index + 1] if span.index + 1 < len(spans) else None
    if span.kind != "prose" or not span.text.endswith(":") or after is None or after.kind != "code":
        return None
    lines = [line.strip() for line in after.text.strip("`").strip().splitlines() if line.strip()]
    lines = [line for line in lines if not line.startswith("```")]
    if not lines or len(lines) > _EXAMPLE_LINES or any("`" in line for line in lines) \
            or sum(len(line.split()) for line in lines) > _EXAMPLE_WORDS:
        return None
    return (span.index, after.index), f"{span.text} " + " ".join(f"`{line}`" for line in lines)


def answer_units(results: Sequence[Any], *, examples: bool = False) -> list[Unit]:
    """Every quotable statement of the results, once each; headings, fragments and code never are. `examples`
    (a "how do I" question): a short code example with the sentence that introduces it is a statement too."""
    units: list[Unit] = []
    for rank, result in enumerate(results):
        headings = {part.strip().lower() for part in (result.heading_path or "").split(">")}
        spans = sentence_spans(result.text)
        paragraphs: dict[int, list[SentenceSpan]] = {}
        for span in spans:
            paragraphs.setdefault(span.paragraph, []).append(span)
        seen: set[tuple[int, ...]] = set()
        for span in spans:
            if span.kind == "code" or _heading_like(span.text, headings) and not has_term(span.text):
                continue
            if span.kind == "prose" and _begun_midway(span, spans):
                before = spans[span.index - 1] if span.index else None
                if before is None or before.paragraph != span.paragraph or before.kind != "prose":
                    continue  # the tail of a sentence cut at a chunk edge: no reader can follow it alone
                # The splitter cut one sentence in two (after "e.g." or a stripped role): quoted whole.
                indexes, text, kind = (before.index, span.index), f"{before.text} {span.text}", "pair"
            else:
                indexes, text, kind = _unit_for(span, spans, paragraphs[span.paragraph], result.heading_path or "")
            words = len(text.split())
            if indexes in seen or words > settings.ANSWER_UNIT_MAX_WORDS:
                continue
            if kind == "sentence" and (words < 4 and not has_term(text) or words > settings.ANSWER_SENTENCE_MAX_WORDS):
                continue  # a fragment, or a table or list run together that no reader can check
            if kind == "sentence" and words < 6 and _FRAGMENT_START.match(text) and not has_term(text):
                continue  # "For Lumen Gateway 3.0.": a title line's tail, not a statement
            if text.rstrip().endswith(":"):
                if examples and (example := _example(span, spans)) is not None and example[0] not in seen:
                    seen.add(example[0])
                    units.append(Unit(rank, result, example[0], example[1], "example"))
                continue  # a lead-in whose list or code follows: it says nothing alone
            seen.add(indexes)
            units.append(Unit(rank, result, indexes, text, kind))
    return units
