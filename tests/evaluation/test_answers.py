"""Answer scoring: a fact is stated by one statement, and a wrong value counts in every spelling."""

from __future__ import annotations

import json
from pathlib import Path

from chat.answering import Answer
from evaluation.answers import _stated_at, format_answer_table, score_answer

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


def test_the_printed_abstention_figures_say_they_are_the_calibration_set_and_show_the_held_out_set() -> None:
    figures = {"full pipeline": {"questions": 40, "off_topic": 25, "abstention precision": 1.0,
                                 "abstention recall": 1.0, "held-out abstention precision": 0.9,
                                 "held-out abstention recall": 0.75, "held_out": 16}}
    printed = format_answer_table("Demo corpus", figures)
    assert "full pipeline: held-out abstention P 0.900 R 0.750 (16 off-topic questions" in printed
    assert "the questions the answer floor was calibrated on" in printed


def test_the_held_out_off_topic_set_is_kept_apart_from_the_calibration_set() -> None:
    calibration = json.loads((DEMO / "off_topic.json").read_text())
    held_out = json.loads((DEMO / "off_topic_heldout.json").read_text())
    assert len(held_out) >= 12 and not {q.lower() for q in held_out} & {q.lower() for q in calibration}
