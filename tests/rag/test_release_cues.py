"""rag.releases.cues: one pattern per concept of what a question asks of time, and where two look alike."""

from __future__ import annotations

import pytest

from chat.questions import question_kind
from rag.releases import (
    answer_states_a_change, asks_history, asks_newest_release, asks_what_changed, may_name_a_time,
    names_long_term_support, names_the_latest_release,
)


@pytest.mark.parametrize(("question", "what_changed", "states_change"), [
    ("What changed in the rate limit between 2.1 and 3.0?", True, True),
    ("rate limit changes in 3.0", True, False),  # a search-box query asks for changes
    ("Did nodes pick up configuration changes in 2.1?", False, False),  # a compound noun
    ("What is the Changed defaults Rate limit minute limit?", True, False),  # "changed" alone scopes, answers a value
    ("Do I still need to pass --keep-going to sphinx-build?", False, True),  # whether it still holds
    ("Since when is the port 8443?", False, True),
    ("What is the default timeout?", False, False),
])
def test_a_change_between_releases_and_an_answer_that_states_one_are_two_concepts(question, what_changed,
                                                                                 states_change):
    assert asks_what_changed(question) is what_changed
    assert answer_states_a_change(question) is states_change
    assert (question_kind(question) == "change") is states_change


@pytest.mark.parametrize(("question", "phrase", "newest"), [
    ("What was removed in the latest version?", True, True),
    ("Any news in the most recent updates?", True, False),
    ("What's new in the latest Django release?", False, True),  # words between
    ("What's the last bugfix release of the Django 3.2 series?", False, True),
    ("Which is the current LTS?", False, True),
    ("What is the latest timeout?", False, False),
])
def test_the_latest_release_as_one_phrase_and_the_newest_release_asked(question, phrase, newest):
    assert names_the_latest_release(question) is phrase
    assert asks_newest_release(question) is newest


def test_long_term_support_history_and_the_present():
    assert names_long_term_support("Django 4.2 is a long-term support release.")
    assert names_long_term_support("which lts is current?") and not names_long_term_support("the LTSB build")
    assert asks_history("Which bugs were fixed in 4.2.3?") and not asks_history("What is the default port?")
    assert may_name_a_time("What is the port in 2.1?") and not may_name_a_time("What is the default port?")
