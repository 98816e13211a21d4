"""Label a document api / architecture / operations / troubleshooting / user.

Retrieval boosts the document types a question is about, so the label has to
be predictable and easy to explain to the person who disagrees with it: an
author's own frontmatter wins, then where the file lives, then which
type's keywords it uses most. `doc_type_scores` shows the numbers behind the
last step.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Sequence
from dataclasses import dataclass

TITLE_KEYWORD_WEIGHT = 3.0
# One keyword repeated on every line (a "Kubernetes" manual) should not outvote the rest.
KEYWORD_HIT_CAP = 5
# Body hits are counted per this many words, so a long document does not bury its title.
BODY_WORDS_UNIT = 500


@dataclass(frozen=True)
class DocTypeRule:
    """One document type: the words that suggest it and the folders that settle it."""

    slug: str
    keywords: tuple[str, ...]
    path_patterns: tuple[str, ...] = ()  # case-insensitive substrings, or fnmatch globs if they contain * ? [


def classify_doc_type(
    *,
    path: str,
    title: str,
    text: str,
    frontmatter_type: str | None,
    rules: Sequence[DocTypeRule],
    default: str = "user",
) -> str:
    """The document type slug: frontmatter, else the first rule whose path pattern
    matches, else the best keyword score; ties and no hits give `default`."""
    slugs = {rule.slug.casefold(): rule.slug for rule in rules}
    if frontmatter_type and frontmatter_type.strip().casefold() in slugs:
        return slugs[frontmatter_type.strip().casefold()]
    for rule in rules:
        if any(_path_matches(path, pattern) for pattern in rule.path_patterns):
            return rule.slug
    scores = doc_type_scores(title=title, text=text, rules=rules)
    best = max(scores.values(), default=0.0)
    winners = [slug for slug, score in scores.items() if score == best]
    if best <= 0 or len(winners) > 1:
        return default
    return winners[0]


def doc_type_scores(*, title: str, text: str, rules: Sequence[DocTypeRule]) -> dict[str, float]:
    """Keyword score per rule: TITLE_KEYWORD_WEIGHT per keyword in the title, plus body
    hits (at most KEYWORD_HIT_CAP per keyword) per BODY_WORDS_UNIT words of body."""
    body_units = max(len(text.split()) / BODY_WORDS_UNIT, 1.0)
    lowered_title, lowered_text = title.lower(), text.lower()
    scores: dict[str, float] = {}
    for rule in rules:
        title_hits = body_hits = 0
        for keyword in rule.keywords:
            lowered = keyword.lower()
            title_hits += _whole_word_hits(lowered_title, lowered, cap=1)
            body_hits += _whole_word_hits(lowered_text, lowered, cap=KEYWORD_HIT_CAP)
        scores[rule.slug] = TITLE_KEYWORD_WEIGHT * title_hits + body_hits / body_units
    return scores


def _whole_word_hits(text: str, keyword: str, *, cap: int) -> int:
    """Occurrences of keyword not inside a longer word ("on-call" counts, "rapid" is not "api"), up to cap.

    str.find, not a regex per keyword: scoring runs for every indexed document, over ~150 keywords.
    """
    hits = start = 0
    while hits < cap and keyword and (found := text.find(keyword, start)) >= 0:
        end = found + len(keyword)
        if not _is_word_char(text, found - 1) and not _is_word_char(text, end):
            hits += 1
        start = found + 1
    return hits


def _is_word_char(text: str, index: int) -> bool:
    return 0 <= index < len(text) and (text[index].isalnum() or text[index] == "_")


def _path_matches(path: str, pattern: str) -> bool:
    # A leading slash lets "/api/" match a path that starts with "api/".
    normalized = "/" + path.replace("\\", "/").lstrip("/").casefold()
    pattern = pattern.casefold()
    if any(char in pattern for char in "*?["):
        return fnmatch.fnmatchcase(normalized, pattern) or fnmatch.fnmatchcase(normalized.lstrip("/"), pattern)
    return pattern in normalized


# Checked in this order for path patterns, so the narrower types come first: a
# troubleshooting page under docs/api/ is about troubleshooting.
DEFAULT_RULES: tuple[DocTypeRule, ...] = (
    DocTypeRule(
        slug="troubleshooting",
        keywords=(
            "troubleshooting", "troubleshoot", "error", "errors", "fails", "failed", "failure", "crash",
            "crashes", "bug", "issue", "issues", "problem", "symptom", "symptoms", "cause", "root cause",
            "workaround", "fix", "debug", "debugging", "stack trace", "traceback", "exception", "timeout",
            "not working", "resolve", "resolution", "known issues", "faq",
        ),
        path_patterns=("troubleshoot", "/faq/", "faq.", "known-issues", "/kb/"),
    ),
    DocTypeRule(
        slug="operations",
        keywords=(
            "deploy", "deployment", "deploying", "kubernetes", "helm", "docker", "container", "backup",
            "backups", "restore", "monitoring", "metrics", "alert", "alerts", "alerting", "upgrade",
            "upgrading", "rollback", "runbook", "on-call", "incident", "scaling", "replicas", "capacity",
            "maintenance", "systemd", "log rotation", "prometheus", "grafana", "health check",
            "environment variable", "environment variables", "provisioning", "disaster recovery",
        ),
        path_patterns=("runbook", "/ops/", "/operations/", "/deploy", "/infra/", "/sre/"),
    ),
    DocTypeRule(
        slug="architecture",
        keywords=(
            "architecture", "architectural", "design", "component", "components", "subsystem", "module",
            "modules", "layer", "layers", "data flow", "diagram", "dependency", "dependencies",
            "trade-off", "trade-offs", "tradeoff", "decision", "decisions", "adr", "rationale",
            "scalability", "consistency", "interface", "interfaces", "boundary", "message queue",
            "event-driven", "microservice", "microservices", "schema", "data model",
        ),
        path_patterns=("/architecture/", "/adr/", "/adrs/", "/design/", "/rfc/", "/rfcs/"),
    ),
    DocTypeRule(
        slug="api",
        keywords=(
            "api", "endpoint", "endpoints", "rest", "http", "https", "request", "requests", "response",
            "responses", "status code", "json", "payload", "query parameter", "header", "headers",
            "bearer", "api key", "token", "authentication", "authorization", "rate limit", "pagination",
            "webhook", "webhooks", "openapi", "swagger", "graphql", "sdk", "curl",
        ),
        path_patterns=("/api/", "/apis/", "openapi", "swagger"),
    ),
    DocTypeRule(
        slug="user",
        keywords=(
            "getting started", "tutorial", "how to", "guide", "user guide", "quickstart", "quick start",
            "click", "button", "menu", "page", "dashboard", "account", "profile", "settings", "sign in",
            "log in", "upload", "search", "you can", "step", "steps", "example", "walkthrough",
        ),
        path_patterns=("/user-guide/", "/userguide/", "/tutorials/", "/getting-started", "/handbook/"),
    ),
)
