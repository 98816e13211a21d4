"""Answer units per kind, best-first picking, and abstention on off-topic questions and nonsense."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from chat.answering import answer
from chat.extractive import answer_units, compose_extractive
from evaluation.answers import abstention_figures, malformed_quotes, nonsense, score_answer

pytestmark = pytest.mark.django_db
QUESTION = "How many requests per minute may an API key send?"


def result(text: str, *, chunk_id: int = 1, heading_path: str = "Guide > Section", **fields) -> SimpleNamespace:
    return SimpleNamespace(chunk_id=chunk_id, document_id=chunk_id, title="Guide", path="/guide.md", doc_date=None,
                           doc_type="user", heading_path=heading_path, score=1.0, text=text, **fields)


def units_of(text: str) -> dict[str, tuple[str, tuple[int, ...]]]:
    return {unit.text: (unit.kind, unit.indexes) for unit in answer_units([result(text)])}


def test_a_definition_sentence_is_quoted_with_its_term_and_value(db):
    units = units_of("Security\nauth.token_ttl: Default 12h. Lifetime of Admin API access tokens.")
    assert units["auth.token_ttl: Default 12h. Lifetime of Admin API access tokens."] == ("definition", (1, 2))
    assert "Lifetime of Admin API access tokens." not in units  # never without its value
    assert "Security" not in units  # the chunk's heading line answers nothing


def test_a_table_row_is_one_unit_with_its_headers(db):
    units = units_of("Changed defaults\nRate limit per API key: 2.0: 600 requests per minute; 2.1: 1000 requests "
                     "per minute.\n\nUpstream timeout: 2.0: 30s; 2.1: 45s.")
    assert units["Upstream timeout: 2.0: 30s; 2.1: 45s."] == ("sentence", (2,))
    assert "Rate limit per API key: 2.0: 600 requests per minute; 2.1: 1000 requests per minute." in units


def test_a_list_item_keeps_its_lead_in(db):
    units = units_of("Before upgrading, do the following:\n- Take a snapshot with lumenctl snapshot create.\n"
                     "- Stop the proxies one by one.")
    assert units["Before upgrading, do the following: Stop the proxies one by one."] == ("item", (0, 2))
    assert "Before upgrading, do the following:" not in units  # a lead-in alone says nothing


def test_a_sentence_leaning_on_the_one_before_comes_with_it(db):
    units = units_of("The gateway signs admin tokens with an Ed25519 key. It is rotated every 90 days by default.")
    assert units["The gateway signs admin tokens with an Ed25519 key. It is rotated every 90 days by default."] == (
        "pair", (0, 1))


def test_a_heading_that_names_a_code_gives_the_text_under_it_its_subject(db):
    units = units_of("Error codes\nLG1504 upstream_timeout (HTTP 504)\nThe upstream did not answer within the timeout.")
    assert units == {"LG1504 upstream_timeout (HTTP 504): The upstream did not answer within the timeout.": (
        "headed", (1, 2))}


def test_code_and_fragments_are_never_units(db):
    units = units_of("Example:\n\n```\nproxy:\n  listen: \":8080\"\n```\n\nFor Lumen Gateway 3.0.\n\n"
                     "The proxy listens on port 8080 by default.")
    assert list(units) == ["The proxy listens on port 8080 by default."]


def test_a_unit_spanning_sentences_cites_all_its_ids(db):
    source = result("Security\nauth.token_ttl: Default 12h. Lifetime of Admin API access tokens.", chunk_id=7)
    extract = compose_extractive("How long do admin API access tokens live?", [source])
    assert extract.text == "auth.token_ttl: Default 12h. Lifetime of Admin API access tokens. [1]"
    assert extract.citations[0]["sentence_ids"] == ["7.1", "7.2"]


def test_units_come_best_first(db, settings):
    settings.ANSWER_RELEVANCE_FLOOR = 0.0
    first = result("Backups are written to object storage every night.", chunk_id=1)
    second = result("Each API key may send 1200 requests per minute to the gateway.", chunk_id=2)
    extract = compose_extractive(QUESTION, [first, second])
    assert extract.text.startswith("Each API key may send 1200 requests per minute") and not extract.abstained


def test_off_topic_and_nonsense_questions_abstain_without_citations(workspace, api_versions, licensed):
    for question in ("How do I bake sourdough bread at home?", "Who painted the ceiling of the Sistine Chapel?",
                     nonsense()):
        result_ = answer(question, workspace=workspace, options={"dedup": True})
        assert result_.abstained and result_.citations == [], question[:40]
        assert "don't answer" in result_.text and result_.closest  # the nearest sources, named, not cited
    answered = answer(QUESTION, workspace=workspace, options={"dedup": True})
    assert not answered.abstained and "1200 requests per minute" in answered.text


def test_ask_json_says_abstained_and_lists_closest_matches(workspace, api_versions, licensed, capsys):
    import json

    from django.core.management import call_command

    call_command("ask", "How do I bake sourdough bread at home?", workspace=workspace.slug, as_json=True)
    data = json.loads(capsys.readouterr().out)
    assert data["abstained"] is True and data["citations"] == [] and data["closest_matches"]


def test_answer_scoring_wants_the_current_fact_first(db):
    question = {"id": "q", "question": "limit?", "expected_path": "api/v3.md", "answer_patterns": ["1200 requests"],
                "outdated": [{"path": "api/v2.md", "patterns": ["600 requests"]}]}
    cited = [{"path": "/corpus/api/v3.md", "role": "answer", "chunk_id": 0, "sentence_ids": []}]
    good = SimpleNamespace(text="It is 1200 requests. [1]\n2.0 said: 600 requests [2]", citations=cited,
                           abstained=False, evidence=0.6)
    stale_first = SimpleNamespace(text="It was 600 requests. [1] Now 1200 requests. [2]", citations=cited,
                                  abstained=False, evidence=0.6)
    assert score_answer(question, good)["accurate"] == 1.0 and score_answer(question, good)["cited"] == 1.0
    assert score_answer(question, stale_first)["accurate"] == 0.0
    raw = SimpleNamespace(text="| Rate limit | 600 | 1000 | [1]", citations=[], abstained=False)
    assert malformed_quotes(raw) == ["raw table markup: | Rate limit | 600 | 1000 | [1]"]
    assert abstention_figures([False, True], [True, True, False]) == {
        "precision": 2 / 3, "recall": 2 / 3, "answerable_abstained": 1}


def test_a_question_about_one_release_is_answered_from_it_not_replaced_by_the_newest(workspace, api_versions,
                                                                                      licensed):
    result = answer("How many requests per minute could an API key send in 2.0?", workspace=workspace,
                    options={"dedup": True})
    assert result.search["stats"]["versions"]["mode"] == "as_of"
    # It says which release it answers from, as the question named it.
    assert result.text.startswith("In 2.0: Each API key may send 600 requests per minute") and "said:" not in result.text
