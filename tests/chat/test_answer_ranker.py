"""The learned answer ranker: its features, its shipped weights, and what it never lets lead (issue 36)."""

from __future__ import annotations

import json
import math
from types import SimpleNamespace

import pytest

from chat.answer_ranker import FEATURES, WEIGHTS_PATH, heading_only, load_weights, pointer, ranker_score, unit_features
from chat.extractive import compose_extractive
from chat.questions import asked_value_kind, states_asked_value
from chat.units import content_words


def result(text: str, *, chunk_id: int, heading_path: str = "Guide > Section") -> SimpleNamespace:
    return SimpleNamespace(chunk_id=chunk_id, document_id=chunk_id, title=f"Guide {chunk_id}", path=f"/g{chunk_id}.md",
                           doc_date=None, doc_type="user", heading_path=heading_path, score=1.0, text=text)


def features(question: str, text: str, **overrides) -> dict[str, float]:
    arguments = dict(text=text, unit_kind="sentence", heading_path="", sentence_index=0, result_rank=0, cosine=0.5,
                     rare=0.5, power=0.0, terms=content_words(question), words=content_words(text),
                     asked=asked_value_kind(question), release=0, stale=False)
    return dict(zip(FEATURES, unit_features(**{**arguments, **overrides})))


def test_the_question_says_which_kind_of_value_it_asks_for():
    assert asked_value_kind("Which command runs the database schema migrations?") == "command"
    assert asked_value_kind("wich postgress version do i need?") == "version"
    assert asked_value_kind("How long until a refresh token expires?") == "duration"
    assert asked_value_kind("What is the default rate limit per API key?") == "default"
    assert asked_value_kind("How do I rotate an API key?") == ""  # steps: no value asked
    assert states_asked_value("version", "PostgreSQL 15 or newer is required.")
    assert not states_asked_value("version", "Support answers within 12 hours.")
    assert states_asked_value("duration", "Refresh tokens expire after 14 days.")
    assert states_asked_value("command", "Run `lumenctl migrate` to apply the schema.")
    assert not states_asked_value("command", "Step 3: Run the database migrations")


def test_a_unit_has_one_feature_per_name_and_flags_headings_and_pointers():
    question = "How long until a refresh token expires?"
    stating = features(question, "Refresh tokens expire after 14 days.")
    assert len(stating) == len(FEATURES)
    assert stating["asked_value"] == stating["has_value"] == 1.0 and stating["heading_only"] == stating["pointer"] == 0
    heading = features(question, "Step 3: Run the database migrations")
    assert heading["heading_only"] == 1.0 and heading["asked_value"] == 0.0
    assert features(question, "See the token guide for more information.")["pointer"] == 1.0
    assert heading_only("Refresh tokens") and not heading_only("Refresh tokens expire after 14 days.")
    assert pointer("For details, see the upgrade guide.") and not pointer("Run the upgrade with lumenctl upgrade.")
    scoped = features(question, "Refresh tokens expire after 14 days.", release=1, stale=True)
    assert scoped["release_match"] == scoped["stale"] == 1.0 and scoped["other_release"] == 0.0


def test_the_shipped_weights_load_without_scikit_learn_and_prefer_the_statement_of_the_asked_value():
    data = json.loads(WEIGHTS_PATH.read_text(encoding="utf-8"))
    assert set(data["weights"]) == set(FEATURES)
    weights, bias = load_weights()
    assert all(math.isfinite(value) for value in [*weights.values(), bias])
    question = "How long until a refresh token expires?"
    stating = ranker_score(list(features(question, "Refresh tokens expire after 14 days.").values()))
    heading = ranker_score(list(features(question, "Refresh token expiry").values()))
    assert 0.0 < heading < stating < 1.0


@pytest.mark.django_db
def test_a_heading_or_a_pointer_never_leads_when_a_statement_of_the_value_exists(settings):
    settings.ANSWER_RANKER = "learned"
    question = "Which command runs the database schema migrations?"
    results = [
        result("Step 3: Run the database schema migrations\n\nSee the upgrade guide for the database schema migrations.",
               chunk_id=1, heading_path="Upgrade > Step 3: Run the database schema migrations"),
        result("Apply the database schema with `lumenctl db migrate`.", chunk_id=2, heading_path="Operations > Schema"),
    ]
    extract = compose_extractive(question, results)
    assert not extract.abstained
    # The hand score led with the bare heading, the pointer second (issue 36).
    assert extract.text.startswith("Apply the database schema with `lumenctl db migrate`.")
