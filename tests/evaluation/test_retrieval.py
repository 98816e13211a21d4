"""evaluation.retrieval's measures: hand-made result lists scored per question kind, and a run on a tiny corpus."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from licensing.models import License
from evaluation.retrieval import (
    ablation_configs, evaluate_configs, path_matches, release_paths_widen, score_change, score_current, score_version, states,
    summarise,
)
from rag.retrieval import SearchResult
from tests.rag.retrieval_helpers import add_document
from tests.rag.retrieval_helpers import retrieval_isolation  # noqa: F401 (an autouse fixture)

pytestmark = pytest.mark.django_db

V2, V21, V3 = "/corpus/v2.0/limits.md", "/corpus/limits-2.1.md", "/corpus/api/limits-v3.adoc"
RATE = {V2: "600 requests per minute", V21: "1000 requests per minute", V3: "1200 requests per minute"}


def result(path: str, text: str, rank: int) -> SearchResult:
    return SearchResult(chunk_id=rank, document_id=rank, path=path, title=path, doc_date=None, doc_type="api",
                        heading_path="", text=text, score=1 / rank)


def results(*entries: tuple[str, str]) -> list[SearchResult]:
    return [result(path, text, rank) for rank, (path, text) in enumerate(entries, start=1)]


def allows(path: str) -> tuple[str, str]:
    return path, f"Each key may send {RATE[path]}."


FILLER = ("/corpus/glossary.txt", "A consumer is identified by its API keys.")


def test_patterns_match_as_substrings_or_regexes_all_of_them():
    text = "The   Upstream timeout is 60s (proxy.upstream_timeout)."
    assert states(text, ["proxy.upstream_timeout", "60s"])
    assert states(text, [r"timeout is \d+s"])
    assert not states(text, ["proxy.upstream_timeout", "45s"])
    assert not states(text, [])


def test_paths_match_by_suffix():
    assert path_matches("/srv/demo/corpus/api/api-reference-v3.adoc", "api/api-reference-v3.adoc")
    assert not path_matches("/srv/demo/corpus/api/old-api-reference-v3.adoc", "api-reference-v3.adoc")


def test_a_current_question_counts_the_newest_answer_and_each_stale_result():
    question = {
        "expected_path": "api/limits-v3.adoc", "answer_patterns": ["1200 requests per minute"],
        "outdated": [{"path": "limits-2.1.md", "patterns": ["1000 requests per minute"]},
                     {"path": "v2.0/limits.md", "patterns": ["600 requests per minute"]}],
    }
    # The 2.0 file's second result does not state its stale value: it does not leak.
    scores = score_current(question, results(allows(V21), FILLER, allows(V3), (V2, "Keys are per consumer.")))
    assert scores == {"hit@5": 1.0, "answer@5": 1.0, "rr@10": 1 / 3, "stale_results": 1, "results": 4}

    missing = score_current(question, results(allows(V2), FILLER))
    figures = summarise("current", [scores, missing])
    assert figures["answer@5"] == 0.5 and figures["stale"] == pytest.approx(2 / 6)
    assert figures["stale_questions"] == 2 and figures["mrr@10"] == pytest.approx(1 / 6)


def test_a_version_question_is_right_only_when_its_release_ranks_above_the_others():
    question = {
        "kind": "version", "as_of": "2.1", "expected_path": "limits-2.1.md",
        "answer_patterns": ["1000 requests per minute"],
        "other_versions": [{"path": "api/limits-v3.adoc", "patterns": ["1200 requests per minute"]},
                           {"path": "v2.0/limits.md", "patterns": ["600 requests per minute"]}],
    }
    right = score_version(question, results(FILLER, allows(V21), allows(V3)))
    assert right["accurate"] == 1.0 and right["found@5"] == 1.0 and right["wrong_results"] == 1

    wrong = score_version(question, results(allows(V3), allows(V21)))
    assert wrong["accurate"] == 0.0 and wrong["found@5"] == 1.0

    # 2.1's value stated by a 3.0 file is not an answer from 2.1.
    elsewhere = score_version(question, results((V3, "In 2.1 keys had 1000 requests per minute.")))
    assert elsewhere["accurate"] == 0.0 and elsewhere["found@5"] == 0.0

    figures = summarise("version", [right, wrong, elsewhere])
    assert figures["accuracy"] == pytest.approx(1 / 3) and figures["wrong_questions"] == 2
    assert figures["wrong"] == pytest.approx(2 / 6)


def test_any_document_of_the_release_asked_about_can_answer_it():
    question = {
        "kind": "version", "as_of": "2.1", "expected_path": "limits-2.1.md",
        "answer_patterns": ["1000 requests per minute"],
        "other_versions": [{"path": "api/limits-v3.adoc", "version": "3.0", "patterns": ["1200 requests per minute"]}],
    }
    releases = {"limits-2.1.md": "2.1", "notes/runbook-2.1.md": "2.1", "api/limits-v3.adoc": "3.0",
                "api/other-v3.md": "3.0"}
    (widened,) = release_paths_widen([question], releases)
    runbook = results(("notes/runbook-2.1.md", "Each key may send 1000 requests per minute."),
                      ("api/other-v3.md", "Each key may send 1200 requests per minute."))
    assert score_version(question, runbook)["accurate"] == 0.0  # the named document only
    scored = score_version(widened, runbook)
    assert scored["accurate"] == 1.0 and scored["wrong_results"] == 1  # any 2.1 document; any 3.0 one is wrong


def test_a_change_question_needs_both_sides_in_the_top_five():
    question = {
        "kind": "change",
        "sides": [{"path": "limits-2.1.md", "patterns": ["1000 requests per minute"]},
                  {"path": "api/limits-v3.adoc", "patterns": ["1200 requests per minute"]}],
    }
    both = score_change(question, results(allows(V3), FILLER, allows(V21)))
    assert both == {"accurate": 1.0, "old": 1.0, "new": 1.0}

    only_new = score_change(question, results(allows(V3), allows(V2), *[FILLER] * 3, allows(V21)))  # 2.1 is 6th
    assert only_new == {"accurate": 0.0, "old": 0.0, "new": 1.0}
    assert summarise("change", [both, only_new])["accuracy"] == 0.5


def test_configurations_run_licensed_then_free_on_one_workspace(workspace):
    for path, when in ((V2, datetime(2024, 4, 1, tzinfo=UTC)), (V3, datetime(2025, 9, 1, tzinfo=UTC))):
        add_document(workspace, path, [f"The gateway allows {RATE[path]} per key."], doc_date=when)
    question = {
        "id": "q1", "question": "How many requests per minute per key does the gateway allow?",
        "expected_path": "api/limits-v3.adoc", "answer_patterns": ["1200 requests per minute"],
        "outdated": [{"path": "v2.0/limits.md", "patterns": ["600 requests per minute"]}],
    }
    configs = [c for c in ablation_configs() if c.name in ("full pipeline", "Free tier", "plain semantic")]

    figures = evaluate_configs(workspace, [question], configs)

    assert list(figures) == ["full pipeline", "Free tier", "plain semantic"]
    plain = figures["plain semantic"]["current"]
    assert plain["answer@5"] == 1.0 and plain["stale"] == 0.5  # two versions, both in the top 2
    assert figures["Free tier"]["version"] == {"questions": 0}
    assert not License.objects.filter(workspace=workspace).exists()
