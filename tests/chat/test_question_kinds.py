"""Each kind of question gets the statement that answers it first: a value, a definition, steps, yes/no, a
list, a change (with both sides and the summary line); a change question off the documents' subjects abstains."""

from __future__ import annotations

import itertools
from types import SimpleNamespace

import pytest

from chat.answering import answer
from chat.changes import is_release, summary_line, value_change
from chat.extractive import Unit, compose_extractive
from chat.releases import row_for_release
from chat.prompts import llm_messages
from chat.questions import question_kind
from evaluation.answers import change_sides_stated
from rag.selectors import workspace_release_labels
from tests.rag.retrieval_helpers import encoder, minilm  # noqa: F401 (the real MiniLM encoder, as fixtures)

pytestmark = pytest.mark.django_db


def result(text: str, *, chunk_id: int = 1, heading_path: str = "Guide > Section", **fields) -> SimpleNamespace:
    return SimpleNamespace(chunk_id=chunk_id, document_id=chunk_id, title="Guide", path="/guide.md", doc_date=None,
                           doc_type="user", heading_path=heading_path, score=1.0, text=text, **fields)


@pytest.mark.parametrize(("question", "kind"), [
    ("What is the default rate limit per API key?", "value"),
    ("Which port does the admin dashboard listen on?", "value"),
    ("How long do access tokens live?", "value"),
    ("How do I rotate an API key?", "steps"),
    ("What is a consumer?", "definition"),
    ("In Celery's terms, what is a broker?", "definition"),  # a clause that sets where the term is used
    ("In 2.0, what was the default port?", "value"),
    ("Is mTLS supported between proxy nodes?", "yesno"),
    ("Which authentication methods are supported?", "list"),
    ("What changed in the rate limit between 2.0 and 3.0?", "change"),
    ("What is the difference between a crocodile and an alligator?", "change"),
])
def test_what_the_question_asks_for(question, kind):
    assert question_kind(question) == kind


def test_a_value_question_leads_with_the_statement_holding_subject_and_value(db, settings):
    settings.ANSWER_RELEVANCE_FLOOR = 0.0
    naming = result("The rate limit can be changed per consumer with the rate_limit field of the consumer.", chunk_id=1)
    stating = result("Each API key is limited to 1000 requests per minute by default.", chunk_id=2)
    extract = compose_extractive("What is the default rate limit per API key?", [naming, stating])
    assert extract.text.startswith("Each API key is limited to 1000 requests per minute")


def test_a_statement_that_restates_the_question_never_leads(db, settings):
    settings.ANSWER_RELEVANCE_FLOOR = 0.0
    restating = result("The default upstream timeout.", chunk_id=1)
    stating = result("proxy.upstream_timeout: Default 60s. How long the proxy waits for the backend.", chunk_id=2)
    extract = compose_extractive("What is the default upstream timeout?", [restating, stating])
    assert extract.text.startswith("proxy.upstream_timeout: Default 60s.")


def test_a_how_do_i_question_is_answered_by_the_steps(db, settings):
    settings.ANSWER_RELEVANCE_FLOOR = 0.0
    about = result("API keys identify a consumer. Rotating API keys regularly keeps a leaked key short-lived.",
                   chunk_id=1)
    steps = result("To rotate an API key:\n1. Create a new key with lumenctl key create.\n"
                   "2. Revoke the old key with lumenctl key revoke.", chunk_id=2)
    extract = compose_extractive("How do I rotate an API key?", [about, steps])
    assert extract.text.startswith("To rotate an API key: Create a new key with lumenctl key create.")


def test_a_version_answer_says_which_release_it_answers_from(db, settings):
    settings.ANSWER_RELEVANCE_FLOOR = 0.0
    old = result("Each API key is limited to 1000 requests per minute by default.", chunk_id=1, version_label="2.1")
    new = result("Each API key is limited to 1200 requests per minute by default.", chunk_id=2, version_label="3.0")
    extract = compose_extractive("What was the rate limit per API key?", [new, old], as_of="2.1")
    assert extract.text.startswith("In 2.1: Each API key is limited to 1000 requests per minute")


def test_a_row_of_releases_answers_with_the_asked_release_cell(db, settings):
    """Issue 22: "What was the rate limit in 2.1?" led with a row that also gave 2.0's figure."""
    settings.ANSWER_RELEVANCE_FLOOR = 0.0
    row = result("Maximum request body: 2.0: 10 MB; 2.1: 25 MB; 3.0: 50 MB.", chunk_id=1, version_label="3.0")
    assert compose_extractive("What was the maximum request body in 2.1?", [row], as_of="2.1").text == (
        "In 2.1: Maximum request body: 25 MB. [1]")
    assert compose_extractive("What is the maximum request body?", [row]).text == (
        "Maximum request body (3.0): 50 MB. [1]")  # the newest cell, with its release
    assert row_for_release("Maximum request body: 2.0: 10 MB; 2.1: 25 MB.", "1.0") == (
        "Maximum request body: 2.0: 10 MB; 2.1: 25 MB.")  # no cell of the asked release: the row as it is
    for other in ("Rate limit: Value: 1000; Since: 2025-02-01.", "Note: see 2.1: it changed.", "2.1: 1000; 3.0: 1200."):
        assert row_for_release(other, "2.1") == row_for_release(other) == other


_DOCUMENTS = itertools.count(1)


def unit(text: str) -> Unit:
    """A statement of its own document: a change is read between two releases' documents, never within one."""
    return Unit(0, result(text, chunk_id=next(_DOCUMENTS)), (0,), text, "sentence")


def test_the_summary_line_states_both_values_in_order():
    old = unit("Each API key may send 600 requests per minute to the gateway.")
    new = unit("Each API key may send 1200 requests per minute to the gateway.")
    old.vector = new.vector = [1.0, 0.0]  # one subject's statements
    assert summary_line(old, new, "2.0", "3.0") == "600 -> 1200 requests per minute (2.0 -> 3.0)."
    assert value_change("The admin API lives under /api/v1.", "Admin endpoints moved to /api/v2 in 3.0.")[:2] == (
        "/api/v1", "/api/v2")
    created, made = unit("Keys are created in the dashboard."), unit("Keys are made by an admin.")
    created.vector = made.vector = [1.0, 0.0]
    assert summary_line(created, made, "2.0", "3.0") == ""
    far = unit("The proxy keeps 10 connections.")
    far.vector = [0.0, 1.0]
    assert summary_line(old, far, "2.0", "3.0") == ""  # two values of different things are no change


def test_no_release_of_the_workspace_is_taken_for_the_value_that_changed():
    """Issue 22: asked 2.1 -> 3.0, a 2.1 row that also states 2.0's figure gave "2.0 -> 1200 requests"."""
    old = unit("Rate limit per API key: 2.0: 600 requests per minute; 2.1: 1000 requests per minute.")
    new = unit("Each API key is limited to 1200 requests per minute by default.")
    old.vector = new.vector = [1.0, 0.0]
    assert summary_line(old, new, "2.1", "3.0").startswith("1000 -> 1200")  # the row's 2.1 figure, 2.0 unknown
    # The row gives each release its figure: 2.1's is the old side, not the first one written.
    assert summary_line(old, new, "2.1", "3.0", releases=("2.0", "2.1", "3.0")) == (
        "1000 -> 1200 requests per minute (2.1 -> 3.0).")
    row = unit("Rate limit per API key: 2.1: 1000 requests per minute; 3.0: 1200 requests per minute.")
    row.vector = [1.0, 0.0]
    assert summary_line(old, row, "2.0", "3.0", releases=("2.0", "2.1", "3.0")) == (
        "600 -> 1200 requests per minute (2.0 -> 3.0).")
    # A release written another way ("v2.0", "2.0.0") is the same release; a bare number is a value.
    written = unit("Each API key may send 600 requests per minute (v2.0.0 and later).")
    written.vector = [1.0, 0.0]
    assert summary_line(written, new, "2.1", "3.0", releases=("2.0", "3.0")) == (
        "600 -> 1200 requests per minute (2.1 -> 3.0).")
    assert is_release("v2.0.0", ["2.0"]) and not is_release("600", ["2.0", "3.0"]) and not is_release("2.5", ["2.0"])
    before, after = unit("The limit was last changed in 2.0."), unit("The limit was last changed in 2.2.")
    before.vector = after.vector = [1.0, 0.0]
    assert summary_line(before, after, "2.1", "3.0").startswith("2.0 -> 2.2")  # releases read as values
    assert summary_line(before, after, "2.1", "3.0", releases=("2.0", "2.1", "2.2", "3.0")) == ""


def test_the_workspace_release_labels_are_every_release(workspace, api_versions):
    assert {"2.0", "3.0"} <= set(workspace_release_labels(workspace_id=workspace.pk))


def test_the_change_scorer_checks_both_values_their_order_and_the_summary():
    question = {"sides": [{"version": "2.0", "patterns": ["600 requests"]},
                          {"version": "3.0", "patterns": ["1200 requests"]}]}
    good = SimpleNamespace(text="600 -> 1200 requests per minute (2.0 -> 3.0).\nIn 2.0: 600 requests per minute [1] "
                                "In 3.0: 1200 requests per minute [2]")
    reversed_ = SimpleNamespace(text="In 3.0: 1200 requests [1] In 2.0: 600 requests [2]")
    one_side = SimpleNamespace(text="In 3.0: 1200 requests [1]")
    assert change_sides_stated(question, good) == {"both": 1.0, "ordered": 1.0, "summary": 1.0, "stated": 1.0}
    assert change_sides_stated(question, reversed_)["ordered"] == 0.0
    assert change_sides_stated(question, one_side)["both"] == 0.0


def test_a_change_answer_states_both_sides_with_the_summary_line(workspace, encoder, api_versions, licensed):
    """End to end with the real encoder: the relevance floor is calibrated on MiniLM's scale."""
    result_ = answer("What changed in the rate limit between 2.0 and 3.0?", workspace=workspace,
                     options={"dedup": True})
    assert result_.search["stats"]["versions"]["mode"] == "change"
    assert "\n" in result_.text, result_.text
    first, body = result_.text.split("\n", 1)
    assert first == "600 -> 1200 requests per minute (2.0 -> 3.0)."
    assert body.index("In 2.0") < body.index("600 requests per minute") < body.index("In 3.0") < body.index(
        "1200 requests per minute")


def test_an_off_topic_change_question_abstains(workspace, encoder, api_versions, licensed):
    result_ = answer("What is the difference between a crocodile and an alligator?", workspace=workspace,
                     options={"dedup": True})
    assert result_.abstained and result_.citations == []


def test_the_generated_path_is_told_the_question_kind(db):
    source = result("Each API key may send 1200 requests per minute.")
    source.score = 0.9
    system = llm_messages("What changed in the rate limit between 2.0 and 3.0?", [source])[0]["content"]
    assert "600 -> 1200 requests per minute (2.0 -> 3.0)" in system
    assert "the asked value with its subject in the first sentence" in llm_messages("What is the default rate limit?", [source])[0]["content"]
