"""Answers as users get them: the demo indexed and asked with all-MiniLM-L6-v2, at the shipped relevance floor.

The other answer tests use the hashing encoder and a floor of 0; here one index serves a handful of
current, version, change and off-topic questions, each checked on the fact its leading statement
states or on its abstention. The index must hold the query encoder's model's vectors: two 384-dimension
encoders mix without an error and compare meaningless vectors.
"""

from __future__ import annotations

import json
import re

import pytest

from chat.answering import answer
from chat.citations import MARKER
from chat.models import default_search_options
from evaluation.answers import change_sides_stated, nonsense
from rag import embeddings
from rag.bootstrap import DEMO_DIR, demo_corpus_prepare
from tests.chat.conftest import index_folder
from tests.rag.retrieval_helpers import encoder, minilm  # noqa: F401 (fixtures)

pytestmark = [pytest.mark.django_db, pytest.mark.real_encoder]

QUESTIONS = {q["id"]: q for q in json.loads((DEMO_DIR / "ground_truth.json").read_text())}
OFF_TOPIC = json.loads((DEMO_DIR / "off_topic.json").read_text())


@pytest.fixture
def demo_real(workspace, encoder, settings):  # noqa: F811 (the fixture)
    """The demo indexed with the model that asks: the same encoder on both sides, the shipped floor."""
    settings.QUERY_ENCODER = "minilm"
    settings.ANSWER_RELEVANCE_FLOOR = 0.30  # config/settings.py's default, whatever the environment says
    index_folder(workspace, demo_corpus_prepare())
    asking = embeddings.encoder_model(embeddings.get_query_encoder().name)
    assert embeddings.index_models(workspace_id=workspace.pk) == {asking}
    return workspace


def _leading_statement(text: str) -> str:
    leading = " ".join(next(piece for piece in MARKER.split(text) if piece.strip()).lower().split())
    # "the 15-minute idle timeout" states the value as "15 minutes" does: one spelling of a number and its unit.
    return re.sub(r"\b(\d+)-(second|minute|hour|day|week|month|year)\b", r"\1 \2s", leading)


def test_questions_answered_with_the_real_model_lead_with_their_fact_or_abstain(demo_real) -> None:
    misses = []
    for qid in ("q01", "q04", "q17", "v01", "v03"):
        question = QUESTIONS[qid]
        result = answer(question["question"], workspace=demo_real, options=default_search_options())
        leading = _leading_statement(result.text) if not result.abstained else ""
        spellings = [question["answer_patterns"], *question.get("answer_accept", [])]
        if not any(all(pattern in leading for pattern in patterns) for patterns in spellings):
            misses.append(f"{qid}: leads with {leading[:160]!r}" + (" (abstained)" if result.abstained else ""))
    for qid in ("c01", "c03"):
        result = answer(QUESTIONS[qid]["question"], workspace=demo_real, options=default_search_options())
        if not change_sides_stated(QUESTIONS[qid], result)["both"]:
            misses.append(f"{qid}: {result.text[:200]!r}")
    for off_topic in [*OFF_TOPIC[:3], nonsense(300)]:
        result = answer(off_topic, workspace=demo_real, options=default_search_options())
        if not result.abstained:
            misses.append(f"off topic {off_topic[:40]!r} answered: {result.text[:120]!r}")

    assert not misses, "\n".join(misses)
