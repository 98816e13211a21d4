"""Fact differences between two near-duplicate texts: what a contradiction names.

A fact is a value a reader could act on: a number with its unit, a version, a
date, a duration, a switch (enabled/disabled, true/false, on/off) or an
obligation (must / must not, ...). The texts are aligned word by word; only
where they differ are facts compared, and only a change from one value to
another counts. A fact present on one side alone is an omission or a
rewording ("30 seconds" -> "half a minute"), not a contradiction, and equal
values in different words ("30s" / "30 seconds", "1 minute" / "60 seconds")
are equal.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from difflib import SequenceMatcher
from functools import lru_cache

from rag.dates import MONTH_NAMES

# Words either side of a change that still belong to it: "600 requests" when only "600" changed,
# "must not" when only "not" was inserted.
CONTEXT_WORDS = 2


@dataclass(frozen=True)
class Fact:
    kind: str  # number | duration | size | percent | version | date | switch | obligation
    value: str  # normalized: equal values in different words compare equal
    text: str  # as written
    start: int
    end: int


_DURATION_SECONDS = {
    "ms": 0.001, "millisecond": 0.001, "milliseconds": 0.001, "msec": 0.001,
    "s": 1, "sec": 1, "secs": 1, "second": 1, "seconds": 1,
    "m": 60, "min": 60, "mins": 60, "minute": 60, "minutes": 60,
    "h": 3600, "hr": 3600, "hrs": 3600, "hour": 3600, "hours": 3600,
    "d": 86400, "day": 86400, "days": 86400,
    "w": 604800, "wk": 604800, "week": 604800, "weeks": 604800,
    "month": 2592000, "months": 2592000, "year": 31536000, "years": 31536000,
}
_SIZE_BYTES = {
    "b": 1, "byte": 1, "bytes": 1,
    "kb": 1024, "kib": 1024, "k": 1024,
    "mb": 1024**2, "mib": 1024**2, "gb": 1024**3, "gib": 1024**3, "tb": 1024**4, "tib": 1024**4,
}
# Counted things: "1000 requests" and "1000 connections" are different facts.
_COUNT_UNITS = (
    "requests?|reqs?|rps|rpm|qps|connections?|conns?|retries|retry|attempts?|times|threads?|workers?|"
    "processes|cores?|cpus?|vcpus?|replicas?|nodes?|instances?|pods?|shards?|partitions?|items?|"
    "entries|entry|records?|rows?|characters?|chars?|tokens?|keys?|routes?|consumers?|users?|"
    "sessions?|files?|lines?|backups?|copies|days? of|failures?|errors?|events?|messages?|bits?"
)
_DURATION_UNITS = "|".join(sorted(_DURATION_SECONDS, key=len, reverse=True))
_SIZE_UNITS = "|".join(sorted(_SIZE_BYTES, key=len, reverse=True))
_NUMBER = r"\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?"
_BARE_NUMBER = r"\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d{2,}(?:\.\d+)?|\d\.\d+"
_MONTHS = MONTH_NAMES  # the month table of rag.dates

# Order matters: earlier patterns claim their characters first (a date is not three numbers).
_PATTERNS: list[tuple[str, re.Pattern[str]]] = [
    ("date", re.compile(r"(?<![\w.])\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2})?Z?)?(?!\w|\.\d)")),
    ("date", re.compile(rf"\b(?:{_MONTHS})\.? \d{{1,2}}(?:st|nd|rd|th)?,? \d{{4}}\b|\b\d{{1,2}} (?:{_MONTHS}) \d{{4}}\b"
                        rf"|\b(?:{_MONTHS}) \d{{4}}\b", re.IGNORECASE)),
    ("version", re.compile(r"(?<![\w.-])v\d+(?:\.\d+)*(?:[-.]?(?:alpha|beta|rc)\.?\d*)?\b|"
                           r"(?<![\w.])\d+\.\d+\.(?:\d+|x|\*)(?:[-.](?:alpha|beta|rc)\.?\d*)?(?!\w|\.\d)|"
                           r"(?<![\w.])\d+\.(?:x|\*)(?!\w|\.\d)", re.IGNORECASE)),
    ("percent", re.compile(rf"(?<![\w.])(?:{_NUMBER})\s?(?:%|percent\b)", re.IGNORECASE)),
    ("duration", re.compile(rf"(?<![\w.])(?:{_NUMBER})[\s-]?(?:{_DURATION_UNITS})\b", re.IGNORECASE)),
    ("size", re.compile(rf"(?<![\w.])(?:{_NUMBER})\s?(?:{_SIZE_UNITS})\b", re.IGNORECASE)),
    ("number", re.compile(rf"(?<![\w.])(?:{_NUMBER})\s(?:{_COUNT_UNITS})\b", re.IGNORECASE)),
    # A bare "2.1" after a version word is a version; elsewhere it is a number.
    ("version", re.compile(r"\b(?:version|release|versions|releases|lumen|gateway|series|to|from|in|since|"
                           r"before|after|until|than|and|or)\s+(?P<fact>\d+\.\d+)(?!\w|\.\d)", re.IGNORECASE)),
    # A bare digit is usually a count in prose ("one of 3 steps"); it is a value after "is", "to", "=" ...
    ("number", re.compile(r"(?:\b(?:is|are|be|to)\s+|[=:]\s*)(?P<fact>\d)(?![\w.,]?\d|\w)")),
    ("number", re.compile(rf"(?<![\w.-])(?:{_BARE_NUMBER})(?![\w]|\.\d)")),
    ("switch", re.compile(r"\b(?:not\s+)?(?:enabled|disabled|activated|deactivated)\b|\b(?:true|false)\b|"
                          r"(?:\b(?:is|are|be|set to|defaults? to|turned|switched)\s+|[:=]\s*)[`'\"]?(?:on|off)\b",
                          re.IGNORECASE)),
    ("obligation", re.compile(r"\b(?:mustn't|shouldn't|cannot|can't|must|shall|should|can|may)(?:\s+not)?\b|"
                              r"\b(?:not\s+)?(?:required|mandatory|optional|supported|allowed|deprecated)\b|"
                              r"\b(?:always|never)\b", re.IGNORECASE)),
]

_SWITCH_ON = {"enabled", "activated", "true", "on"}
_SWITCH_OFF = {"disabled", "deactivated", "false", "off"}
_OBLIGATION_WORDS = {
    "must": "must", "shall": "must", "mandatory": "required", "required": "required",
    "should": "should", "can": "can", "may": "can", "cannot": "can not", "can't": "can not",
    "mustn't": "must not", "shouldn't": "should not", "optional": "optional", "supported": "supported",
    "allowed": "allowed", "deprecated": "deprecated", "always": "always", "never": "never",
}


def _number(text: str) -> float:
    return float(text.replace(",", ""))


def _format(value: float) -> str:
    return str(int(value)) if value.is_integer() else f"{value:.6f}".rstrip("0")


def _normalize(kind: str, text: str) -> str:
    lowered = " ".join(text.lower().split())
    number = re.match(_NUMBER, lowered)
    if kind == "duration" and number:
        unit = re.sub(r"^[\s-]", "", lowered[number.end():]).strip()
        return f"{_format(_number(number.group()) * _DURATION_SECONDS[unit])}s"
    if kind == "size" and number:
        unit = lowered[number.end():].strip()
        return f"{_format(_number(number.group()) * _SIZE_BYTES[unit])}B"
    if kind == "percent" and number:
        return f"{_format(_number(number.group()))}%"
    if kind == "number" and number:
        unit = lowered[number.end():].strip()
        unit = unit[:-3] + "y" if unit.endswith("ies") else unit.removesuffix("s")
        return f"{_format(_number(number.group()))} {unit}".strip()
    if kind == "version":
        return lowered.lstrip("v")
    if kind == "switch":
        words = re.findall(r"[a-z]+", lowered)
        state = words[-1]
        on = state in _SWITCH_ON
        if words[0] == "not" and len(words) > 1 and words[1] in _SWITCH_ON | _SWITCH_OFF:
            on = not on
        return "on" if on else "off"
    if kind == "obligation":
        words = lowered.split()
        negated = "not" in words
        base = _OBLIGATION_WORDS.get(next(w for w in words if w != "not"), lowered)
        if negated and " not" not in base:
            return f"{base} not" if base in {"must", "should", "can"} else f"not {base}"
        return base
    return lowered


# "3. Restart the node": a list item's number says where it is, not what is true.
_LIST_MARKER = re.compile(r"(?m)^[ \t]*\d{1,2}[.)](?=\s)|(?<=[.:;]\s)\d{1,2}\.(?=\s[A-Z])")


def extract_facts(text: str) -> list[Fact]:
    """Every fact in `text`, in order; a character belongs to one fact at most."""
    taken = [False] * len(text)
    for marker in _LIST_MARKER.finditer(text):
        taken[marker.start():marker.end()] = [True] * (marker.end() - marker.start())
    facts: list[Fact] = []
    for kind, pattern in _PATTERNS:
        for match in pattern.finditer(text):
            group = "fact" if "fact" in pattern.groupindex else 0
            start, end = match.span(group)
            if any(taken[start:end]):
                continue
            for position in range(start, end):
                taken[position] = True
            written = match.group(group)
            facts.append(Fact(kind=kind, value=_normalize(kind, written), text=written, start=start, end=end))
    return sorted(facts, key=lambda fact: fact.start)


_WORD = re.compile(r"\S+")


def _words(text: str) -> list[tuple[str, int, int]]:
    """(comparable word, start, end): punctuation and case do not make a difference."""
    words = []
    for match in _WORD.finditer(text):
        key = match.group().lower().strip(".,;:!?()[]{}\"'`*_|")
        words.append((key, match.start(), match.end()))
    return words


def _changed_regions(words_a, words_b) -> list[tuple[int, int, int, int]]:
    """Character ranges (a_start, a_end, b_start, b_end) around each word-level change, widened by context."""
    keys_a = [w[0] for w in words_a]
    keys_b = [w[0] for w in words_b]
    regions: list[list[int]] = []
    matcher = SequenceMatcher(a=keys_a, b=keys_b, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            continue
        i1, i2 = max(0, i1 - CONTEXT_WORDS), min(len(words_a), i2 + CONTEXT_WORDS)
        j1, j2 = max(0, j1 - CONTEXT_WORDS), min(len(words_b), j2 + CONTEXT_WORDS)
        if regions and (i1 < regions[-1][1] or j1 < regions[-1][3]):
            regions[-1][1], regions[-1][3] = max(regions[-1][1], i2), max(regions[-1][3], j2)
        else:
            regions.append([i1, i2, j1, j2])

    def span(words, first: int, last: int) -> tuple[int, int]:
        if first >= last:
            return (0, 0)
        return words[first][1], words[last - 1][2]

    return [(*span(words_a, i1, i2), *span(words_b, j1, j2)) for i1, i2, j1, j2 in regions]


# A merge compares each chunk with several neighbours: each text is read once, as a whole (a fact
# is read as written, never cut at a region's edge), and its facts are compared region by region.
@lru_cache(maxsize=1024)
def _facts_of(text: str) -> tuple[Fact, ...]:
    return tuple(extract_facts(text))


@lru_cache(maxsize=1024)
def _words_of(text: str) -> tuple[tuple[str, int, int], ...]:
    return tuple(_words(text))


def fact_differences(text_a: str, text_b: str) -> list[dict]:
    """The facts that change between two versions of a text; [] when they agree.

    Each difference: {"kind", "a", "b", "a_spans", "b_spans"}, spans being
    [start, end] character offsets into each text, for highlighting.
    """
    if text_a == text_b:
        return []
    differences: list[dict] = []
    facts_a, facts_b = _facts_of(text_a), _facts_of(text_b)
    for a_start, a_end, b_start, b_end in _changed_regions(_words_of(text_a), _words_of(text_b)):
        # The facts wholly inside the changed region: on the ingest benchmark's 2,142 pairs,
        # the same differences as reading the region alone.
        in_a = [f for f in facts_a if a_start <= f.start and f.end <= a_end]
        in_b = [f for f in facts_b if b_start <= f.start and f.end <= b_end]
        only_a = Counter((f.kind, f.value) for f in in_a) - Counter((f.kind, f.value) for f in in_b)
        only_b = Counter((f.kind, f.value) for f in in_b) - Counter((f.kind, f.value) for f in in_a)
        if not only_a or not only_b:
            continue  # one side says nothing here: an omission or a rewording
        changed_a = _pick(in_a, only_a)
        changed_b = _pick(in_b, only_b)
        kinds_b = {f.kind for f in changed_b}
        # Only a value replaced by another of its kind is a conflict ("24 hours" -> "12 hours"); a date on
        # one side where the other says "must" is two texts drifting apart, not a disagreement.
        for kind in dict.fromkeys(f.kind for f in changed_a if f.kind in kinds_b):
            _add_difference(differences, kind, [f for f in changed_a if f.kind == kind],
                            [f for f in changed_b if f.kind == kind])
    return differences


def _add_difference(differences: list[dict], kind: str, facts_a: list[Fact], facts_b: list[Fact]) -> None:
    """One entry per distinct change: "9000 -> 9090" said three times is one difference with three spans."""
    a = ", ".join(dict.fromkeys(f.text for f in facts_a))
    b = ", ".join(dict.fromkeys(f.text for f in facts_b))
    for difference in differences:
        if (difference["kind"], difference["a"], difference["b"]) == (kind, a, b):
            difference["a_spans"] += [[f.start, f.end] for f in facts_a]
            difference["b_spans"] += [[f.start, f.end] for f in facts_b]
            return
    differences.append({"kind": kind, "a": a, "b": b, "a_spans": [[f.start, f.end] for f in facts_a],
                        "b_spans": [[f.start, f.end] for f in facts_b]})


def _pick(facts: list[Fact], wanted: Counter) -> list[Fact]:
    remaining = Counter(wanted)
    picked = []
    for fact in facts:
        key = (fact.kind, fact.value)
        if remaining[key] > 0:
            remaining[key] -= 1
            picked.append(fact)
    return picked


def highlight_segments(text: str, spans: list[list[int]]) -> list[tuple[str, bool]]:
    """`text` cut into (piece, is_difference) for a template to wrap the differences in <mark>."""
    segments: list[tuple[str, bool]] = []
    position = 0
    for start, end in sorted((max(0, s), min(len(text), e)) for s, e in spans):
        if start < position:
            start = position
        if start >= end:
            continue
        if start > position:
            segments.append((text[position:start], False))
        segments.append((text[start:end], True))
        position = end
    if position < len(text):
        segments.append((text[position:], False))
    return segments
