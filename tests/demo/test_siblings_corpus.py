"""The template-pile corpus of issue 42 (demo/siblings/): frozen, its questions askable, its ground truth whole.

The corpus is what benchmarks/eval_siblings.py judges the product's families and answers by, so nobody may edit
it by hand: the generator's output and the committed files must be the same bytes.
"""

from __future__ import annotations

import json
from collections import defaultdict

import pytest

from demo.siblings.formats import file_text
from demo.siblings.make_corpus import CORPUS, FILES, QUESTIONS, build, committed_differences
from demo.siblings.questions import questions_check


@pytest.fixture(scope="module")
def listing() -> dict[str, dict]:
    return json.loads(FILES.read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def questions() -> list[dict]:
    return json.loads(QUESTIONS.read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def texts(listing) -> dict[str, str]:
    return {path: file_text(path, (CORPUS / path).read_bytes()) for path in listing}


def test_the_committed_corpus_is_what_the_generator_writes() -> None:
    assert committed_differences(build()) == [], "run python demo/siblings/make_corpus.py and commit its output"


def test_every_question_s_expected_file_states_its_pattern_and_no_other_subject_s_does(
        questions, texts, listing) -> None:
    assert questions_check(questions, texts, listing) == []
    answered = [question for question in questions if question["kind"] != "across"]
    assert answered and all(question["answer_patterns"] for question in answered)


def test_a_value_another_sibling_states_too_is_refused() -> None:
    listing = {
        "a.md": {"template": "service_agreement", "subject": "Acme Corp", "version_group": "sa/acme", "edition": 1,
                 "edition_label": "2024", "facts": {"monthly_fee": {"pattern": "1,000 eur"}}},
        "b.md": {"template": "service_agreement", "subject": "Fjord AS", "version_group": "sa/fjord", "edition": 1,
                 "edition_label": "2024", "facts": {"monthly_fee": {"pattern": "1,500 eur"}}},
    }
    question = {"id": "s1", "kind": "current", "template": "service_agreement", "subject": "Acme Corp",
                "field": "monthly_fee", "question": "What monthly fee does Acme Corp pay?", "expected_path": "a.md",
                "answer_patterns": ["1,000 eur"], "outdated": []}
    both_distinct = {"a.md": "the customer pays a monthly fee of 1,000 eur.",
                     "b.md": "the customer pays a monthly fee of 1,500 eur."}
    assert questions_check([question], both_distinct, listing) == []
    same_fee = {**both_distinct, "b.md": "the customer pays a monthly fee of 1,000 eur."}
    assert any("ambiguous, b.md" in problem for problem in questions_check([question], same_fee, listing))


def test_version_groups_hold_one_template_and_one_subject_in_edition_order(listing, questions) -> None:
    groups: dict[str, list[dict]] = defaultdict(list)
    for path, entry in listing.items():
        assert (CORPUS / path).is_file(), path
        groups[entry["version_group"]].append(entry)
    for group, entries in groups.items():
        assert len({(entry["template"], entry["subject"]) for entry in entries}) == 1, group
        ordered = sorted(entries, key=lambda entry: entry["edition"])
        assert [entry["edition"] for entry in ordered] == list(range(1, len(entries) + 1)), group
        assert [entry["date"] for entry in ordered] == sorted(entry["date"] for entry in entries), group
    assert sum(len(entries) >= 2 for entries in groups.values()) >= 10  # true versions of some siblings
    per_template = defaultdict(int)
    for entries in groups.values():
        per_template[entries[0]["template"]] += 1
    assert len(per_template) >= 5 and all(20 <= count <= 50 for count in per_template.values()), per_template
    newest = {max(entries, key=lambda entry: entry["edition"])["subject"] for entries in groups.values()}
    for question in questions:
        if question["kind"] == "across":
            assert set(question["expected_subjects"]) <= newest
        else:
            assert listing[question["expected_path"]]["subject"] == question["subject"], question["id"]


def test_most_titles_do_not_name_their_subject(listing) -> None:
    named = [path for path, entry in listing.items() if entry["subject"].lower() in entry["title"].lower()]
    assert 0 < len(named) < 0.25 * len(listing)
