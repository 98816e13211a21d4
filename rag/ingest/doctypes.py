"""Label a document api / architecture / operations / troubleshooting / user, or leave it untyped.

Retrieval boosts (or, by the user's choice, filters on) the document types a
question is about, so a wrong label does harm and no label does none: a
document gets a type only on clear evidence, and the evidence is easy to
explain to the person who disagrees. In order: the author's own frontmatter,
where the file lives (folder or file name, relative to the ingested folder),
the title (what the author called it: "Operations Runbook", "Admin API
Reference"), the section headings ("Bugs fixed", "Features added" make release
notes), and last the body's keywords when one type clearly leads.
Everything else stays untyped. `doc_type_scores` shows the body's numbers.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Sequence
from dataclasses import dataclass

# One keyword repeated on every line (a "Kubernetes" manual) should not outvote the rest.
KEYWORD_HIT_CAP = 5
# Body hits are counted per this many words, so a long document needs more of them.
BODY_WORDS_UNIT = 500
# The body decides only with this many (capped, per-unit) hits for its type and this lead over
# the runner-up: product words ("API", "request") run through every page of an API product's
# documentation, so a narrow lead is noise, not evidence.
BODY_MIN_SCORE = 4.0
BODY_MIN_LEAD = 2.5
# Headings decide with this many distinct keyword hits for one type and the same lead.
HEADING_MIN_HITS = 2


@dataclass(frozen=True)
class DocTypeRule:
    """One document type: the words that suggest it and the folders that settle it."""

    slug: str
    keywords: tuple[str, ...]
    path_patterns: tuple[str, ...] = ()  # case-insensitive substrings, or fnmatch globs if they contain * ? [


@dataclass(frozen=True)
class DocTypeGuess:
    slug: str  # "" when nothing is clear
    evidence: str  # "frontmatter", "path", "title", "headings", "body" or ""


def guess_doc_type(
    *, path: str, title: str, text: str, frontmatter_type: str | None, rules: Sequence[DocTypeRule],
    headings: Sequence[str] = (),
) -> DocTypeGuess:
    """The type and what settled it; untyped ("") unless the evidence is clear."""
    slugs = {rule.slug.casefold(): rule.slug for rule in rules}
    if frontmatter_type and frontmatter_type.strip().casefold() in slugs:
        return DocTypeGuess(slugs[frontmatter_type.strip().casefold()], "frontmatter")
    for rule in rules:
        if any(_path_matches(path, pattern) for pattern in rule.path_patterns):
            return DocTypeGuess(rule.slug, "path")
    lowered_title = title.lower()
    title_hits = {rule.slug: sum(_whole_word_hits(lowered_title, keyword.lower(), cap=1) for keyword in rule.keywords)
                  for rule in rules}
    leader = _clear_leader(title_hits, minimum=1, lead=1.0)
    if leader:
        return DocTypeGuess(leader, "title")
    lowered_headings = [heading.lower() for heading in headings]
    heading_hits = {rule.slug: sum(1 for keyword in rule.keywords for heading in lowered_headings
                                   if _whole_word_hits(heading, keyword.lower(), cap=1)) for rule in rules}
    leader = _clear_leader(heading_hits, minimum=HEADING_MIN_HITS, lead=BODY_MIN_LEAD)
    if leader:
        return DocTypeGuess(leader, "headings")
    leader = _clear_leader(doc_type_scores(title="", text=text, rules=rules), minimum=BODY_MIN_SCORE,
                           lead=BODY_MIN_LEAD)
    return DocTypeGuess(leader, "body" if leader else "")


def classify_doc_type(
    *,
    path: str,
    title: str,
    text: str,
    frontmatter_type: str | None,
    rules: Sequence[DocTypeRule],
    headings: Sequence[str] = (),
    default: str = "",
) -> str:
    """The document type slug (see `guess_doc_type`), else `default`: untyped unless asked otherwise."""
    guess = guess_doc_type(path=path, title=title, text=text, frontmatter_type=frontmatter_type, rules=rules,
                           headings=headings)
    return guess.slug or default


def section_headings(sections: Sequence) -> list[str]:
    """Each heading below the title once (a parsed document's sections repeat their parents')."""
    return list(dict.fromkeys(heading for section in sections for heading in section.heading_path[1:]))


def _clear_leader(scores: dict[str, float], *, minimum: float, lead: float) -> str:
    """The one type with at least `minimum` that beats every other by more than `lead` times; else ""."""
    ranked = sorted(scores.items(), key=lambda item: -item[1])
    if not ranked or ranked[0][1] < minimum:
        return ""
    runner_up = ranked[1][1] if len(ranked) > 1 else 0.0
    if ranked[0][1] > runner_up * lead and ranked[0][1] != runner_up:
        return ranked[0][0]
    return ""


def doc_type_scores(*, title: str, text: str, rules: Sequence[DocTypeRule]) -> dict[str, float]:
    """Keyword score per rule: hits in title and body (at most KEYWORD_HIT_CAP per keyword) per
    BODY_WORDS_UNIT words; the title is weighed apart, before the body, by `guess_doc_type`."""
    body_units = max(len(text.split()) / BODY_WORDS_UNIT, 1.0)
    lowered = f"{title}\n{text}".lower()
    return {
        rule.slug: sum(_whole_word_hits(lowered, keyword.lower(), cap=KEYWORD_HIT_CAP) for keyword in rule.keywords)
        / body_units
        for rule in rules
    }


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
# troubleshooting page under docs/api/ is about troubleshooting. "guide" alone is no keyword:
# it names every kind of document ("Operations Guide", "API guide"); nor are words that every
# programming text uses ("module", "interface", "dependency").
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
            "operations", "install", "installing", "installation", "configuration reference",
            "hardening", "firewall", "tls certificate", "high availability", "administration",
        ),
        path_patterns=("runbook", "/ops/", "/operations/", "/deploy", "/infra/", "/sre/"),
    ),
    DocTypeRule(
        slug="architecture",
        keywords=(
            "architecture", "architectural", "design", "component", "components", "subsystem",
            "layer", "layers", "data flow", "diagram",
            "trade-off", "trade-offs", "tradeoff", "decision", "decisions", "adr", "rationale",
            "scalability", "consistency", "boundary", "message queue",
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
            "getting started", "tutorial", "how to", "user guide", "quickstart", "quick start",
            "click", "button", "menu", "page", "dashboard", "account", "profile", "settings", "sign in",
            "log in", "upload", "search", "you can", "step", "steps", "example", "walkthrough",
            "release notes", "what's new", "changelog", "glossary", "handbook", "user manual",
            "features added", "bugs fixed", "new features", "incompatible changes", "breaking changes",
        ),
        path_patterns=("/user-guide/", "/userguide/", "/tutorials/", "/getting-started", "/handbook/"),
    ),
)
