"""What a question's words ask of time: a change, the newest release, long-term support, a release's history.

One pattern per concept, for everyone who asks: the analysis of a question's versions (rag.releases.questions),
the plan a search follows (rag.releases.plan), the calendar's LTS releases (rag.releases.calendar) and the kind of
answer a question needs (chat.questions). Pure text: no database.

Two pairs look alike and are not one concept; over the demo's and the evaluation's questions they match different
sets, so each keeps its own pattern:

- `asks_what_changed` (a change between releases, which scopes a search to two of them) and `answer_states_a_change`
  (the answer must state a change or that something still holds: "do I still need ...", "since when", "no longer");
- `names_the_latest_release` ("the latest release" as one phrase: it makes "removed" a change cue) and
  `asks_newest_release` (words may stand between, "the last Django 4.2 patch": that release's page leads).
"""

from __future__ import annotations

import re

__all__ = [
    "answer_states_a_change", "asks_history", "asks_newest_release", "asks_what_changed", "asks_whats_new",
    "may_name_a_time", "names_long_term_support", "names_the_latest_release",
]

# --- a change between releases ------------------------------------------------------------------------

# Strong cues make a change question on their own; weak ones ("removed", "different") only
# with a version or "the latest release" ("why is my route no longer matched?" is not one).
_CHANGE_CUES = re.compile(
    r"\bwhat(?:'s|’s|s|\s+is|\s+are)?\s+(?:new|changed)\b|\bwhat\s+(?:has|have)\s+changed\b"
    r"|\bwhat\s+(?:were|are)\s+the\s+(?:changes|differences)\b|\bwhat\s+changes\b"
    r"|\bchanged\b|\b(?:differ|differences?|difference)\s+between\b"
    r"|\bhow\s+(?:did|has|have)\b.*\bchange\b",
    re.I,
)
# "changes in/to/since" asks for changes after nothing, a determiner or a question word ("any
# changes to the port in 3.0?"). After a topic word it is a compound noun the question is about
# ("did nodes pick up configuration changes in 2.1?", "for a configuration change to reach the
# nodes") unless a question word leads the noun phrase ("what configuration changes since 2.0?")
# or the noun phrase is all there is before it, as in a search-box query ("rate limit changes in 3.0").
_CHANGE_NOUN = re.compile(r"\bchanges?\s+(?:in|to|from|between|since)\b", re.I)
_CHANGE_NOUN_LEADS = {
    "the", "any", "what", "which", "these", "those", "all", "major", "breaking", "notable", "main", "key", "recent",
    "important", "significant", "big", "biggest", "other", "some", "list",
}  # fmt: skip
_ASKS_FOR_CHANGES = re.compile(r"\b(?:what|which|any|there|list)\s+(?:[\w-]+\s+){1,3}$", re.I)
_TERSE_QUERY = re.compile(
    r"\s*(?:(?!(?:how|what|which|when|where|why|who|did|does|do|is|are|was|were|can|could|should|will|would)\b)"
    r"[\w-]+\s+){1,3}",
    re.I,
)


def asks_what_changed(question: str) -> bool:
    """A strong change cue, or "changes in/to/since ..." that is not a compound noun (above)."""
    if _CHANGE_CUES.search(question):
        return True
    for match in _CHANGE_NOUN.finditer(question):
        before = question[: match.start()]
        words_before = re.findall(r"[\w'’-]+", before)
        if not words_before or words_before[-1].lower() in _CHANGE_NOUN_LEADS:
            return True
        if _ASKS_FOR_CHANGES.search(before) or _TERSE_QUERY.fullmatch(before):
            return True
    return False


# --- an answer that states a change --------------------------------------------------------------------

_STATES_A_CHANGE = re.compile(r"\bwhat(?:'s| has| have| was)? (?:changed|new)\b|\bhow (?:did|has|have) .*\bchanged?\b|"
                              r"\bsince when\b|\bstill\b|\bdifferen|\bcompared? (?:to|with)\b|\bno longer\b", re.I)


def answer_states_a_change(question: str) -> bool:
    """The answer has to state what changed, or that something still holds or no longer does."""
    return bool(_STATES_A_CHANGE.search(question))


# "What's new in 3.0", "the new features of the latest release", "3.0 highlights": a release's own notes answer.
_WHATS_NEW = re.compile(r"\bwhat(?:'s|’s|s|\s+is|\s+are)?\s+(?:new|the\s+(?:new\s+features|highlights))\b|"
                        r"\bnew\s+features\b|\bhighlights\b", re.I)


def asks_whats_new(question: str) -> bool:
    """What a release brings ("what's new in 3.0", "highlights of the latest release"), not how one thing changed."""
    return bool(_WHATS_NEW.search(question))


# --- the newest release, long-term support, a release's history ----------------------------------------

_THE_LATEST_RELEASE = re.compile(r"\b(?:latest|newest|most\s+recent|current|last)\s+(?:release|version|update)s?\b",
                                 re.I)
# A question about the newest release itself ("what's new in the latest release", "the last 4.2 patch", "the current
# LTS"): answered by the page of the newest release by version order, never by file date.
_NEWEST_RELEASE = re.compile(r"\b(?:latest|newest|most\s+recent|current|last|final)\b(?:\W+[\w.]+){0,3}?\W+"
                             r"(?:release|version|patch|bugfix|lts|long[- ]term)", re.I)
_LONG_TERM = re.compile(r"\bLTS\b|long[- ]term[- ]support", re.I)
# Questions that ask for the history a release's own notes tell: those keep every release's notes at their rank.
_ASKS_HISTORY = re.compile(r"\b(?:new|chang\w*|added|removed|deprecat\w*|introduced|release\s+notes?|changelog|"
                           r"history|fix(?:es|ed)?|upgrad\w*)\b", re.I)
# A question that names a version, a date or a change has a digit or one of these words; any other
# question is about the present, and the workspace's labels need not be read for it.
_MAY_NAME_A_TIME = re.compile(r"\d|chang|new|differ|since|before|as of|remov|deprecat|introduc|added|compar|latest"
                              r"|recent|last|final|current|lts|long.term", re.I)


def names_the_latest_release(question: str) -> bool:
    """"The latest release", "the current version", "the most recent updates", written as one phrase."""
    return bool(_THE_LATEST_RELEASE.search(question))


def asks_newest_release(question: str) -> bool:
    """The newest release itself: "the latest Django release", "the last 4.2 patch", "the current LTS"."""
    return bool(_NEWEST_RELEASE.search(question))


def names_long_term_support(text: str) -> bool:
    """"LTS" or "long-term support": in a question, and in the sentence of a series page that dates a release."""
    return bool(_LONG_TERM.search(text))


def asks_history(question: str) -> bool:
    """What is new, changed, fixed or deprecated, release notes, a changelog: what releases' own notes tell."""
    return bool(_ASKS_HISTORY.search(question))


def may_name_a_time(question: str) -> bool:
    """False when the question can name no version, date or change: it is about the present, read no labels."""
    return bool(_MAY_NAME_A_TIME.search(question))
