"""Retrieval quality against a ground truth: what `make eval` and `make eval-real` measure.

A ground truth is a JSON list of questions of three kinds (demo/README.md):

- "current" (the default): the answer is the newest release's value.
  `expected_path` is the newest document stating it (`answer_patterns`);
  `outdated` lists older documents stating their stale values.
- "version": asked about one release (`as_of`, named in the question text).
  `expected_path` is that release's document; `other_versions` lists other
  releases' documents stating their different values.
- "change": what changed between two releases; `sides` is the old and the
  new release's document, each with the patterns of its value.

Every configuration calls `search(question_text, options)` and nothing
else: reading "in 2.1" or "between 2.1 and 3.0" out of the text is the
search's job. Figures per question kind:

- current: hit@5 (a top-5 result comes from the expected document); answer@5
  (newest-version hit@5: a top-5 result from the expected document states
  the answer); MRR@10; stale (share of all top-5 results that come from an
  outdated document and state its stale value); q stale (questions with any).
- version: accuracy (a top-5 result from a document of the asked release states
  its value and ranks above every result stating another release's value);
  found@5 (such a result is in the top 5, whatever ranks above it); wrong
  (share of top-5 results stating another release's value); q wrong.
- change: accuracy (both sides found: for each side, a top-5 result from a
  document of its release states its value); old and new (each side alone).

With a release listing (`release_paths_widen`), "a document of the release" is any
corpus file of that release; without one, only the file the question names.

Patterns match the text lower-cased with whitespace collapsed, as substrings
or as regexes. Ground-truth paths are relative; documents store the path as
ingested, so paths match by suffix.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from datetime import timedelta
from pathlib import Path
from typing import Any

from celery import current_app
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from django.conf import settings
from django.utils import timezone

from licensing.keys import LicensePayload, generate_keypair, load_private_key, sign_license
from licensing.models import License
from licensing.services import installation_id, license_install, license_revoke
from rag.dedup import workspace_merge
from rag.jobs import job_item_run
from rag.models import IndexingJob, Workspace
from rag.retrieval import SearchOptions, SearchResult, UNLICENSED, search
from rag.uploads import indexing_job_create

KINDS = ("current", "version", "change")
TOP = 5  # the answerer reads the top five
RANKED = 10  # MRR looks this deep

_NO_STAGES = {
    "respect_canonicals": False, "dedup": False, "doc_type_boost": 1.0, "recency": "off",
    "version_aware": False, "analyse_query": False, "identifiers": False, "expansion": False, "rerank": False,
}
PLAIN_SEMANTIC = {"mode": "semantic", **_NO_STAGES}
PLAIN_LEXICAL = {"mode": "lexical", **_NO_STAGES}


@dataclass(frozen=True)
class Config:
    """One way of searching: option changes over the defaults, with or without a license.

    `settings` overrides Django settings for the run (fusion weights, boosts): the knobs that are
    not per-search options.
    """

    name: str
    changes: dict[str, Any] = field(default_factory=dict)
    licensed: bool = True
    settings: dict[str, Any] = field(default_factory=dict)


def _without_list(name: str) -> dict[str, Any]:
    return {"RRF_WEIGHTS": {**settings.RRF_WEIGHTS, name: 0.0}}


def ablation_configs() -> list[Config]:
    """Full pipeline, the Free tier, the plain baselines, and the full pipeline without each stage."""
    return [
        Config("full pipeline"),
        Config("Free tier", licensed=False),
        Config("plain semantic", PLAIN_SEMANTIC),
        Config("plain lexical", PLAIN_LEXICAL),
        Config("no full-text lexical", settings=_without_list("lexical")),
        Config("no identifiers", {"identifiers": False}),
        Config("no heading boost", settings={"IDENTIFIER_HEADING_BOOST": 1.0}),
        Config("no expansion", {"expansion": False}),
        Config("no sentence rerank", {"rerank": False}),
        Config("no version lineage", {"version_aware": False, "analyse_query": False}),
        Config("no canonicals", {"respect_canonicals": False}),
        Config("no near-dup collapse", {"dedup": False}),
        Config("no doc-type boost", {"doc_type_boost": 1.0}),
        # Recency is off by default (SEARCH_RECENCY): its ablation is switching it on.
        Config("with recency (auto)", {"recency": "auto"}),
    ]


# --- matching ---------------------------------------------------------------------------------

def states(text: str, patterns: Sequence[str]) -> bool:
    """Every pattern appears in the text (lower-cased, whitespace collapsed), as a substring or a regex."""
    if not patterns:
        return False
    normalized = " ".join(text.lower().split())
    for pattern in patterns:
        if pattern in normalized:
            continue
        try:
            if re.search(pattern, normalized):
                continue
        except re.error:
            pass
        return False
    return True


def path_matches(path: str, expected: str) -> bool:
    path = path.replace("\\", "/")
    expected = expected.replace("\\", "/").lstrip("./")
    return path == expected or path.endswith("/" + expected)


def question_kind(question: dict) -> str:
    return question.get("kind", "current")


def _states_entry(result: SearchResult, entries: Iterable[dict]) -> bool:
    """The result comes from one of the entries' documents and states that entry's value."""
    return any(any(path_matches(result.path, path) for path in e.get("paths", [e["path"]]))
               and states(result.text, e.get("patterns", [])) for e in entries)


def release_paths_widen(questions: Sequence[dict], release_of: dict[str, str]) -> list[dict]:
    """Version and change questions accept any document of the release asked about, not only the one named.

    "What was the limit in 2.1?" is answered by every 2.1 document that states the 2.1 value (the
    2.1 troubleshooting guide as well as the 2.1 runbook); `release_of` maps corpus paths to releases.
    """
    by_release: dict[str, list[str]] = {}
    for path, release in release_of.items():
        by_release.setdefault(release, []).append(path)

    def widened(entry: dict) -> dict:
        paths = sorted({entry["path"], *by_release.get(entry.get("version", ""), [])})
        return {**entry, "paths": paths}

    result = []
    for question in questions:
        kind = question_kind(question)
        if kind == "version":
            question = {**question, "release_paths": widened({"path": question["expected_path"],
                                                              "version": question["as_of"]})["paths"],
                        "other_versions": [widened(e) for e in question.get("other_versions", [])]}
        elif kind == "change":
            question = {**question, "sides": [widened(side) for side in question["sides"]]}
        result.append(question)
    return result


def _first_rank(results: Sequence[SearchResult], hit: Callable[[SearchResult], bool]) -> int | None:
    return next((rank for rank, result in enumerate(results, start=1) if hit(result)), None)


# --- per question -----------------------------------------------------------------------------

def score_current(question: dict, results: Sequence[SearchResult]) -> dict[str, float]:
    expected = question["expected_path"]
    answer = {"path": expected, "patterns": question["answer_patterns"]}
    top = list(results)[:TOP]
    first = _first_rank(list(results)[:RANKED], lambda r: path_matches(r.path, expected))
    stale = sum(_states_entry(r, question.get("outdated", [])) for r in top)
    return {
        "hit@5": float(first is not None and first <= TOP),
        "answer@5": float(any(_states_entry(r, [answer]) for r in top)),
        "rr@10": 1 / first if first else 0.0,
        "stale_results": stale,
        "results": len(top),
    }


def score_version(question: dict, results: Sequence[SearchResult]) -> dict[str, float]:
    top = list(results)[:TOP]
    right = {"path": question["expected_path"], "patterns": question["answer_patterns"],
             "paths": question.get("release_paths", [question["expected_path"]])}
    right_rank = _first_rank(top, lambda r: _states_entry(r, [right]))
    wrong_rank = _first_rank(top, lambda r: _states_entry(r, question["other_versions"]))
    return {
        "accurate": float(right_rank is not None and (wrong_rank is None or right_rank < wrong_rank)),
        "found@5": float(right_rank is not None),
        "wrong_results": sum(_states_entry(r, question["other_versions"]) for r in top),
        "results": len(top),
    }


def score_change(question: dict, results: Sequence[SearchResult]) -> dict[str, float]:
    top = list(results)[:TOP]
    old, new = (any(_states_entry(r, [side]) for r in top) for side in question["sides"])
    return {"accurate": float(old and new), "old": float(old), "new": float(new)}


SCORERS = {"current": score_current, "version": score_version, "change": score_change}


def summarise(kind: str, scores: Sequence[dict[str, float]]) -> dict[str, float]:
    """One kind's figures over its questions (see the module docstring)."""
    count = len(scores)
    if not count:
        return {"questions": 0}
    mean = lambda key: sum(s[key] for s in scores) / count  # noqa: E731
    if kind == "current":
        return {
            "questions": count, "hit@5": mean("hit@5"), "answer@5": mean("answer@5"), "mrr@10": mean("rr@10"),
            "stale": sum(s["stale_results"] for s in scores) / max(sum(s["results"] for s in scores), 1),
            "stale_questions": sum(s["stale_results"] > 0 for s in scores),
        }
    if kind == "version":
        return {
            "questions": count, "accuracy": mean("accurate"), "found@5": mean("found@5"),
            "wrong": sum(s["wrong_results"] for s in scores) / max(sum(s["results"] for s in scores), 1),
            "wrong_questions": sum(s["wrong_results"] > 0 for s in scores),
        }
    return {"questions": count, "accuracy": mean("accurate"), "old": mean("old"), "new": mean("new")}


# --- running ----------------------------------------------------------------------------------

def eval_workspace_prepare(*, corpus: Path, slug: str, name: str) -> tuple[Workspace, dict[str, Any]]:
    """Index the corpus in-process (unchanged files are skipped on a rerun) and merge it."""
    target, _ = Workspace.objects.get_or_create(slug=slug, defaults={"name": name})
    # Merges queued by indexing run here and now: there is no worker to take them.
    current_app.conf.task_always_eager = True
    job = indexing_job_create(workspace=target, paths=[corpus], source=IndexingJob.Source.DEMO, enqueue=False)
    statuses: dict[str, int] = {}
    for item_id in job.items.order_by("pk").values_list("pk", flat=True):
        status = job_item_run(item_id=item_id)
        statuses[status] = statuses.get(status, 0) + 1
    merged = workspace_merge(workspace_id=target.pk)
    return target, {
        "indexed": dict(sorted(statuses.items())), "records_created": merged.records_created,
        "records_changed": merged.records_changed, "contradictions_raised": merged.contradictions_raised,
    }


def eval_license_set(*, workspace: Workspace, licensed: bool) -> None:
    """Enterprise through a license signed by this run's development key, or no license at all: the same
    index seen by a licensed and a Free workspace, through the path a customer's license takes (signature,
    installation, `has_feature`). Evaluation runs on an instance serving this machine alone, where the
    development key is honoured, as in the tests.
    """
    for license in License.objects.filter(workspace=workspace, revoked=False):
        license_revoke(license=license, actor_label="evaluation")
    if not licensed:
        return
    now = timezone.now()
    payload = LicensePayload(license_id=uuid.uuid4(), installation=installation_id(), workspace=workspace.slug,
                             tier="enterprise", valid_from=now - timedelta(minutes=1), valid_until=None,
                             issued_to="evaluation", issued_at=now)
    license_install(key=sign_license(payload, _development_key()), workspace_slug=workspace.slug,
                    actor_label="evaluation")


_development_keys: list[tuple[Ed25519PrivateKey, str]] = []


def _development_key() -> Ed25519PrivateKey:
    """A development keypair made once per run, its public half trusted by this process only (set on each
    call: a test's settings are restored after it)."""
    if not _development_keys:
        private_pem, public_text = generate_keypair()
        _development_keys.append((load_private_key(private_pem), public_text))
    private_key, public_text = _development_keys[0]
    settings.LICENSE_DEVELOPMENT_KEY = public_text
    return private_key


def evaluate(
    workspace: Workspace, questions: Sequence[dict], config: Config, *,
    on_results: Callable[[dict, Sequence[SearchResult]], None] | None = None,
) -> dict[str, dict[str, float]]:
    """One configuration's figures per question kind; the license must already match `config.licensed`."""
    from django.test import override_settings

    options = replace(SearchOptions(workspace=workspace, top_k=RANKED), **config.changes)
    scores: dict[str, list[dict[str, float]]] = {kind: [] for kind in KINDS}
    for question in questions:
        with override_settings(**config.settings):
            results = search(question["question"], options)
        if (results.canonical_filtering == UNLICENSED) == config.licensed and options.respect_canonicals:
            raise RuntimeError(f"{config.name}: canonical filtering {results.canonical_filtering!r}: "
                               f"the workspace's license does not match the configuration")
        kind = question_kind(question)
        scores[kind].append(SCORERS[kind](question, results))
        if on_results:
            on_results(question, results)
    return {kind: summarise(kind, kind_scores) for kind, kind_scores in scores.items()}


def evaluate_configs(
    workspace: Workspace, questions: Sequence[dict], configs: Sequence[Config] | None = None, *,
    on_results: Callable[[Config, dict, Sequence[SearchResult]], None] | None = None,
) -> dict[str, dict[str, dict[str, float]]]:
    """Every configuration's figures, licensed ones first, so that the license is removed once, at the end.

    The grant is taken back before the Free pass, so a Free pass sees no tier at all.
    """
    configs = ablation_configs() if configs is None else configs
    figures: dict[str, dict[str, dict[str, float]]] = {}
    for licensed in (True, False):
        batch = [config for config in configs if config.licensed == licensed]
        if not batch:
            continue
        eval_license_set(workspace=workspace, licensed=licensed)
        for config in batch:
            hook = (lambda q, r, c=config: on_results(c, q, r)) if on_results else None
            figures[config.name] = evaluate(workspace, questions, config, on_results=hook)
    return {config.name: figures[config.name] for config in configs}


# --- printing ---------------------------------------------------------------------------------

_COLUMNS = {
    "current": [("hit@5", "hit@5", ".3f"), ("answer@5", "newest@5", ".3f"), ("mrr@10", "MRR@10", ".3f"),
                ("stale", "stale", ".3f"), ("stale_questions", "q stale", "d")],
    "version": [("accuracy", "accuracy", ".3f"), ("found@5", "found@5", ".3f"), ("wrong", "wrong", ".3f"),
                ("wrong_questions", "q wrong", "d")],
    "change": [("accuracy", "accuracy", ".3f"), ("old", "old side", ".3f"), ("new", "new side", ".3f")],
}
_SUMMARY = [("current", "answer@5", "newest@5"), ("current", "stale", "stale"),
            ("version", "accuracy", "version acc"), ("change", "accuracy", "change acc")]


def _table(title: str, header: list[str], rows: list[list[str]]) -> list[str]:
    widths = [max(len(header[0]), *(len(row[0]) for row in rows))] + [max(len(h), 6) for h in header[1:]]
    line = lambda cells: " ".join(  # noqa: E731
        [cells[0].ljust(widths[0])] + [cell.rjust(width) for cell, width in zip(cells[1:], widths[1:])]
    )
    return ["", title, line(header), "-" * len(line(header)), *(line(row) for row in rows)]


def format_tables(title: str, figures: dict[str, dict[str, dict[str, float]]]) -> str:
    """A side-by-side summary, then one table per question kind."""
    names = list(figures)
    first = figures[names[0]]
    counts = ", ".join(f"{kind} {first[kind]['questions']}" for kind in KINDS)
    lines = [f"{title}: questions {counts}; top_k {RANKED}"]

    def cell(kind: str, key: str, fmt: str, name: str) -> str:
        value = figures[name][kind].get(key)
        return "-" if value is None else format(value, fmt)

    lines += _table("summary", ["configuration"] + [label for _, _, label in _SUMMARY],
                    [[name] + [cell(kind, key, ".3f", name) for kind, key, _ in _SUMMARY] for name in names])
    for kind in KINDS:
        if not first[kind]["questions"]:
            continue
        columns = _COLUMNS[kind]
        lines += _table(f"{kind} questions ({first[kind]['questions']})",
                        ["configuration"] + [label for _, label, _ in columns],
                        [[name] + [cell(kind, key, fmt, name) for key, _, fmt in columns] for name in names])
    return "\n".join(lines)
