"""What a question says about versions: which version or date it asks about, and whether it
asks what changed.

Pure text analysis (no database): retrieval passes the labels that exist in the workspace,
and only mentions of those count, so "OAuth 2.0", "HTTP/1.1" or "/api/v2" never scope a
search to a version. A mention needs a cue as well ("in 2.1", "for v3", "the 3.2 docs",
"version 2.0", "between 2.1 and 3.0"), because a bare number in a question is usually a
value ("a timeout of 2.0 seconds"), not a release.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from django.utils import timezone
from packaging.version import Version

from rag.dates import MONTH_NAMES, midnight, phrase_period
from rag.releases.cues import asks_what_changed, names_the_latest_release
from rag.releases.labels import VersionMention, text_versions
from rag.releases.order import parse_version, version_in_series

__all__ = ["ChangeQuestion", "QueryLineage", "analyse_query"]


@dataclass(frozen=True)
class ChangeQuestion:
    """A question about a change. old None with new set: against the version before `new`;
    new None: up to the latest; both None: across all versions (or, with `latest`, the
    latest release against the one before it)."""

    old: str | None
    new: str | None
    topic: str  # the question without its change and version wording: "rate limit"
    latest: bool = False  # "what's new in the latest release": prefer the newest release notes


@dataclass(frozen=True)
class QueryLineage:
    versions: tuple[str, ...]  # known labels the question names, in the order it names them
    as_of_date: datetime | None  # exclusive bound: "as of March 2025" -> 2025-04-01
    change: ChangeQuestion | None
    text: str  # the question without its version and date mentions, for semantic and lexical search
    before_version: bool = False  # "before 3.0": versions[0] is an exclusive bound, not the scope
    unknown_versions: tuple[str, ...] = ()  # cued versions that match no known label ("in 4.0"), normalised


# --- version mentions --------------------------------------------------------------------------------

_CUES_BEFORE = {
    "in", "for", "of", "since", "before", "after", "between", "from", "to", "version", "versions", "release",
    "releases", "v", "vs", "versus", "than", "until", "at", "with", "on", "under", "upgrading", "the",
}  # fmt: skip
_CUE_AFTER = re.compile(r"['’]s\b|\s+(?:docs?\b|documentation|release|version|series|branch|manual|guide)", re.I)
_CHAIN = re.compile(r"\s*(?:,\s*(?:and\s+|or\s+)?|and|or|vs\.?|versus|to|->|→|-|–)\s*", re.I)
_REMOVABLE_BEFORE = re.compile(
    r"(?:\s*,?\s*(?:\b(?:in|for|of|since|before|after|from|to|at|on|under|with|than|vs\.?|versus|between|and|or|"
    r"until|prior\s+to|(?:according|compared)\s+(?:to|with)|upgrading\s+from)\s*)?)?"
    r"(?:\bthe\s+)?(?:\b(?:version|release|v)\s*)?$",
    re.I,
)
_REMOVABLE_AFTER = re.compile(
    r"(?:'s|’s)?(?:\s+(?:docs?\b|documentation|version\b|release\b(?!\s+notes)|series\b|branch\b))?", re.I
)
_WORD_BEFORE = re.compile(r"([A-Za-z][\w+#]*)?([^\w]*)$")
# The version as the subject of a question ("which port did 2.0 use?"): a value seldom is.
_SUBJECT = re.compile(r"\b(?:did|does|do)\s+$", re.I)
# What may stand between a side word and its version: "since Sphinx 6.2", "before the Lumen Gateway 3.0 release".
_NAMED_VERSION = r"\W*(?:the\s+)?(?:(?-i:[A-Z])[\w-]*\s+){0,3}(?:version\s+|release\s+)?$"
_OLD_SIDE = re.compile(
    rf"\b(?:since|from|after|than|compared\s+(?:to|with)|vs\.?|versus|upgrading\s+from){_NAMED_VERSION}", re.I
)
_BEFORE = re.compile(rf"\b(?:before|prior\s+to|until|pre){_NAMED_VERSION}", re.I)


def _cued(text: str, mention: VersionMention) -> bool:
    """A "v", a version word or a linking word before, "docs"/"release" after, a product
    name ("Lumen Gateway 3.0"), or the subject of "did"/"does" ("did 2.0 use");
    text_versions has already turned away "OAuth 2.0" and the like."""
    if mention.cued or _CUE_AFTER.match(text, mention.end):
        return True
    if _SUBJECT.search(text, 0, mention.start) and re.match(r"\s+[a-z]", text[mention.end :]):
        return True
    before = _WORD_BEFORE.search(text[: mention.start])
    word = before.group(1) if before and before.group(1) else ""
    gap = before.group(2) if before else ""
    return (word.lower() in _CUES_BEFORE or word[:1].isupper()) and not gap.strip()


def _version_mentions(text: str) -> list[VersionMention]:
    """Cued mentions, plus those chained to one ("between 2.1 and 3.0", "2.0, 2.1 or 3.0")."""
    candidates = text_versions(text, strict=False)
    accepted = [_cued(text, mention) for mention in candidates]
    changed = True
    while changed:
        changed = False
        for index in range(len(candidates) - 1):
            linked = _CHAIN.fullmatch(text[candidates[index].end : candidates[index + 1].start])
            if accepted[index] != accepted[index + 1] and linked:
                accepted[index] = accepted[index + 1] = changed = True
    return [mention for mention, keep in zip(candidates, accepted, strict=True) if keep]


# "With Django 4.2", "Flask 2.0:", "in scrapy 1.8.4" (a project that writes its name in lowercase): a name and a
# dotted version. labels.text_versions reads "with Django 4.2" as the platform something runs on; where the
# workspace's own releases include that very version, it is the release asked.
_NAMED_RELEASE = re.compile(r"\b(?:with|for|on|using|under|in|against)\s+[A-Za-z][\w-]*\s+v?(\d+(?:\.\d+)+)(?![\w.]*\d)",
                            re.I)


def _named_known_releases(text: str, known: Sequence[tuple[str, Version]],
                          found: list[VersionMention]) -> list[VersionMention]:
    taken = {(mention.start, mention.end) for mention in found}
    exact = {version for _label, version in known}
    return [VersionMention(match.start(1), match.end(1), version, True, False)
            for match in _NAMED_RELEASE.finditer(text)
            if (match.start(1), match.end(1)) not in taken and (version := parse_version(match.group(1))) in exact]


def _known_label(version: Version, known: Sequence[tuple[str, Version]]) -> str | None:
    """The workspace's spelling of a version: an equal one ("v3" is "3.0", "2.1.0" is "2.1"),
    else the newest of its series ("2.1" when only "2.1.2" exists)."""
    for label, candidate in known:
        if candidate == version:
            return label
    series = [(candidate, label) for label, candidate in known if version_in_series(candidate, version)]
    return max(series)[1] if series else None


# --- dates --------------------------------------------------------------------------------------------
# Dates are read in the server's TIME_ZONE, as date filters are (rag.dates).
_DAY = r"\d{1,2}(?:st|nd|rd|th)?"
_DATE_PHRASE = (
    rf"(?:\d{{4}}-\d{{2}}-\d{{2}}|\d{{4}}-\d{{2}}"
    rf"|(?:{_DAY}\s+)?(?:{MONTH_NAMES})\.?(?:\s+{_DAY},?)?\s+(?:19|20)\d{{2}}"
    rf"|(?:19|20)\d{{2}}(?![.\d])|today|now|yesterday|(?:this|last)\s+(?:week|month|year))"
)
_AS_OF = re.compile(
    rf"\s*\b(?:(?P<as_of>as\s+(?:of|at))|(?P<before>before|prior\s+to)|(?P<during>in|during))\s+"
    rf"(?P<phrase>{_DATE_PHRASE})\b(?!['’])",
    re.I,
)


def _as_of_date(match: re.Match[str], now: datetime | None) -> datetime | None:
    """The exclusive end of the period named: "as of March 2025" and "in March 2025" ->
    2025-04-01, "before 2024" -> 2024-01-01, "as of today" -> None (the present)."""
    phrase = " ".join(match["phrase"].lower().split())
    if phrase in ("today", "now"):
        return None
    today = timezone.localtime(now or timezone.now()).date()
    period = phrase_period(phrase, today)
    if period is None:
        return None
    bound = period[0] if match["before"] else period[1]
    return midnight(bound)


# --- change questions --------------------------------------------------------------------------------
# Whether a question asks for a change at all is rag.releases.cues'; these read its sides and its topic.
# Weak cues ("removed", "different") make a change question only with a version or "the latest release".
_WEAK_CHANGE_CUES = re.compile(
    r"\b(?:differs?|differences?|different|compared?|comparison|versus|vs\.?|new\s+in|added|introduced|removed"
    r"|deprecated|dropped|no\s+longer|anymore)\b",
    re.I,
)
_WHATS_NEW = re.compile(r"\bwhat(?:'s|’s|s|\s+is|\s+are)?\s+new\b|\bnew\s+in\b", re.I)
_CHANGE_WORDING = re.compile(
    r"\bwhat(?:'s|’s|s|\s+is|\s+are)?\s+(?:new|different)\b|\bwhat\s+(?:has\s+|have\s+)?changed\b"
    r"|\bwhat\s+(?:were|are)\s+the\s+(?:changes|differences)\b|\bhow\s+(?:did|does|has|have|do)\b"
    r"|\b(?:the\s+)?(?:changes?|changed|differs?|differences?|different|compared?|comparison|versus|vs\.?|new"
    r"|added|introduced|removed|deprecated|dropped|no\s+longer)\b"
    r"|\b(?:(?:in|of|for|on)\s+)?(?:the\s+)?(?:latest|newest|most\s+recent|current|last)\s+"
    r"(?:release|version|update)s?\b",
    re.I,
)
_EDGE_WORDS = {
    "what", "which", "how", "did", "does", "do", "has", "have", "had", "is", "was", "were", "are", "the", "a", "an",
    "in", "to", "of", "for", "about", "with", "on", "and", "between", "from", "since", "there", "any", "anything",
    "s", "been", "got", "get", "gets", "that", "it", "its", "me", "tell", "show", "list", "please", "ve",
}  # fmt: skip


def _topic(text: str) -> str:
    words = re.findall(r"[\w'’./-]+", _CHANGE_WORDING.sub(" ", text))
    words = [word.strip("'’.") for word in words]
    while words and words[0].lower() in _EDGE_WORDS:
        words.pop(0)
    while words and words[-1].lower() in _EDGE_WORDS:
        words.pop()
    return " ".join(word for word in words if word)


def _change(
    question: str, text: str, scoped: list[tuple[VersionMention, str]], versions: tuple[str, ...]
) -> ChangeQuestion | None:
    """Old and new side of a change question; None when the question does not ask about a change."""
    old_side = [label for mention, label in scoped if _OLD_SIDE.search(question[: mention.start])]
    two_sided = len(set(versions)) >= 2 and bool(
        re.search(r"\bbetween\b|\bfrom\b.*\bto\b|\bvs\.?\b|\bversus\b", question, re.I)
    )
    asks_latest = names_the_latest_release(question)
    weak = bool(_WEAK_CHANGE_CUES.search(question)) and (bool(versions) or asks_latest)
    if not (asks_what_changed(question) or weak or old_side or two_sided):
        return None
    by_version = sorted({label: parse_version(label) for label in versions}.items(), key=lambda item: item[1])
    latest = asks_latest or (not versions and bool(_WHATS_NEW.search(question)))
    if len(by_version) >= 2:
        old, new = by_version[0][0], by_version[-1][0]
    elif by_version and old_side:
        old, new = by_version[0][0], None
    elif by_version:
        old, new = None, by_version[0][0]
    else:
        old = new = None
    return ChangeQuestion(old=old, new=new, topic=_topic(text), latest=latest and not by_version)


# --- the analysis -------------------------------------------------------------------------------------


def _remove(text: str, spans: list[tuple[int, int]]) -> str:
    for start, end in sorted(spans, reverse=True):
        text = text[:start] + " " + text[end:]
    text = re.sub(r"\s+", " ", text)
    text = re.sub(r"\s+([?.!,;:])", r"\1", text)
    return text.strip()


def _mention_span(question: str, mention: VersionMention) -> tuple[int, int]:
    """What to cut for a mention: "in the 3.2 docs", "for v3", "between 2.1"; but only "3.0"
    of "in the 3.0 release notes", where the version qualifies the noun after it."""
    after = _REMOVABLE_AFTER.match(question, mention.end)
    end = after.end() if after else mention.end
    before = _REMOVABLE_BEFORE.search(question[: mention.start])
    start = before.start() if before else mention.start
    qualifies_noun = re.match(r"\s+\w", question[end:]) and re.search(r"\bthe\s+$", question[: mention.start], re.I)
    if end == mention.end and qualifies_noun:
        cue = re.search(r"\b(?:version|release|v)\s*$", question[: mention.start], re.I)
        start = cue.start() if cue else mention.start
    return start, end


def analyse_query(question: str, *, known_labels: Sequence[str], now: datetime | None = None) -> QueryLineage:
    """Versions, an as-of date and a change the question names, and the question without them."""
    known = [(label, version) for label in known_labels if (version := parse_version(label)) is not None]
    spans: list[tuple[int, int]] = []
    scoped: list[tuple[VersionMention, str]] = []
    unknown: list[str] = []
    mentions = _version_mentions(question)
    mentions = sorted(mentions + _named_known_releases(question, known, mentions), key=lambda mention: mention.start)
    for mention in mentions:
        label = _known_label(mention.version, known)
        if label is None:
            unknown.append(str(mention.version))
            continue
        scoped.append((mention, label))
        spans.append(_mention_span(question, mention))
    versions = tuple(dict.fromkeys(label for _mention, label in scoped))
    before_version = bool(scoped) and bool(_BEFORE.search(question[: scoped[0][0].start]))

    as_of_date: datetime | None = None
    for match in _AS_OF.finditer(question):
        if any(start <= match.start("phrase") < end for start, end in spans):
            continue
        if match["during"] and parse_version(match["phrase"]) in {version for _label, version in known}:
            continue  # "in 2024" names a release when the workspace has one called 2024
        as_of_date = _as_of_date(match, now)
        spans.append((match.start(), match.end()))
        break

    text = _remove(question, spans)
    return QueryLineage(
        versions=versions,
        as_of_date=as_of_date,
        change=_change(question, text, scoped, versions),
        text=text or question.strip(),
        before_version=before_version,
        unknown_versions=tuple(dict.fromkeys(unknown)),
    )
