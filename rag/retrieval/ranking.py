"""Query-aware re-ranking: the doc-type soft boost and recency decay for trend queries.

Both act on the fused score and never remove a candidate: a question about an
API error may well be answered by the troubleshooting guide, and a "latest"
question by an old page that is still the only one on the subject.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime

from django.utils import timezone

from rag.models import DocType

# --- doc types -----------------------------------------------------------------------------


@dataclass(frozen=True)
class DocTypeKeywords:
    slug: str
    keywords: tuple[str, ...]


# The admin's DocType rows change rarely; a search reads them at most this often per process,
# so an edit applies within seconds without a query on every search.
DOC_TYPE_KEYWORDS_TTL_SECONDS = 10.0
_keywords_cache: tuple[float, list[DocTypeKeywords]] | None = None


def doc_type_keywords(*, max_age: float = DOC_TYPE_KEYWORDS_TTL_SECONDS) -> list[DocTypeKeywords]:
    """The admin's DocType keywords; `max_age=0` reads them afresh."""
    global _keywords_cache
    now = time.monotonic()
    if _keywords_cache is None or now - _keywords_cache[0] >= max_age:
        rows = [DocTypeKeywords(row.slug, tuple(row.keywords)) for row in DocType.objects.only("slug", "keywords")]
        _keywords_cache = (now, rows)
    return _keywords_cache[1]


def reset_doc_type_keywords() -> None:
    global _keywords_cache
    _keywords_cache = None


def _keyword_regex(keyword: str) -> re.Pattern[str]:
    # Whole words, and a plural or -ing/-ed form of the last word ("endpoint" finds "endpoints").
    body = re.escape(keyword.strip().lower()).replace(r"\ ", r"\s+")
    return re.compile(rf"(?<!\w){body}(?:s|es|ed|ing)?(?!\w)")


def classify_query(query: str, rules: Iterable[DocTypeKeywords]) -> list[str]:
    """The doc type the query is clearly about: the one with the most keyword hits, if no other
    type has as many; else none.

    A boost for a wrong guess pushes the wrong pages up, so a tie ("api error": the API, or
    troubleshooting?) boosts nothing. A query with no keyword of any type gets none.
    """
    text = query.lower()
    hits: dict[str, int] = {}
    for rule in rules:
        count = sum(1 for keyword in rule.keywords if keyword.strip() and _keyword_regex(keyword).search(text))
        if count:
            hits[rule.slug] = count
    if not hits:
        return []
    best = max(hits.values())
    leaders = [slug for slug, count in hits.items() if count == best]
    return leaders if len(leaders) == 1 else []


def doc_type_multiplier(doc_type: str, boosted: Sequence[str], factor: float) -> float:
    return factor if doc_type and doc_type in boosted else 1.0


# --- recency -------------------------------------------------------------------------------

_TREND_WORDS = re.compile(
    r"\b(latest|newest|recent|recently|current|currently|nowadays|today|upcoming|up[- ]to[- ]date|"
    r"this (?:week|month|quarter|year)|last (?:week|month|quarter|year)|"
    r"(?:19|20)\d{2})\b"
)
# "new" marks a trend ("what's new", "new in 3.0", "the new limits"), except after an
# article, where it is about creating something ("create a new API key").
_NEW = re.compile(r"\bnew\b")
_NEW_AS_CREATION = re.compile(r"\b(a|an)\s+new\b")


def is_trend_query(query: str) -> bool:
    """Does the query ask for what is current (latest, recent, new, this year, a year)?"""
    text = query.lower()
    if _TREND_WORDS.search(text):
        return True
    return bool(_NEW.search(text)) and len(_NEW.findall(text)) > len(_NEW_AS_CREATION.findall(text))


def recency_factor(doc_date: datetime | None, *, half_life_days: float, now: datetime | None = None) -> float:
    """0.5 ** (age_days / half_life): 1 today, 0.5 one half-life ago; unknown dates count as oldest (0)."""
    if doc_date is None:
        return 0.0
    age_days = max(0.0, ((now or timezone.now()) - doc_date).total_seconds() / 86400)
    return 0.5 ** (age_days / half_life_days)


def with_recency(relevance: float, recency: float, *, weight: float) -> float:
    return (1 - weight) * relevance + weight * recency
