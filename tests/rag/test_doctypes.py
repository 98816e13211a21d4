"""Document type classification: frontmatter, path, title, headings, then a clear lead in the body; else untyped."""

from __future__ import annotations

from pathlib import Path

import pytest

from rag.ingest.doctypes import (
    DEFAULT_RULES,
    DocTypeGuess,
    DocTypeRule,
    classify_doc_type,
    doc_type_scores,
    guess_doc_type,
)
from rag.parsers import parse_document

FIXTURES = Path(__file__).parent / "fixtures"

TROUBLESHOOTING_TEXT = "If ingestion fails with a timeout error, check the worker log for the stack trace."
OPERATIONS_TEXT = "Deploy the chart with Helm, watch the metrics in Grafana and schedule a nightly backup."


def classify(*, path: str = "docs/page.md", title: str = "Notes", text: str = "", frontmatter_type: str | None = None,
             rules: tuple[DocTypeRule, ...] = DEFAULT_RULES, default: str = "user") -> str:  # fmt: skip
    return classify_doc_type(
        path=path, title=title, text=text, frontmatter_type=frontmatter_type, rules=rules, default=default
    )


def test_default_rules_cover_the_five_types() -> None:
    assert {rule.slug for rule in DEFAULT_RULES} == {"api", "architecture", "operations", "troubleshooting", "user"}
    assert all(len(rule.keywords) >= 15 for rule in DEFAULT_RULES)


def test_frontmatter_type_wins_over_path_and_keywords() -> None:
    chosen = classify(path="docs/api/errors.md", text=TROUBLESHOOTING_TEXT, frontmatter_type="architecture")
    assert chosen == "architecture"


def test_frontmatter_type_is_case_insensitive_and_returns_the_rule_slug() -> None:
    assert classify(frontmatter_type="  API ") == "api"


def test_unknown_frontmatter_type_is_ignored() -> None:
    assert classify(path="runbooks/restore.md", frontmatter_type="howto") == "operations"


def test_path_pattern_beats_keywords() -> None:
    assert classify(path="docs/api/search.md", title="Why search fails", text=TROUBLESHOOTING_TEXT) == "api"


def test_path_patterns_are_case_insensitive_and_match_a_leading_folder() -> None:
    assert classify(path="API/Search.md") == "api"
    assert classify(path="C:\\Docs\\Runbooks\\restore.md") == "operations"


def test_path_pattern_substring_does_not_match_inside_a_word() -> None:
    # "rapid" contains "api", but the pattern is the folder "/api/".
    assert classify(path="docs/rapid-start.md") == "user"


def test_first_matching_rule_wins_for_paths() -> None:
    assert classify(path="docs/api/troubleshooting.md") == "troubleshooting"


def test_glob_path_patterns() -> None:
    rules = (
        DocTypeRule("api", ("endpoint",), path_patterns=("*.yaml",)),
        DocTypeRule("operations", ("deploy",), path_patterns=("*/playbooks/*",)),
    )
    assert classify(path="specs/search.YAML", rules=rules) == "api"
    assert classify(path="infra/playbooks/site.md", rules=rules) == "operations"
    assert classify(path="infra/site.md", rules=rules) == "user"


def test_body_keywords_decide_without_frontmatter_or_path() -> None:
    assert classify(text=TROUBLESHOOTING_TEXT) == "troubleshooting"
    assert classify(text=OPERATIONS_TEXT) == "operations"


def test_the_title_decides_before_the_body() -> None:
    rules = (DocTypeRule("api", ("endpoint",)), DocTypeRule("operations", ("deploy",)))
    body = "deploy " * 10 + "endpoint"
    assert classify(title="Plain title", text=body, rules=rules) == "operations"
    assert classify(title="Endpoint list", text=body, rules=rules) == "api"
    assert doc_type_scores(title="Endpoint list", text=body, rules=rules) == {"api": 2.0, "operations": 5.0}


def test_hits_per_keyword_are_capped_and_a_narrow_lead_leaves_the_document_untyped() -> None:
    rules = (DocTypeRule("api", ("api",)), DocTypeRule("troubleshooting", ("error", "crash", "timeout")))
    spam = "api " * 50
    text = spam + "error crash crash timeout timeout timeout"
    assert doc_type_scores(title="", text=text, rules=rules) == {"api": 5.0, "troubleshooting": 6.0}
    assert classify(text=text, rules=rules, default="") == ""  # 6 against 5 is no evidence
    clear = "api " + "error crash crash timeout timeout timeout"
    assert classify(text=clear, rules=rules) == "troubleshooting"


def test_too_few_body_hits_leave_the_document_untyped() -> None:
    rules = (DocTypeRule("api", ("endpoint",)), DocTypeRule("operations", ("deploy",)))
    assert classify_doc_type(path="a.md", title="Notes", text="deploy it", frontmatter_type=None, rules=rules) == ""
    guess = guess_doc_type(path="a.md", title="Notes", text="deploy " * 4, frontmatter_type=None, rules=rules)
    assert guess == DocTypeGuess("operations", "body")


def test_release_notes_are_known_by_their_headings() -> None:
    text = "Fix #123: the build fails with an error when a bug in the parser crashes. " * 3
    guess = guess_doc_type(path="CHANGES.rst", title="Sphinx 7.2", text=text, frontmatter_type=None,
                           rules=DEFAULT_RULES, headings=["Release 7.2.0", "Incompatible changes", "Features added",
                                                          "Bugs fixed"])
    assert guess == DocTypeGuess("user", "headings")
    # The same text without those headings reads as troubleshooting, which is what went wrong before.
    assert guess_doc_type(path="CHANGES.rst", title="Sphinx 7.2", text=text, frontmatter_type=None,
                          rules=DEFAULT_RULES).slug == "troubleshooting"


def test_body_hits_are_normalized_by_length_so_the_title_still_counts() -> None:
    rules = (DocTypeRule("api", ("endpoint",)), DocTypeRule("operations", ("deploy",)))
    long_text = "deploy " * 5 + "filler " * 1995  # 2000 words: body hits count a quarter
    assert doc_type_scores(title="", text=long_text, rules=rules) == {"api": 0.0, "operations": 1.25}
    assert classify(title="Endpoint notes", text=long_text, rules=rules) == "api"


def test_keywords_match_whole_words_only() -> None:
    rules = (DocTypeRule("api", ("api",)), DocTypeRule("troubleshooting", ("error",)))
    assert classify(text="rapid capital terrorism", rules=rules) == "user"  # no hit: the default
    assert doc_type_scores(title="", text="The rapid API returned an ERROR and errors, error.", rules=rules) == {
        "api": 1.0, "troubleshooting": 2.0}


def test_ties_and_no_hits_give_the_default() -> None:
    rules = (DocTypeRule("api", ("endpoint",)), DocTypeRule("operations", ("deploy",)))
    assert classify(text="endpoint deploy", rules=rules) == "user"
    assert classify(text="nothing relevant here", rules=rules, default="architecture") == "architecture"


def test_real_fixtures() -> None:
    html = FIXTURES / "api-reference.html"
    parsed = parse_document(html, html.read_bytes())
    assert classify(path="docs/reference.html", title=parsed.title, text=parsed.text) == "api"
    markdown = FIXTURES / "deployment-guide.md"
    parsed = parse_document(markdown, markdown.read_bytes())
    chosen = classify(path="guides/deploy.md", title=parsed.title, text=parsed.text, frontmatter_type=parsed.doc_type)
    assert chosen == "operations"


@pytest.mark.parametrize(
    ("title", "text", "expected"),
    [
        (
            "System architecture",
            "The ingest component talks to the retrieval module through a message queue.",
            "architecture",
        ),
        ("Getting started", "Click the upload button, then open the search page from the menu.", "user"),
        ("Search endpoint", "Send a POST request with a JSON payload and a bearer token.", "api"),
    ],
)
def test_default_rules_recognise_typical_pages(title: str, text: str, expected: str) -> None:
    assert classify(title=title, text=text) == expected
