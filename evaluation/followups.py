"""Follow-ups and typos (issue 51): what `manage.py eval_answers` prints after the answer table.

- follow-ups resolved: of demo/followups.json's pairs, the share whose follow-up ("And in 2.0?", "and its
  default?"), asked after its first question through the answering path with that previous question,
  states the expected value of the expected release first (evaluation.answers.score_answer's accuracy).
  Beside it, the same follow-ups asked alone: what a conversation without memory answers.
- typo questions answered: of demo/typos.json's misspelt questions (one per ground-truth question), the
  share answered accurately; beside it, the same share among those whose original, typed correctly, is
  answered (what the typos cost, apart from what the answerer misses anyway).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from chat.answering import Answer, answer
from chat.models import default_search_options
from evaluation.answers import score_answer
from rag.models import Workspace

FOLLOW_UPS = Path(__file__).resolve().parent.parent / "demo" / "followups.json"
TYPOS = Path(__file__).resolve().parent.parent / "demo" / "typos.json"


def _truth(item: dict, question: str) -> dict:
    """A follow-up as score_answer reads a version question: its release's value, the others' as wrong."""
    return {"id": item["id"], "question": question, "kind": "version", "as_of": item["version"],
            "answer_patterns": item["answer_patterns"], "expected_path": item["expected_path"],
            "other_versions": item.get("other_versions", [])}


def evaluate_followups(workspace: Workspace, pairs: Sequence[dict], *,
                       on_answer: Callable[[dict, Answer], None] | None = None) -> dict[str, Any]:
    """Each pair's follow-up answered after its first question, and alone."""
    options = default_search_options()
    resolved = alone = rewritten = 0
    for item in pairs:
        first = answer(item["first"], workspace=workspace, options=options)
        result = answer(item["follow_up"], workspace=workspace, options=options,
                        previous=[first.asked_as or item["first"]])
        resolved += int(score_answer(_truth(item, item["follow_up"]), result)["accurate"])
        rewritten += int(bool(result.asked_as))
        without = answer(item["follow_up"], workspace=workspace, options=options)
        alone += int(score_answer(_truth(item, item["follow_up"]), without)["accurate"])
        if on_answer:
            on_answer(item, result)
    return {"pairs": len(pairs), "resolved": resolved, "asked as rewritten": rewritten, "resolved alone": alone}


def evaluate_typos(workspace: Workspace, questions: Sequence[dict], *,
                   on_answer: Callable[[dict, Answer], None] | None = None) -> dict[str, Any]:
    """Each misspelt question answered as demo/ground_truth.json's original would have to be."""
    options = default_search_options()
    answered = read_as = originals = both = 0
    for item in questions:
        result = answer(item["question"], workspace=workspace, options=options)
        accurate = bool(score_answer(item, result)["accurate"])
        original = bool(score_answer(item, answer(item["original"], workspace=workspace, options=options))["accurate"])
        answered, read_as = answered + accurate, read_as + bool(result.read_as)
        originals, both = originals + original, both + (original and accurate)
        if on_answer:
            on_answer(item, result)
    return {"questions": len(questions), "answered": answered, "read as corrected": read_as,
            "originals answered": originals, "answered where the original is": both}


def evaluate_in_conversation(workspace: Workspace, *, follow_ups: Path = FOLLOW_UPS, typos: Path = TYPOS,
                             on_answer: Callable[[dict, Answer], None] | None = None) -> dict[str, dict[str, Any]]:
    """Both sets' figures; a set whose file is missing is left out."""
    figures: dict[str, dict[str, Any]] = {}
    if follow_ups.exists():
        pairs = json.loads(follow_ups.read_text(encoding="utf-8"))["pairs"]
        figures["follow-ups"] = evaluate_followups(workspace, pairs, on_answer=on_answer)
    if typos.exists():
        questions = json.loads(typos.read_text(encoding="utf-8"))["questions"]
        figures["typos"] = evaluate_typos(workspace, questions, on_answer=on_answer)
    return figures


def format_in_conversation(figures: dict[str, dict[str, Any]]) -> str:
    lines = []
    if follow := figures.get("follow-ups"):
        pairs = max(1, follow["pairs"])
        lines.append(f"follow-ups resolved: {follow['resolved']}/{follow['pairs']} ({follow['resolved'] / pairs:.2f}); "
                     f"asked as rewritten {follow['asked as rewritten']}; asked alone, without the conversation: "
                     f"{follow['resolved alone']}/{follow['pairs']}")
    if typos := figures.get("typos"):
        count = max(1, typos["questions"])
        originals = max(1, typos["originals answered"])
        lines.append(f"typo questions answered: {typos['answered']}/{typos['questions']} "
                     f"({typos['answered'] / count:.2f}); read as corrected {typos['read as corrected']}; "
                     f"where the original is answered: {typos['answered where the original is']}/"
                     f"{typos['originals answered']} ({typos['answered where the original is'] / originals:.2f})")
    return "\n".join(lines)
