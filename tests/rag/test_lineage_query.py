"""Query analysis: the versions, dates and changes a question names, and what it never mistakes for one.

Pure text analysis: no database.
"""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from django.test import override_settings
from django.utils import timezone

from devkit.query_oracle import ORACLE_WORKSPACES, oracle_results
from rag.releases.questions import ChangeQuestion, analyse_query

KNOWN = ["2.0", "2.1", "3.0"]
NOW = datetime(2025, 12, 1, 12, 0, tzinfo=UTC)


def at(year: int, month: int, day: int) -> datetime:
    return timezone.make_aware(datetime(year, month, day), timezone.get_current_timezone())


# --- versions -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("question", "versions", "text"),
    [
        ("What was the rate limit in 2.1?", ("2.1",), "What was the rate limit?"),
        ("What is the token lifetime for v3?", ("3.0",), "What is the token lifetime?"),
        ("How do I install it according to the 3.0 docs?", ("3.0",), "How do I install it?"),
        ("What port does the admin API use in version 2.0?", ("2.0",), "What port does the admin API use?"),
        ("What is the 2.1 rate limit?", ("2.1",), "What is the rate limit?"),
        ("What's in the 3.0 release notes?", ("3.0",), "What's in the release notes?"),
        ("What was the rate limit in Lumen Gateway 2.1?", ("2.1",), "What was the rate limit in Lumen Gateway?"),
        ("What is the rate limit in 2.1.0?", ("2.1",), "What is the rate limit?"),
        ("Rate limit of release 3 and 2.0", ("3.0", "2.0"), "Rate limit"),
        ("token lifetime in 2.0, 2.1 or 3.0", ("2.0", "2.1", "3.0"), "token lifetime"),
        ("What is 3.0's default port?", ("3.0",), "What is default port?"),
        ("Which admin port did 2.0 use?", ("2.0",), "Which admin port did use?"),
        ("Which port does 3.0 listen on?", ("3.0",), "Which port does listen on?"),
        (
            "How often did proxy nodes pick up configuration changes in 2.1?",
            ("2.1",),
            "How often did proxy nodes pick up configuration changes?",
        ),
        ("Are configuration changes recorded in 2.1?", ("2.1",), "Are configuration changes recorded?"),
    ],
)
def test_version_mentions(question: str, versions: tuple[str, ...], text: str) -> None:
    analysis = analyse_query(question, known_labels=KNOWN, now=NOW)
    assert analysis.versions == versions
    assert analysis.text == text
    assert analysis.as_of_date is None
    assert analysis.change is None


@pytest.mark.parametrize(
    "question",
    [
        "How do I configure OAuth 2.0?",
        "What does HTTP/1.1 keep-alive do?",
        "What is the /api/v2 base path?",
        "Is TLS 1.3 supported?",
        "Does it run on Python 3.11?",
        "What's the timeout of 2.0 seconds for?",
        "Show the top 10 errors",
        "Does it listen on IPv4 and port 8080?",
        "Which error code is 2.0x slower?",
        "How do I pin the admin API v2 client?",
        "What changed on 2025-03-15 in the logs?",
        "Which factor did 2.0 seconds add?",
    ],
)
def test_not_version_scoped(question: str) -> None:
    analysis = analyse_query(question, known_labels=KNOWN, now=NOW)
    assert analysis.versions == ()
    assert analysis.text == question


def test_only_known_labels_count_and_come_back_as_spelled() -> None:
    unknown = analyse_query("What is the rate limit in 4.0?", known_labels=KNOWN)
    assert (unknown.versions, unknown.unknown_versions) == ((), ("4.0",))
    assert unknown.text == "What is the rate limit in 4.0?"
    spelled = analyse_query("rate limit in v3", known_labels=["v3.0.0"])
    assert spelled.versions == ("v3.0.0",)


def test_a_series_mention_takes_its_newest_release() -> None:
    analysis = analyse_query("What does the runbook say in 2.1?", known_labels=["2.0", "2.1.1", "2.1.2"])
    assert analysis.versions == ("2.1.2",)


def test_before_a_version_is_a_bound() -> None:
    analysis = analyse_query("What was the rate limit before 3.0?", known_labels=KNOWN)
    assert (analysis.versions, analysis.before_version, analysis.text) == (("3.0",), True, "What was the rate limit?")
    assert not analyse_query("rate limit in 3.0", known_labels=KNOWN).before_version


# --- dates ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("question", "as_of", "text"),
    [
        ("What was the rate limit as of March 2025?", (2025, 4, 1), "What was the rate limit?"),
        ("What was the rate limit in March 2025?", (2025, 4, 1), "What was the rate limit?"),
        ("What was the admin port before 2024?", (2024, 1, 1), "What was the admin port?"),
        ("What was the admin port before March 2024?", (2024, 3, 1), "What was the admin port?"),
        ("What was the token lifetime as of 2025-03-15?", (2025, 3, 16), "What was the token lifetime?"),
        ("as of March 15, 2025 what was the default port", (2025, 3, 16), "what was the default port"),
        ("What was the rate limit in 2024?", (2025, 1, 1), "What was the rate limit?"),
        ("What was the rate limit as of last month?", (2025, 12, 1), "What was the rate limit?"),
    ],
)
def test_as_of_dates(question: str, as_of: tuple[int, int, int], text: str) -> None:
    analysis = analyse_query(question, known_labels=KNOWN, now=NOW)
    assert analysis.as_of_date == at(*as_of)
    assert analysis.text == text
    assert analysis.versions == ()


def test_as_of_today_is_the_present() -> None:
    analysis = analyse_query("What is the rate limit as of today?", known_labels=KNOWN, now=NOW)
    assert analysis.as_of_date is None
    assert analysis.text == "What is the rate limit?"


@pytest.mark.parametrize(
    "question",
    ["Which errors happened 2024 times?", "Rotate keys every 2025 requests", "What is the 2024 pricing tier?"],
)
def test_a_year_without_a_date_cue_is_not_a_date(question: str) -> None:
    assert analyse_query(question, known_labels=KNOWN, now=NOW).as_of_date is None


def test_dates_are_read_in_the_server_time_zone() -> None:
    with override_settings(TIME_ZONE="Europe/Paris"):
        analysis = analyse_query("rate limit before 2024", known_labels=KNOWN, now=NOW)
        assert analysis.as_of_date == at(2024, 1, 1)
        assert analysis.as_of_date.utcoffset().total_seconds() == 3600  # type: ignore[union-attr]


# --- change questions -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("question", "change"),
    [
        ("What changed in the rate limit between 2.1 and 3.0?", ChangeQuestion("2.1", "3.0", "rate limit")),
        ("What changed in the rate limit?", ChangeQuestion(None, None, "rate limit")),
        ("What's new in 3.0?", ChangeQuestion(None, "3.0", "")),
        ("What's new in the latest release?", ChangeQuestion(None, None, "", latest=True)),
        ("What has changed since 2.1?", ChangeQuestion("2.1", None, "")),
        ("Differences between 2.0 and 3.0 for pagination", ChangeQuestion("2.0", "3.0", "pagination")),
        ("Difference between 2.1 and 3.0 in token lifetime", ChangeQuestion("2.1", "3.0", "token lifetime")),
        ("How does the rate limit in 3.0 differ from 2.1?", ChangeQuestion("2.1", "3.0", "rate limit")),
        ("Which endpoints were removed in 3.0?", ChangeQuestion(None, "3.0", "endpoints")),
        ("What was deprecated in 2.1?", ChangeQuestion(None, "2.1", "")),
        ("What is the rate limit compared to 2.1?", ChangeQuestion("2.1", None, "rate limit")),
        ("How did pagination change from 2.0 to 3.0?", ChangeQuestion("2.0", "3.0", "pagination")),
        ("Rate limit 2.1 vs 3.0", ChangeQuestion("2.1", "3.0", "Rate limit")),
        ("Is the admin port different in 3.0?", ChangeQuestion(None, "3.0", "admin port")),
        ("What was new in 2.1 for pagination?", ChangeQuestion(None, "2.1", "pagination")),
        ("Which settings were removed in the latest release?", ChangeQuestion(None, None, "settings", latest=True)),
        (
            "What are the differences between the 2.1 and 3.0 rate limits?",
            ChangeQuestion("2.1", "3.0", "rate limits"),
        ),
        ("What changed in authentication from 3.0 to 2.0?", ChangeQuestion("2.0", "3.0", "authentication")),
        ("Were there any rate limit changes in 3.0?", ChangeQuestion(None, "3.0", "rate limit")),
        ("Was there a change to the admin port in 3.0?", ChangeQuestion(None, "3.0", "admin port")),
        ("Changes to the admin port in 3.0", ChangeQuestion(None, "3.0", "admin port")),
        ("Rate limit changes in 3.0", ChangeQuestion(None, "3.0", "Rate limit")),
        ("rate limit changes since 2.0", ChangeQuestion("2.0", None, "rate limit")),
        ("What changed since version 2.1?", ChangeQuestion("2.1", None, "")),
    ],
)
def test_change_questions(question: str, change: ChangeQuestion) -> None:
    assert analyse_query(question, known_labels=KNOWN, now=NOW).change == change


@pytest.mark.parametrize(
    "question",
    [
        "Why is my route no longer matched?",
        "What does the removed status mean?",
        "What is the rate limit in 2.1?",
        "How do I compare two API keys?",
        "How long does it take for a configuration change to reach all proxy nodes?",
        "Why do my changes to the config not apply?",
    ],
)
def test_not_change_questions(question: str) -> None:
    assert analyse_query(question, known_labels=KNOWN, now=NOW).change is None


@pytest.mark.parametrize(
    ("question", "old", "new"),
    [
        ("How did the admin port change since Lumen Gateway 2.0?", "2.0", None),
        ("How did pagination change between Lumen Gateway 2.1 and 3.0?", "2.1", "3.0"),
        ("What changed in the admin port since the Lumen Gateway 2.1 release?", "2.1", None),
    ],
)
def test_a_product_name_between_side_word_and_version(question: str, old: str | None, new: str | None) -> None:
    change = analyse_query(question, known_labels=KNOWN, now=NOW).change
    assert change is not None
    assert (change.old, change.new) == (old, new)


def test_before_a_named_version_is_a_bound() -> None:
    analysis = analyse_query("What was the rate limit before Lumen Gateway 3.0?", known_labels=KNOWN)
    assert (analysis.versions, analysis.before_version) == (("3.0",), True)


def test_change_text_keeps_the_change_wording_for_search() -> None:
    analysis = analyse_query("What changed in the rate limit between 2.1 and 3.0?", known_labels=KNOWN)
    assert analysis.versions == ("2.1", "3.0")
    assert analysis.text == "What changed in the rate limit?"


def test_no_known_labels_still_finds_changes_and_dates() -> None:
    analysis = analyse_query("What changed in the rate limit as of March 2025?", known_labels=[], now=NOW)
    assert analysis.versions == ()
    assert analysis.as_of_date == at(2025, 4, 1)
    assert analysis.change == ChangeQuestion(None, None, "rate limit")


# --- the evaluation ground truths as an oracle (devkit/query_oracle.py) ---------------------------


@pytest.mark.parametrize("path", list(ORACLE_WORKSPACES))
def test_analysis_agrees_with_the_ground_truth(path: str) -> None:
    results = oracle_results(path)
    disagreements = [problem for _kind, problem in results if problem]
    agreement = 1 - len(disagreements) / len(results)
    assert agreement >= 0.95, f"{agreement:.0%} agreement:\n" + "\n".join(disagreements)


def test_a_named_release_the_workspace_has_is_asked_even_after_with():
    """"With Django 4.2" reads like a platform, but where 4.2 is one of the workspace's releases it is the asked one."""
    assert analyse_query("With Django 4.2, which PostgreSQL releases can I use?",
                         known_labels=["3.2", "4.2", "5.1"]).versions == ("4.2",)
    assert analyse_query("For Django 4.2, what is the minimum SQLite?", known_labels=["4.2"]).versions == ("4.2",)
    assert analyse_query("Does the plugin run with Django 4.2?", known_labels=["1.0", "2.0"]).versions == ()
    # A project that writes its name in lowercase ("pytest", "scrapy") names its release all the same.
    assert analyse_query("In scrapy 1.8.4, which storage backends ship?", known_labels=["1.8.4", "2.11.2"]).versions \
        == ("1.8.4",)
    assert analyse_query("Does it run in python 3.8?", known_labels=["1.8.4", "2.11.2"]).versions == ()
