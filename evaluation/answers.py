"""Answer quality against a ground truth: what `make eval` and `make eval-real` print after retrieval.

Retrieval (evaluation.retrieval) asks whether the right passage is found; this asks whether the
answer a user reads states it. Per configuration (full pipeline, Free tier):

- accuracy: the answer states the expected fact (every pattern of `answer_patterns`, or of
  both sides for a change question), and no outdated value (`outdated` / `other_versions`)
  is stated in an earlier statement. Statements are the pieces between citation markers:
  a table row "2.1: 1000 ...; 3.0: 1200 ..." states both in one statement and is not wrong.
- cited: a citation of role "answer" comes from the expected document (for a version
  question, any document of the asked release; for a change question, both sides').
- abstention precision and recall, with the off-topic questions (demo/off_topic.json and
  2,000 characters of nonsense) as the ones that should abstain and the ground truth as
  the ones that should not. ANSWER_RELEVANCE_FLOOR was chosen on these very questions (the
  floor sweep), so they flatter it; a held-out set (demo/off_topic_heldout.json, never used to
  set the floor) is scored beside them: its recall, and its precision against the same
  answerable questions.
- change questions: both sides' values stated, the older side's statement first, and the
  summary line "600 -> 1200 requests per minute (2.0 -> 3.0)" naming the sides in order
  (`change_sides_stated`).
- leads asked value: of the questions asking for a value (chat.questions.asked_value_kind: a version, a
  duration, a default, a command, a name, an amount) that are answered, the share whose first statement
  states a value of that kind; leads fact: the share whose first statement states the expected fact.
- "full pipeline, hand score": the full pipeline with the hand-weighted unit score the learned ranker
  replaced (ANSWER_RANKER "hand"): the ablation.
- median answer length in words; the share of answers that quote a raw table row
  (pipes, rules of `=` or `-`) or a definition without its value (a cited sentence of a
  "term: value" paragraph without the sentence that holds the term); and the number holding
  markup a reader should never see (reST roles, directives, ``literals``, adornment rows, Markdown
  links and emphasis, a role's target half-stripped) or a statement begun mid-sentence (`raw_markup`).
"""

from __future__ import annotations

import random
import re
import statistics
import string
from collections.abc import Callable, Sequence
from typing import Any

from django.conf import settings
from chat.answering import Answer, answer
from chat.citations import MARKER
from chat.questions import asked_value_kind, states_asked_value
from chat.units import has_term
from chat.models import default_search_options
from evaluation.retrieval import eval_license_set, path_matches, question_kind
from rag.models import Chunk, Workspace
from rag.sentences import sentence_spans

CONFIGS = (("full pipeline", True), ("Free tier", False), ("full pipeline, hand score", True))
HAND_SCORE = "full pipeline, hand score"  # the configuration answered with ANSWER_RANKER "hand"
_RAW_TABLE = re.compile(r"\|[^|\n]*\|[^|\n]*\||(?:^|\s)(?:={3,}|-{3,})(?:\s|$)")
# Markup a reader should never see: reST roles, directives, ``literals``, targets and adornment rows; Markdown
# links, emphasis and headings; and a Sphinx role's target half-stripped ("the _engine.Engine", "of .").
_RAW_MARKUP = (
    ("reST role", re.compile(r":[\w+.-]+:`")),
    ("reST field", re.compile(r"(?:^|\s):[a-z][\w-]*:\s")),  # a directive's `:type: str` read as text
    ("reST directive", re.compile(r"(?:^|\s)(?:\.\.\s+)?[\w:-]+::(?:\s|$)")),
    ("reST literal", re.compile(r"``[^`]+``")),
    ("reST target", re.compile(r"`[^`]*<[^`>]+>`_")),
    ("adornment row", re.compile(r"(?:^|\s)([=~^\"'#*+-])\1{3,}(?:\s|$)")),
    ("Markdown link", re.compile(r"\[[^\]\n]+\]\([^)\s]+\)")),
    ("Markdown emphasis", re.compile(r"(?<![\w*])\*\*[^*\n]+\*\*(?![\w*])")),
    ("Markdown heading", re.compile(r"(?:^|\n)#{1,6} \S")),
    ("half-stripped role", re.compile(r"(?:^|\s)_[a-z]+\.[A-Za-z_]|\b(?:of|the|an?|to|by|in) \.(?:\s|$)")),
)
_MID_SENTENCE = re.compile(r"^[a-z]+ (?=\S)")  # as chat.units reads it: "latexpdf: Build ..." is a term


def nonsense(length: int = 2000, *, seed: int = 12) -> str:
    """Random letters in word-like runs: a question no document can answer."""
    pick = random.Random(seed)
    words = []
    while sum(len(word) + 1 for word in words) < length:
        words.append("".join(pick.choice(string.ascii_lowercase) for _ in range(pick.randint(2, 11))))
    return " ".join(words)[:length]


def _statements(text: str) -> list[str]:
    """The answer cut at its citation markers: each piece is one cited statement."""
    return [piece for piece in MARKER.split(text) if piece.strip() and not piece.strip().isdigit()]


def _normalized(text: str) -> str:
    return " ".join(text.lower().split())


def _stated_at(statements: list[str], patterns: Sequence[str]) -> int | None:
    """The first statement that states all the patterns itself (None: none does): a fact's parts
    gathered from different statements ("20" from a year elsewhere) are not the fact."""
    for index, statement in enumerate(statements):
        normalized = _normalized(statement)
        if patterns and all(_matches(pattern, normalized) for pattern in patterns):
            return index
    return None


def _matches(pattern: str, normalized: str) -> bool:
    try:
        return pattern in normalized or re.search(pattern, normalized) is not None
    except re.error:
        return False


def _expected(question: dict) -> tuple[list[list[str]], list[list[str]], list[str]]:
    """(pattern sets to state, outdated pattern sets with their `accept` spellings, documents that may be
    cited for it)."""
    kind = question_kind(question)
    if kind == "change":
        sides = question["sides"]
        return ([side["patterns"] for side in sides], [],
                [path for side in sides for path in side.get("paths", [side["path"]])])
    wrong = question.get("outdated" if kind == "current" else "other_versions", [])
    paths = question.get("release_paths", [question["expected_path"]])
    return ([question["answer_patterns"]],
            [patterns for entry in wrong for patterns in (entry["patterns"], *entry.get("accept", []))], paths)


def _stated_fact_at(statements: list[str], question: dict, patterns: Sequence[str]) -> int | None:
    """Where the expected fact is stated: its patterns, or one of the ground truth's `answer_accept`
    sets (the same fact as a statement writes it, "15m" for "15 minutes")."""
    alternatives = [patterns, *question.get("answer_accept", [])] if patterns == question.get("answer_patterns") \
        else [patterns]
    found = [at for at in (_stated_at(statements, alternative) for alternative in alternatives) if at is not None]
    return min(found, default=None)


def score_answer(question: dict, result: Answer) -> dict[str, float]:
    """Accuracy and citation of one answer (see the module docstring)."""
    wanted, outdated, paths = _expected(question)
    statements = _statements(result.text)
    positions = [_stated_fact_at(statements, question, patterns) for patterns in wanted]
    stated = all(position is not None for position in positions)
    first_wrong = min((p for p in (_stated_at(statements, patterns) for patterns in outdated) if p is not None),
                      default=None)
    accurate = stated and (first_wrong is None or max(positions) <= first_wrong)  # type: ignore[type-var]
    cited = any(c.get("role", "answer") == "answer" and any(path_matches(c["path"], p) for p in paths)
                for c in result.citations)
    asked = asked_value_kind(question["question"]) if question_kind(question) != "change" else ""
    leads = {}
    if asked and statements and not result.abstained:
        leads = {"leads_value": float(states_asked_value(asked, statements[0])),
                 "leads_fact": float(_stated_fact_at(statements[:1], question, wanted[0]) is not None)}
    return {**leads, "accurate": float(accurate), "cited": float(cited), "abstained": float(result.abstained),
            "evidence": float(result.evidence or 0.0),
            "words": float(len(result.text.split())), "malformed": float(bool(malformed_quotes(result))),
            "markup": float(bool(raw_markup(result)))}


_SUMMARY = re.compile(r"^(?P<old>.+?) -> (?P<new>.+?) \((?P<old_label>[^()]+?) -> (?P<new_label>[^()]+?)\)\.?$",
                      re.MULTILINE)


def change_sides_stated(question: dict, result: Answer) -> dict[str, float]:
    """Of a change answer: both sides' values stated in their own statements, oldest first ("ordered"),
    and a summary line whose labels name the asked sides in order ("summary")."""
    sides = question["sides"]
    summaries = list(_SUMMARY.finditer(result.text))
    body = _SUMMARY.sub("", result.text)
    statements = _statements(body)
    positions = [_stated_at(statements, side["patterns"]) for side in sides]
    both = all(position is not None for position in positions)
    ordered = both and all(a <= b for a, b in zip(positions, positions[1:]))  # type: ignore[operator]
    labels = [str(side.get("label") or side.get("version") or "") for side in sides]
    summary = any(m.group("old_label").strip() == labels[0] and m.group("new_label").strip() == labels[-1]
                  for m in summaries)
    return {"both": float(both), "ordered": float(ordered), "summary": float(summary),
            "stated": float(ordered and summary)}


def malformed_quotes(result: Answer) -> list[str]:
    """Raw table rows and definitions quoted without their value: what an answer must never contain."""
    problems = [f"raw table markup: {line}" for line in result.text.splitlines() if _RAW_TABLE.search(line)]
    for citation in result.citations:
        chunk = Chunk.objects.filter(pk=citation["chunk_id"]).only("text").first()
        if chunk is None:
            continue
        spans = sentence_spans(chunk.text)
        cited = {int(sentence_id.split(".")[1]) for sentence_id in citation["sentence_ids"]}
        for index in cited:
            if index >= len(spans):
                continue
            paragraph = [s for s in spans if s.paragraph == spans[index].paragraph]
            head = paragraph[0]
            if len(paragraph) > 1 and has_term(head.text) and head.index not in cited:
                problems.append(f"definition without its term and value: {spans[index].text}")
    return problems


def raw_markup(result: Answer) -> list[str]:
    """Markup and fragments a reader should never see in an answer: `make eval-real`'s "markup" count.

    A statement that begins mid-sentence (a lower-case plain word: "related object in the SELECT statement.")
    is counted too: a unit cut where it should not be.
    """
    text = MARKER.sub("", result.text)
    # What a `code span` holds is shown as code, as the built page shows a literal: `.. note::` is its content.
    prose = re.sub(r"(?<!`)`[^`\n]+`(?!`)", "`code`", text)
    problems = [f"{name}: {match.group(0).strip()!r}" for name, pattern in _RAW_MARKUP
                for match in pattern.finditer(prose)]
    problems += [f"mid-sentence: {statement[:40]!r}" for statement in _statements(result.text)
                 if _MID_SENTENCE.match(_SUMMARY.sub("", statement).strip().removeprefix("In ").strip())
                 and not result.abstained]
    return problems


def abstention_figures(answerable: Sequence[bool], off_topic: Sequence[bool]) -> dict[str, float]:
    """Precision and recall of abstaining, where off-topic questions are the ones that should abstain."""
    true_positive = sum(off_topic)
    false_positive = sum(answerable)
    return {
        "precision": true_positive / (true_positive + false_positive) if true_positive + false_positive else 1.0,
        "recall": true_positive / len(off_topic) if off_topic else 1.0,
        "answerable_abstained": false_positive,
    }


def floor_sweep(answerable: Sequence[float], off_topic: Sequence[float]) -> list[dict[str, float]]:
    """Abstention precision and recall had the floor been each of these values: how the floor is chosen."""
    sweep = []
    for step in range(13):
        floor = round(0.25 + 0.025 * step, 3)
        figures = abstention_figures([e < floor for e in answerable], [e < floor for e in off_topic])
        sweep.append({"floor": floor, **figures})
    return sweep


def evaluate_answers(
    workspace: Workspace, questions: Sequence[dict], off_topic: Sequence[str], *,
    held_out: Sequence[str] = (),
    configs: Sequence[tuple[str, bool]] = CONFIGS,
    on_answer: Callable[[str, dict, Answer], None] | None = None,
    on_config: Callable[[str, dict[str, Any]], None] | None = None,
) -> dict[str, dict[str, Any]]:
    """Every configuration's answer figures; the license is set for each (Free last, as retrieval's eval)."""
    figures: dict[str, dict[str, Any]] = {}
    ranker = settings.ANSWER_RANKER
    for name, licensed in configs:
        eval_license_set(workspace=workspace, licensed=licensed)
        settings.ANSWER_RANKER = "hand" if name == HAND_SCORE else ranker
        scores, changes = [], []
        for question in questions:
            result = answer(question["question"], workspace=workspace, options=default_search_options())
            scores.append(score_answer(question, result))
            if question_kind(question) == "change":
                changes.append(change_sides_stated(question, result))
            if on_answer:
                on_answer(name, question, result)
        off, off_evidence, held, held_evidence = [], [], [], []
        for asked, abstained, evidence in [*((q, off, off_evidence) for q in off_topic),
                                           *((q, held, held_evidence) for q in held_out)]:
            result = answer(asked, workspace=workspace, options=default_search_options())
            abstained.append(result.abstained)
            evidence.append(float(result.evidence or 0.0))
            if on_answer:
                on_answer(name, {"id": "off-topic", "question": asked[:80]}, result)
        count = max(1, len(scores))
        by_kind = {kind: [s["accurate"] for q, s in zip(questions, scores) if question_kind(q) == kind]
                   for kind in ("current", "version", "change")}
        figures[name] = {
            "questions": len(scores),
            "accuracy": sum(s["accurate"] for s in scores) / count,
            **{f"accuracy {kind}": sum(values) / len(values) for kind, values in by_kind.items() if values},
            "cited": sum(s["cited"] for s in scores) / count,
            **({"leads value": sum(s["leads_value"] for s in valued) / len(valued),
                "leads fact": sum(s["leads_fact"] for s in valued) / len(valued), "value questions": len(valued)}
               if (valued := [s for s in scores if "leads_value" in s]) else {}),
            **({f"change {key}": sum(c[key] for c in changes) / len(changes) for key in changes[0]} if changes else {}),
            "median_words": statistics.median(s["words"] for s in scores) if scores else 0.0,
            "malformed": int(sum(s["malformed"] for s in scores)),
            "markup": int(sum(s["markup"] for s in scores)),
            **{f"abstention {key}": value for key, value in abstention_figures(
                [bool(s["abstained"]) for s in scores], off).items()},
            "off_topic": len(off),
            "floor_sweep": floor_sweep([s["evidence"] for s in scores], off_evidence),
            **{f"held-out abstention {key}": value for key, value in abstention_figures(
                [bool(s["abstained"]) for s in scores], held).items() if held},
            "held_out": len(held),
        }
        if on_config:
            on_config(name, figures[name])
    settings.ANSWER_RANKER = ranker
    return figures


def format_answer_table(title: str, figures: dict[str, dict[str, Any]]) -> str:
    columns = [("accuracy", "accuracy", ".3f"), ("accuracy current", "current", ".3f"),
               ("accuracy version", "version", ".3f"), ("accuracy change", "change", ".3f"),
               ("change stated", "change both+summary", ".3f"), ("change ordered", "change both sides", ".3f"),
               ("leads value", "leads asked value", ".3f"), ("leads fact", "leads fact", ".3f"),
               ("cited", "cites expected", ".3f"), ("abstention precision", "abst. precision", ".3f"),
               ("abstention recall", "abst. recall", ".3f"), ("median_words", "median words", ".0f"),
               ("malformed", "malformed", "d"), ("markup", "markup", "d")]
    header = ["configuration", *(label for _, label, _ in columns)]
    rows = [[name, *(format(values.get(key, 0), spec) for key, _, spec in columns)] for name, values in figures.items()]
    widths = [max(len(str(cell)) for cell in column) for column in zip(header, *rows)]
    lines = [f"{title}: answers", "  ".join(cell.ljust(width) for cell, width in zip(header, widths))]
    lines += ["  ".join(cell.ljust(width) for cell, width in zip(row, widths)) for row in rows]
    any_figures = next(iter(figures.values()), {})
    for name, values in figures.items():
        lines.append(f"{name}: abstention had the floor been " + ", ".join(
            f"{entry['floor']:.3f} -> P {entry['precision']:.2f} R {entry['recall']:.2f}"
            for entry in values.get("floor_sweep", [])))
    for name, values in figures.items():
        if values.get("held_out"):
            lines.append(f"{name}: held-out abstention P {values['held-out abstention precision']:.3f} "
                         f"R {values['held-out abstention recall']:.3f} ({values['held_out']} off-topic questions "
                         f"the floor was never set on)")
    lines.append(f"({any_figures.get('questions', 0)} answerable questions, {any_figures.get('off_topic', 0)} "
                 f"off-topic, {any_figures.get('value questions', 0)} answered asking for a value; abst. precision and "
                 f"recall are on the questions the answer floor was calibrated on, the held-out line beside them is "
                 f"not; malformed = answers quoting a raw table row or a definition without its value; markup = answers "
                 f"holding raw markup or a statement begun mid-sentence)")
    return "\n".join(lines)
