"""Answer scoring: a fact is stated by one statement, and a wrong value counts in every spelling."""

from __future__ import annotations

import json
from pathlib import Path

from chat.answering import Answer
from evaluation.answers import _stated_at, score_answer

DEMO = Path(__file__).resolve().parent.parent.parent / "demo"


def test_a_fact_is_stated_only_when_one_statement_holds_all_its_patterns() -> None:
    statements = ["Released on 2025-01-20 with the new gateway.", "The limit is 600 requests per minute."]

    assert _stated_at(statements, [r"\b20\b", "requests per minute"]) is None
    assert _stated_at(statements + ["Keys send 20 requests per minute."], [r"\b20\b", "requests per minute"]) == 2


def test_an_outdated_value_in_an_accepted_spelling_makes_the_answer_inaccurate() -> None:
    q17 = next(q for q in json.loads((DEMO / "ground_truth.json").read_text()) if q["id"] == "q17")

    wrong_first = score_answer(q17, Answer(text="Idle sessions end after 30m [1]. Sign-out comes after 15 minutes "
                                                "of inactivity [2].", citations=[], mode="extractive"))
    right_first = score_answer(q17, Answer(text="Sign-out comes after 15m of inactivity [1]. It was 30 minutes in "
                                                "2.0 [2].", citations=[], mode="extractive"))

    assert wrong_first["accurate"] == 0.0
    assert right_first["accurate"] == 1.0
