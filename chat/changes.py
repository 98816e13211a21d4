"""Change answers: each version's statement of the same subject with its value, and the change in one line.

"What changed in the rate limit between 2.0 and 3.0?" is answered by

    600 -> 1200 requests per minute (2.0 -> 3.0).
    In 2.0 (2024-04-22): ... 600 requests per minute ... [1] In 3.0 (2025-10-06): ... 1200 ... [2]

The two statements are chosen as a pair: both about the asked subject, each holding a value, and
preferably values of one kind that differ (the change itself). A change question whose subject the
documents do not hold ("the difference between a crocodile and an alligator") abstains like any other.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import lru_cache
from typing import Any

from django.conf import settings

from chat.citations import citation_for
from chat.extractive import (ABSTAINED, NOTHING_FOUND, Extract, Unit, answer_units, closest_matches, content_words,
                             cosine, score_units)
from chat.questions import values_in
from chat.releases import row_for_release
from rag.facts import extract_facts, fact_differences
from rag.releases import version_key
from rag.retrieval import ChangeSide

_TAIL_WORDS = 4
# The unit a value is written with ends where the sentence goes on: "600 requests per minute | to the gateway".
_TAIL_STOP = frozenset("a an and are as at be by for from in is it of on or the to was were when which with".split())
# A reference entry's value is often a quoted word or a constant ("Default: 'inline'", "Default: True").
_TOKEN = re.compile(r"(?<!\w)(?:/[\w-]+(?:[./][\w{}-]+)*|:\d{2,5}\b|`[^`]+`|\b\w+(?:[._]\w+)+\b|'[\w.-]+'|\"[\w.-]+\"|"
                    r"\b(?:True|False|None)\b)")
# "2.0", "v3.1.2": written like a release. A bare "600" is a value even where a release "600" exists.
# The words of a statement less its values: what two releases' wordings of one entry share.
_VALUE_WORDS = re.compile(r"\b(?:\d+(?:[.:]\d+)*\w*|true|false|none|yes|no)\b", re.I)
_SHARED_WORDS = 0.5
# A setting's or a field's bare name ("ratelimit_default", "proxy.rate_limit") says what a statement is about;
# a renamed one is a weaker change than a changed value (a quantity, a path, a port), worth this share of the bonus.
_NAME = re.compile(r"[A-Za-z_]\w*(?:[._]\w+)+")
_NAME_CHANGE_SHARE = 0.5
_DEFAULT_VALUE = re.compile(r"\bdefault\s*[:=]?\s+(?!is\b|to\b|of\b)([^\s;,()]+?)(?=[.;,)]?(?:\s|$))", re.I)
_VERSIONISH = re.compile(r"v?\d+(?:\.\d+)+(?:[-.]?[a-z]+\d*)?", re.I)
_RELEASE_SERIES = re.compile(r"v?\d+(?:\.\d+)*\.x", re.I)  # "2.x": a line of releases, not a value


@lru_cache(maxsize=64)
def _release_keys(labels: tuple[str, ...]) -> frozenset[str]:
    return frozenset(key for label in labels if (key := version_key(label)))


def is_release(text: str, labels: Sequence[str]) -> bool:
    """A token that names one of the workspace's releases ("up from 600 in 2.0": "2.0"), not a value that changed."""
    text = text.strip()
    if text in labels:
        return True
    return bool(_VERSIONISH.fullmatch(text)) and version_key(text) in _release_keys(tuple(labels))


def _facts(text: str) -> list[tuple[str, str, int, int]]:
    """(kind, written, start, end) of each value: paths and ports whole ("/api/v1", not "v1"), facts.py's facts,
    then the settings and commands it does not name."""
    found = [("token", m.group(), m.start(), m.end()) for m in _TOKEN.finditer(text) if m.group()[0] in "/:"]

    def free(start: int, end: int) -> bool:
        return not any(s < end and start < e for _, _, s, e in found)

    found += [(f.kind, f.text, f.start, f.end) for f in extract_facts(text)
              if f.kind not in ("obligation", "date") and free(f.start, f.end)]
    found += [("token", m.group(), m.start(), m.end()) for m in _TOKEN.finditer(text) if free(m.start(), m.end())]
    # What an entry's "Default:" field holds is its value, whatever its form ("Default: 4", "default 1").
    found += [("default", m.group(1), m.start(1), m.end(1)) for m in _DEFAULT_VALUE.finditer(text)
              if free(m.start(1), m.end(1))]
    return sorted(found, key=lambda fact: fact[2])


def _is_name(kind: str, text: str) -> bool:
    """A bare identifier ("rate_limit"), not a value: a quantity, a path, a port, a quoted word, a switch."""
    return kind == "token" and bool(_NAME.fullmatch(text))


def _tail(text: str, end: int) -> list[str]:
    return text[end:].split()[:_TAIL_WORDS]


def value_change(old: str, new: str, *, labels: tuple[str, ...] = ()) -> tuple[str, str, str] | None:
    """(old value, new value, the words both share after it) of the fact that changed, or None.

    The aligned difference first (facts.py); else the first pair of one kind whose values differ,
    preferring a pair followed by the same words ("600 requests per minute" / "1200 requests per minute"),
    then a changed value over a renamed setting. The values are as the documents write them ("24h", not "24 hours").
    """
    change = _change(old, new, labels=labels)
    return change[1:] if change else None


def _change(old: str, new: str, *, labels: tuple[str, ...]) -> tuple[bool, str, str, str] | None:
    """value_change's answer, led by whether what changed is a value rather than a bare name."""
    pairs: list[tuple[int, bool, tuple[str, int, int], tuple[str, int, int]]] = []
    # A release's own number ("in 2.1", "up from 600 in 2.0") is not the value that changed: every release of
    # the workspace is left out, not only the two asked about.
    differences = []
    for d in fact_differences(old, new):
        a_spans = [span for span in d["a_spans"] if not is_release(old[span[0]:span[1]], labels)]
        b_spans = [span for span in d["b_spans"] if not is_release(new[span[0]:span[1]], labels)]
        if a_spans and b_spans:
            differences.append({**d, "a_spans": a_spans, "b_spans": b_spans})
    old_facts = [f for f in _facts(old) if not is_release(f[1], labels)]
    new_facts = [f for f in _facts(new) if not is_release(f[1], labels)]

    def whole(facts: list, start: int, end: int) -> tuple[str, int, int]:
        """The value a difference lies in, whole: "/api/v1" where facts.py saw "v1"."""
        return next(((t, s, e) for _, t, s, e in facts if s <= start and end <= e), None) or ("", start, end)

    if differences:
        d = differences[0]
        a, b = whole(old_facts, *d["a_spans"][0]), whole(new_facts, *d["b_spans"][0])
        pairs.append((3, True, (a[0] or old[a[1]:a[2]], a[1], a[2]),
                      (b[0] or new[b[1]:b[2]], b[1], b[2])))
    for kind_a, text_a, start_a, end_a in old_facts:
        for kind_b, text_b, start_b, end_b in new_facts:
            if kind_a != kind_b and "default" not in (kind_a, kind_b) or text_a.lower() == text_b.lower():
                continue
            if any(text_a.lower() == t.lower() for _, t, _, _ in new_facts):
                continue  # the old value is still stated in the new text: not what changed
            shared = _tail(old, end_a)[:1] == _tail(new, end_b)[:1]
            pairs.append((2 if shared else 1, not (_is_name(kind_a, text_a) and _is_name(kind_b, text_b)),
                          (text_a, start_a, end_a), (text_b, start_b, end_b)))
    if not pairs:
        return None
    _, valued, (a, _, end_a), (b, _, end_b) = max(pairs, key=lambda pair: pair[:2])
    common: list[str] = []
    for word_a, word_b in zip(_tail(old, end_a), _tail(new, end_b)):
        # "/" is what is left of a path written with its closing slash ("/var/lib/x/ as ..."): no unit.
        word = word_a.strip(".,;:()/")
        if word.lower() != word_b.lower().strip(".,;:()/") or not word or word.lower() in _TAIL_STOP:
            break
        common.append(word)
        if word_a[-1] in ".,;:)":
            break
    words_a, words_b = a.split(), b.split()
    # "600 requests" / "1200 requests": the unit is said once, after both values.
    while len(words_a) > 1 and len(words_b) > 1 and words_a[-1].lower() == words_b[-1].lower():
        common.insert(0, words_a.pop())
        words_b.pop()
    return valued, " ".join(words_a), " ".join(words_b), " ".join(common)


def same_statement(old: Unit, new: Unit) -> bool:
    """Two releases' wordings of one entry or statement: from two documents, and the words around the values
    mostly shared. Two sentences of one page ("True to use ...", "False to use ...") are no change."""
    if getattr(old.result, "document_id", None) == getattr(new.result, "document_id", None):
        return False
    words_old, words_new = (content_words(_VALUE_WORDS.sub(" ", unit.text)) for unit in (old, new))
    return len(words_old & words_new) >= _SHARED_WORDS * max(1, min(len(words_old), len(words_new)))


def summary_line(old: Unit, new: Unit, old_label: str, new_label: str, *, releases: Sequence[str] = ()) -> str:
    """"600 -> 1200 requests per minute (2.0 -> 3.0)", or "" when the two carry no comparable value (or are
    not one subject's statements: two values of different things are no change). `releases`: the workspace's
    release labels, none of which is a value."""
    if cosine(old.vector, new.vector) < settings.ANSWER_CONFLICT_SIMILARITY or not same_statement(old, new):
        return ""
    # A row that gives each release its value ("2.0: 600; 2.1: 1000") is read at the asked release's cell.
    change = value_change(row_for_release(old.text, old_label), row_for_release(new.text, new_label),
                          labels=(old_label, new_label, *releases))
    if change is None:
        return ""
    a, b, unit = change
    return f"{a} -> {b}{' ' + unit if unit else ''} ({old_label} -> {new_label})."


def states_a_value(text: str, releases: Sequence[str] = ()) -> bool:
    """Whether a statement gives a value of its own: a release it names ("in 2.1", "Compared with 2.x") is none."""
    return any(not is_release(value, releases) and not _RELEASE_SERIES.fullmatch(value) for value in values_in(text))


def _pair_score(old: Unit, new: Unit, releases: Sequence[str] = ()) -> float:
    """Both statements' scores, the change bonus where they are one entry or statement in two releases with
    values that differ (two different statements with two values are no change), and the bonus taken back for
    each side that states no value of its own: "List endpoints are paginated with page numbers" names the subject
    and says nothing a reader could compare. A changed name alone ("ratelimit_default -> rate_limit") earns part
    of the bonus: two sentences that rename a setting seldom state the value the question asks about."""
    changed = 0.0
    if cosine(old.vector, new.vector) >= settings.ANSWER_CONFLICT_SIMILARITY and same_statement(old, new):
        change = _change(old.text, new.text, labels=tuple(releases))
        if change is not None:
            changed = 1.0 if change[0] else _NAME_CHANGE_SHARE
        elif fact_differences(old.text, new.text):
            changed = 1.0
    valueless = sum(not states_a_value(unit.text, releases) for unit in (old, new))
    return old.score + new.score + settings.ANSWER_CHANGE_BONUS * (changed - valueless)


def both_releases_row(units: Sequence[Unit], old_label: str, new_label: str, *,
                      releases: Sequence[str] = ()) -> Unit | None:
    """The most relevant row that gives both asked releases their own value ("max_body_size: 2.0 default: 10 MB;
    2.1 default: 25 MB."): one entry in two releases, the change itself. None when no row does, or its values
    are the same."""
    rows = [unit for unit in units
            if unit.relevance >= settings.ANSWER_RELEVANCE_FLOOR
            and (old := row_for_release(unit.text, old_label)) != unit.text
            and (new := row_for_release(unit.text, new_label)) != unit.text
            and value_change(old, new, labels=(old_label, new_label, *releases)) is not None]
    return max(rows, key=lambda unit: unit.relevance, default=None)


def compose_change(topic: str, results: Sequence[Any], sides: Sequence[ChangeSide], *,
                   releases: Sequence[str] = ()) -> Extract:
    """The change in one line, then each version's statement of the topic, oldest first, each cited and
    dated. A version with nothing on the topic says so; a topic no statement is about abstains.

    `releases`: every release label of the workspace, so that "up from 600 in 2.0" compares 600, not 2.0.
    """
    units = answer_units(results)
    if not units:
        return Extract(NOTHING_FOUND, [], abstained=True, closest=closest_matches(results, units))
    # A value on each side, whatever words it uses for the subject. The learned ranker was fitted on statements
    # that answer alone; each side of a change is weighed by meaning, rare terms and whether it states a value.
    score_units(topic, units, kind="change", ranker="hand")
    evidence = round(max(unit.relevance for unit in units), 4)
    if evidence < settings.ANSWER_RELEVANCE_FLOOR:
        return Extract(ABSTAINED, [], abstained=True, closest=closest_matches(results, units), evidence=evidence)
    by_side = [sorted((u for u in units if u.result.chunk_id in set(side.chunk_ids)), key=lambda u: -u.score)
               for side in sides]
    chosen: list[Unit | None] = [ranked[0] if ranked else None for ranked in by_side]
    if len(by_side) == 2 and all(by_side):
        window = settings.ANSWER_CHANGE_CANDIDATES
        # The same sentence in both versions says nothing about what changed.
        pairs = [(old, new) for old in by_side[0][:window] for new in by_side[1][:window] if old.text != new.text]
        if pairs:
            chosen = list(max(pairs, key=lambda pair: _pair_score(*pair, releases)))
    row = both_releases_row(units, sides[0].label, sides[-1].label, releases=releases) if len(sides) == 2 else None
    if row is not None and all(best is None or row.relevance >= best.relevance for best in chosen[:1] + chosen[-1:]):
        # One row states both releases' values ("2.0: 10 MB; 2.1: 25 MB") and no statement of one release is as
        # much about the topic: the row answers both sides, each read at its own release's cell.
        return _row_change(row, sides, releases=releases, evidence=evidence)
    parts: list[str] = []
    citations: list[dict] = []
    for side, best in zip(sides, chosen):
        if best is None:
            parts.append(f"In {side.label}: nothing in the documents of that version states it.")
            continue
        source = best.result
        n = len(citations) + 1
        citations.append(citation_for(source, n=n, position=best.result_rank + 1,
                                      relevance=round(min(1.0, max(0.0, best.relevance)), 3),
                                      sentence_ids=best.sentence_ids))
        dated = f" ({source.doc_date.date().isoformat()})" if source.doc_date else ""
        parts.append(f"In {side.label}{dated}: {row_for_release(best.text, side.label)} [{n}]")
    old, new = chosen[0], chosen[-1]
    summary = summary_line(old, new, sides[0].label, sides[-1].label, releases=releases) \
        if len(chosen) == 2 and old is not None and new is not None \
        and any(not is_release(value, releases) for value in values_in(old.text)) else ""
    return Extract((f"{summary}\n" if summary else "") + " ".join(parts), citations, evidence=evidence)


def _row_change(row: Unit, sides: Sequence[ChangeSide], *, releases: Sequence[str], evidence: float) -> Extract:
    """A change told from one row that gives each release its value: the change line, then each release's cell,
    both cited to the row's source (whose date is not the older release's: none is said)."""
    old_label, new_label = sides[0].label, sides[-1].label
    cited = citation_for(row.result, n=1, position=row.result_rank + 1, relevance=round(min(1.0, max(0.0, row.relevance)), 3),
                         sentence_ids=row.sentence_ids)
    change = value_change(row_for_release(row.text, old_label), row_for_release(row.text, new_label),
                          labels=(old_label, new_label, *releases))
    assert change is not None  # both_releases_row keeps only rows whose cells differ
    a, b, unit = change
    summary = f"{a} -> {b}{' ' + unit if unit else ''} ({old_label} -> {new_label})."
    parts = " ".join(f"In {label}: {row_for_release(row.text, label)} [1]" for label in (old_label, new_label))
    return Extract(f"{summary}\n{parts}", [cited], evidence=evidence)
