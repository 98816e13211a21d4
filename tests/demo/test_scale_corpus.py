"""The scale corpus builder's question checks (demo/scale/build_corpus.py) on hand-made texts."""

from __future__ import annotations

from demo.scale.build_corpus import flat_name, metadata_versions, questions_check, questions_resolve

DB = "docs/ref/databases.txt"
TEXTS = {
    ("3.2", DB): "django supports postgresql 9.6 and higher.",
    ("4.2", DB): "django supports postgresql 12 and higher.",
    ("5.1", DB): "django supports postgresql 12 and higher. django supports mariadb 10.5 and higher.",
}


def _version(version: str, patterns: list[str], others: list[tuple[str, list[str]]], qid: str = "q1") -> dict:
    return {"id": qid, "kind": "version", "project": "django",
            "question": f"Which PostgreSQL did Django {version} support?", "as_of": version, "version": version, "expected_path": DB, "answer_patterns": patterns,
            "other_versions": [{"path": DB, "version": v, "patterns": p} for v, p in others]}


def test_a_version_fact_repeated_by_another_release_is_refused_in_the_held_out_set() -> None:
    question = _version("4.2", [r"postgresql 12 and higher"], [("3.2", [r"postgresql 9\.6 and higher"])])
    problems = questions_check([question], TEXTS, older=False)
    assert problems == ["q1: 5.1:docs/ref/databases.txt states the 4.2 fact too"]


def test_an_older_release_question_must_differ_from_the_newest_release() -> None:
    same_as_newest = _version("4.2", [r"postgresql 12 and higher"], [("3.2", [r"postgresql 9\.6 and higher"])])
    assert any("lists 5.1's fact" in problem for problem in questions_check([same_as_newest], TEXTS, older=True))
    differs = _version("3.2", [r"postgresql 9\.6 and higher"], [("5.1", [r"postgresql 12 and higher"])], qid="q2")
    assert questions_check([differs], TEXTS, older=True) == []


def test_a_release_of_another_project_and_a_missing_pattern_are_reported() -> None:
    question = _version("3.2", [r"postgresql 9\.5 and higher"], [("5.4", [r"python 3\.8"])])
    problems = questions_check([question], TEXTS, older=False)
    assert any("'5.4' is not a django release" in problem for problem in problems)
    assert any("matches nothing in 3.2" in problem for problem in problems)


def test_off_topic_entries_go_to_their_own_list_and_paths_are_flattened() -> None:
    question = _version("3.2", [r"postgresql 9\.6 and higher"], [("5.1", [r"postgresql 12 and higher"])])
    resolved, off_topic = questions_resolve([question, {"id": "o1", "kind": "off_topic", "question": "Why?"}])
    assert off_topic == ["Why?"]
    assert resolved[0]["expected_path"] == flat_name("django", "3.2", DB)
    assert resolved[0]["other_versions"][0]["path"] == flat_name("django", "5.1", DB)
    assert "3.2" not in resolved[0]["expected_path"] and "django" not in resolved[0]["expected_path"]


def test_version_metadata_is_found_but_a_body_line_is_not() -> None:
    texts = {("5.4", "docs/includes/introduction.txt"): b":Version: 5.4.0 (opalescent)\n",
             ("5.3", "docs/history/whatsnew-4.0.rst"): b"Title\n=====\n\nversion: `4.0` is older\n"}
    assert metadata_versions(texts) == ["5.4:docs/includes/introduction.txt: ':Version: 5'"]
