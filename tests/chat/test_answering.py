"""Extractive composition, citation ids and markers, conflicts, and the LLM path over real HTTP."""

from __future__ import annotations

import re

import pytest

from chat.answering import answer, answer_stream, cited_numbers, compose_extractive, llm_citations
from chat.prompts import llm_messages
from rag.dedup.merge import contradiction_resolve, workspace_merge
from rag.releases import version_key
from rag.models import Chunk, Contradiction, Document
from chat.search import search_for_chat
from rag.sentences import split_sentences
from devkit.llm_server import FakeLLM
from tests.rag.retrieval_helpers import encoder, minilm  # noqa: F401 (the real MiniLM encoder, as fixtures)

pytestmark = pytest.mark.django_db
QUESTION = "How many requests per minute may an API key send?"


def _composed(question, results):
    extract = compose_extractive(question, results)
    return extract.text, extract.citations


def _results(workspace, question=QUESTION, **options):
    results, _ = search_for_chat(question, workspace=workspace, options={"dedup": True, **options}, top_k=5)
    return list(results)


def test_sentence_ids_point_at_the_quoted_sentences(workspace, api_versions, licensed):
    text, citations = _composed(QUESTION, _results(workspace))
    assert citations
    for citation in citations:
        chunk = Chunk.objects.get(pk=citation["chunk_id"])
        assert citation["sentence_ids"]
        for sentence_id in citation["sentence_ids"]:
            chunk_id, index = map(int, sentence_id.split("."))
            assert chunk_id == chunk.pk
            assert split_sentences(chunk.text)[index].rstrip(".") in text  # the older line drops the full stop


def test_markers_number_each_source_once_in_order(workspace, api_versions, licensed):
    text, citations = _composed(QUESTION, _results(workspace))
    used = cited_numbers(text)
    assert used == list(range(1, len(citations) + 1))
    assert [c["n"] for c in citations] == used
    assert len({c["chunk_id"] for c in citations}) == len(citations)
    assert all(0 <= c["relevance"] <= 1 for c in citations)


def test_a_citations_relevance_is_how_near_its_statement_is_to_the_question(workspace, api_versions, licensed):
    """Shown as "relevance 61%": the ranker's score passed 1 for nearly every statement, and every source read 100%."""
    _, asked = _composed(QUESTION, _results(workspace))
    _, unrelated = _composed("Which log format does the gateway write?", _results(workspace, "log format gateway"))
    assert asked and all(0 < c["relevance"] < 1 for c in asked), asked
    assert not unrelated or max(c["relevance"] for c in unrelated) < max(c["relevance"] for c in asked)


def test_conflict_states_the_newest_and_cites_the_older_version(workspace, api_versions, licensed):
    # 2.0 -> 3.0 is a change within one family, not a contradiction: the older side comes from lineage.
    assert not Contradiction.objects.filter(workspace=workspace, status="pending").exists()
    text, citations = _composed(QUESTION, _results(workspace))
    first = citations[0]
    statement, older_line = text.split("\n")
    assert "1200 requests per minute" in statement
    assert first["document_title"] == "Lumen API Reference 3.0" and first["doc_date"].startswith("2025-10-02")
    older = [c for c in citations if c["role"] == "older_version"]
    assert len(older) == 1 and older[0]["document_title"] == "Lumen API Reference 2.0"
    # One clean line names the older statement after the current one.
    assert re.fullmatch(rf"2\.0 said: Each API key may send 600 requests per minute to the gateway \[{older[0]['n']}\]",
                        older_line)


def test_a_stale_top_result_gives_way_to_its_newest_version(workspace, api_versions, licensed):
    from rag.retrieval import SearchOptions, search

    # As a date filter or a search without version awareness could: only the old version comes back.
    everything = search(QUESTION, SearchOptions(workspace=workspace, top_k=10, respect_canonicals=False, dedup=False,
                                                 version_aware=False))
    stale = [r for r in everything if r.title.endswith("2.0") and "600" in r.text]
    text, citations = _composed(QUESTION, stale[:1])
    assert citations[0]["document_title"] == "Lumen API Reference 3.0" and citations[0]["role"] == "answer"
    assert "1200 requests per minute" in text.split("\n")[0]
    assert citations[1]["document_title"] == "Lumen API Reference 2.0" and citations[1]["role"] == "older_version"


def test_versions_that_disagree_without_a_recorded_contradiction_still_lead_with_the_newest(
    workspace, api_versions, licensed
):
    from rag.models import CanonicalRecord
    from rag.retrieval import SearchOptions, search

    Contradiction.objects.all().delete()
    CanonicalRecord.objects.all().delete()
    results = search(QUESTION, SearchOptions(workspace=workspace, top_k=10, respect_canonicals=False, dedup=False,
                                             version_aware=False))
    older_first = sorted(results, key=lambda r: r.doc_date)  # the stale version ranks first
    text, citations = _composed(QUESTION, older_first)
    statement, _, note = text.partition("\n")
    assert "1200 requests per minute" in statement and "600 requests" not in statement
    assert note.startswith("2.0 said: ") and "600 requests" in note
    assert {c["role"] for c in citations} == {"answer", "older_version"}


def test_headings_and_run_together_tables_are_never_quoted(workspace, db):
    from types import SimpleNamespace

    table = " | ".join(f"row {i} value {i}" for i in range(40)) + "."
    result = SimpleNamespace(chunk_id=1, document_id=1, title="T", path="/t.md", doc_date=None, doc_type="user",
                             heading_path="T > Limits", score=1.0, text=f"Rate limits\n{table}\nEach key may send 5 requests per second.")
    text, citations = _composed("How many requests per second?", [result])
    assert text == "Each key may send 5 requests per second. [1]"
    assert citations[0]["sentence_ids"] == ["1.2"]


def test_no_results_answers_honestly(workspace, db):
    extract = compose_extractive("anything", [])
    assert extract.citations == [] and "nothing" in extract.text and extract.abstained


def test_llm_prompt_has_dated_source_headers_and_the_newest_wins_rule(workspace, api_versions, licensed):
    results = _results(workspace)
    system, user = (message["content"] for message in llm_messages(QUESTION, results))
    assert re.search(r"\[Source 1\] \(2025-10-02, score \d\.\d{3}\)\n<<<SOURCE 1 BEGIN \w+>>>\nFile: api-3\.0\.md\n"
                     r"Section: Rate limits\n", user)
    assert "prefer the most recently dated source" in system
    citations = llm_citations("It is 1200 [1], earlier 600 [2]. See [9].", results)
    assert [c["n"] for c in citations] == [1, 2]
    assert citations[0]["chunk_id"] == results[0].chunk_id


def test_llm_answer_streams_from_a_real_server(workspace, api_versions, licensed, settings):
    with FakeLLM("The limit is 1200 requests per minute [1].") as llm:
        settings.LLM_BASE_URL, settings.LLM_MODEL, settings.LLM_API_KEY = llm.url, "test-model", "sk-test"
        pieces = list(answer_stream(QUESTION, workspace=workspace, options={"dedup": True}))
    final = pieces[-1]
    assert len(pieces) > 3 and "".join(pieces[:-1]).strip() == final.text.strip()
    assert final.mode == "llm" and [c["n"] for c in final.citations] == [1]
    assert llm.requests[0]["path"] == "/v1/chat/completions"
    assert llm.requests[0]["body"]["stream"] is True and llm.requests[0]["auth"] == "Bearer sk-test"


@pytest.mark.parametrize("server", [{"status": 500}, {"delay": 2.0}], ids=["http-error", "timeout"])
def test_llm_failure_falls_back_to_extractive_with_a_notice(workspace, api_versions, licensed, settings, server):
    with FakeLLM(**server) as llm:
        settings.LLM_BASE_URL, settings.LLM_MODEL, settings.LLM_TIMEOUT_SECONDS = llm.url, "m", 0.5
        result = answer(QUESTION, workspace=workspace, options={"dedup": True})
    assert result.mode == "extractive" and result.notice.startswith("The language model did not answer")
    assert result.citations and "1200" in result.text


def test_a_change_question_states_both_sides_each_cited(workspace, encoder, api_versions):
    """The answer quotes each version's statement of the topic, not sentences about changing things (the real
    encoder: a change answer has the relevance floor, calibrated on MiniLM's scale)."""
    result = answer("What changed in the rate limit between 2.0 and 3.0?", workspace=workspace, options={})
    assert result.search["stats"]["versions"]["mode"] == "change"
    assert result.search["stats"]["versions"]["topic"] == "rate limit"
    assert "1200 requests per minute" in result.text and "600 requests" in result.text
    titles = {c["document_title"] for c in result.citations}
    assert titles >= {"Lumen API Reference 3.0", "Lumen API Reference 2.0"}


def test_a_reviewers_decision_leads_the_answer_over_the_newer_date(workspace, api_versions, licensed, staff_user):
    """Writer Pro review: keeping 2.0's side of the rate-limit contradiction makes it the answer, 3.0's named after it."""
    question = "How many requests per minute may an API key send?"
    assert answer(question, workspace=workspace, options={"dedup": True}).text.startswith(
        "Each API key may send 1200 requests per minute")
    # Versions change, they do not contradict: the older file, relabelled as of the same release, is a second
    # document current beside the newer one, and their disagreement is for a reviewer.
    Document.objects.filter(workspace=workspace, title="Lumen API Reference 2.0").update(
        version_label="3.0", version_key=version_key("3.0"))
    workspace_merge(workspace_id=workspace.pk)
    contradiction = Contradiction.objects.get(workspace=workspace, chunk_a__text__contains="requests per minute")
    old_side = "a" if "600 requests" in contradiction.chunk_a.text else "b"
    contradiction_resolve(contradiction_id=contradiction.pk, action=f"keep_{old_side}", user=staff_user)
    result = answer(question, workspace=workspace, options={"dedup": True})
    assert result.text.startswith("Each API key may send 600 requests per minute"), result.text
    assert "3.0 said: Each API key may send 1200 requests per minute" in result.text
