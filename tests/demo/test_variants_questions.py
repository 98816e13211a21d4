"""The latest-release question checker (demo/variants/questions.py) on hand-made texts."""

from __future__ import annotations

from demo.variants.questions import latest_questions_check, latest_questions_resolve

NOTES = "docs/releases/{}.txt"
TEXTS = {
    ("django", "4.2", NOTES.format("4.2")): "django 4.2 release notes *april 3, 2023* django 4.2 is designated as "
                                            "a :term:`long-term support release <long-term support release>`.",
    ("django", "4.2", NOTES.format("4.2.16")): "django 4.2.16 release notes *september 3, 2024* fixes.",
    ("django", "5.1", NOTES.format("4.2")): "django 4.2 release notes *april 3, 2023* django 4.2 is designated as "
                                            "a long-term support release.",
    ("django", "5.1", NOTES.format("4.2.16")): "django 4.2.16 release notes *september 3, 2024* fixes.",
    ("django", "5.1", NOTES.format("4.2.17")): "django 4.2.17 release notes *december 4, 2024* fixes.",
    ("django", "5.1", NOTES.format("5.1.4")): "django 5.1.4 release notes *december 4, 2024* fixes.",
    ("django", "5.1", "docs/index.txt"): "django documentation",
}
BUNDLES = {"django": ["4.2", "5.1"]}


def _question(asks: str, path: str, version: str, patterns: list[str], qid: str = "q1", **extra) -> dict:
    return {"id": qid, "kind": "latest", "asks": asks, "project": "django", "question": "What's new lately?",
            "version": "5.1", "expected_path": path, "expected_version": version, "answer_patterns": patterns,
            **extra}


def test_the_newest_release_notes_pass_and_resolve_to_every_copy() -> None:
    question = _question("newest_patch", NOTES.format("4.2.17"), "4.2.17", [r"django 4\.2\.17 release notes"],
                         line="4.2")
    latest = _question("latest", NOTES.format("5.1.4"), "5.1.4", [r"december 4, 2024"], qid="q2")
    lts = _question("current_lts", NOTES.format("4.2"), "4.2", [r"4\.2 is designated as a\W+(?:term\W+)?long-term"],
                    qid="q3", lts_patterns=["designated as .{0,40}long-term support"])
    assert latest_questions_check([question, latest, lts], TEXTS, bundles=BUNDLES) == []
    names = {key: f"{key[1]}-{key[2].rsplit('/', 1)[1]}" for key in TEXTS}
    resolved = latest_questions_resolve([lts], TEXTS, names)[0]
    assert resolved["expected_path"] == "5.1-4.2.txt" and resolved["paths"] == ["4.2-4.2.txt", "5.1-4.2.txt"]


def test_a_page_that_does_not_state_the_pattern_is_refused() -> None:
    question = _question("latest", NOTES.format("5.1.4"), "5.1.4", [r"november 5, 2024"])
    problems = latest_questions_check([question], TEXTS, bundles=BUNDLES)
    assert problems == ["q1: django 5.1:docs/releases/5.1.4.txt does not state ['november 5, 2024']"]


def test_a_page_that_is_not_the_newest_of_its_kind_is_refused() -> None:
    older_patch = _question("newest_patch", NOTES.format("4.2.16"), "4.2.16", [r"4\.2\.16 release notes"],
                            line="4.2")
    not_latest = _question("latest", NOTES.format("4.2.17"), "4.2.17", [r"4\.2\.17"], qid="q2")
    not_series = _question("latest", "docs/index.txt", "5.1.4", [r"django documentation"], qid="q3")
    named = {**_question("latest", NOTES.format("5.1.4"), "5.1.4", [r"5\.1\.4"], qid="q4"),
             "question": "What's new in 5.1.4?"}
    problems = latest_questions_check([older_patch, not_latest, not_series, named], TEXTS, bundles=BUNDLES)
    assert any(p.startswith("q1: 4.2.16 is not the newest release of line '4.2'") for p in problems)
    assert any(p.startswith("q2: 4.2.17 is not the newest django release") for p in problems)
    assert any(p.startswith("q3: docs/index.txt is not a series page") for p in problems)
    assert any(p.startswith("q4: the question names the release it expects") for p in problems)
