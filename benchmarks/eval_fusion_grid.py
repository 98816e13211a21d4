#!/usr/bin/env python3
"""Tune fusion and ranking settings on BOTH evaluation corpora in one process, against one index.

    DATA_DIR=var/eval-ranking python benchmarks/eval_fusion_grid.py [--only NAME ...]

Expects the workspaces `eval` (demo, `make eval`) and `eval-real` (`make eval-real`) already
indexed in DATA_DIR (run both make targets with the same EVAL_DATA_DIR / EVAL_REAL_DATA_DIR).
Prints, per variant, hit@5 / MRR@10 / newest@5 / stale on the current questions and version /
change accuracy, for both corpora side by side, so no setting is chosen on one corpus alone.
Variants are settings overrides and search option changes over today's defaults.
"""

from __future__ import annotations

import argparse
import functools
import json
import logging
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

import django  # noqa: E402

from config.embedded import services_start  # noqa: E402

services_start()
django.setup()

from django.conf import settings  # noqa: E402

from evaluation.inputs import release_of  # noqa: E402
from evaluation.retrieval import Config, evaluate, eval_license_set, release_paths_widen  # noqa: E402
from rag import embeddings  # noqa: E402
from rag.models import Workspace  # noqa: E402

CORPORA = {
    "demo": ("eval", ROOT / "demo" / "ground_truth.json", ROOT / "demo" / "manifest.json"),
    "real": ("eval-real", ROOT / "var" / "real-corpus" / "ground_truth.json", ROOT / "var" / "real-corpus" / "files.json"),
}


def weights(**changes: float) -> dict:
    return {"RRF_WEIGHTS": {**settings.RRF_WEIGHTS, **changes}}


def variants() -> list[Config]:
    off = {"identifiers": False, "rerank": False, "expansion": False}
    return [
        Config("before (no identifiers, no rerank)", off),
        Config("plain semantic", {"mode": "semantic", "respect_canonicals": False, "dedup": False,
                                  "doc_type_boost": 1.0, "recency": "off", "version_aware": False,
                                  "analyse_query": False, **off}),
        Config("full (defaults)"),
        Config("no identifiers", {"identifiers": False}),
        Config("no rerank", {"rerank": False}),
        Config("no heading boost", settings={"IDENTIFIER_HEADING_BOOST": 1.0}),
        Config("no doc-type boost", {"doc_type_boost": 1.0}),
        Config("no recency", {"recency": "off"}),
        Config("no full-text lexical", settings=weights(lexical=0.0)),
        Config("rerank w0.5", settings={"RERANK_SENTENCE_WEIGHT": 0.5}),
        Config("rerank w2", settings={"RERANK_SENTENCE_WEIGHT": 2.0}),
        Config("rerank depth 15", settings={"RERANK_DEPTH": 15}),
        Config("lexical w0.5", settings=weights(lexical=0.5)),
        Config("lexical w0.25", settings=weights(lexical=0.25)),
        Config("recency auto", {"recency": "auto"}),
        Config("lexical w0", settings=weights(lexical=0.0)),
        Config("identifiers w2", settings=weights(identifiers=2.0)),
        Config("identifiers w0.5", settings=weights(identifiers=0.5)),
        Config("k 20", settings={"RRF_K": 20}),
        Config("k 120", settings={"RRF_K": 120}),
        Config("heading boost 1.25", settings={"IDENTIFIER_HEADING_BOOST": 1.25}),
    ]


def figures(result: dict) -> dict:
    current, version, change = result["current"], result["version"], result["change"]
    return {"hit@5": current.get("hit@5"), "mrr@10": current.get("mrr@10"), "newest@5": current.get("answer@5"),
            "stale": current.get("stale"), "version": version.get("accuracy"), "change": change.get("accuracy")}


def cost(workspace, questions: list[dict], rounds: int = 3) -> dict:
    """p50/p95 of search with identifiers, expansion and rerank on and off, query vectors encoded beforehand.

    Alternating on/off per question and round; each question's fastest run counts (the machine is shared).
    """
    import numpy as np
    from dataclasses import replace

    from rag.retrieval import SearchOptions, search

    base = SearchOptions(workspace=workspace, top_k=10)
    vectors = {q["question"]: tuple(embeddings.encode_query(q["question"])) for q in questions}
    best: dict[bool, list[float]] = {True: [], False: []}
    for question in questions:
        runs: dict[bool, list[float]] = {True: [], False: []}
        for _ in range(rounds):
            for on in (True, False):
                options = replace(base, query_embedding=vectors[question["question"]])
                if not on:
                    options = replace(options, identifiers=False, expansion=False, rerank=False)
                started = time.perf_counter()
                search(question["question"], options)
                runs[on].append((time.perf_counter() - started) * 1000)
        for on in (True, False):
            best[on].append(min(runs[on]))
    figures = {}
    for on in (True, False):
        figures["on" if on else "off"] = {"p50_ms": round(float(np.percentile(best[on], 50)), 2),
                                          "p95_ms": round(float(np.percentile(best[on], 95)), 2)}
    figures["p50_ratio"] = round(figures["on"]["p50_ms"] / figures["off"]["p50_ms"], 3)
    figures["p95_ratio"] = round(figures["on"]["p95_ms"] / figures["off"]["p95_ms"], 3)
    return figures


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--only", nargs="*", help="variant names to run (default: all)")
    parser.add_argument("--json", type=Path, help="also write the figures here")
    parser.add_argument("--cost", action="store_true",
                        help="instead: search latency with the new stages on and off, alternating, per corpus")
    parser.add_argument("--corpora", nargs="*", default=list(CORPORA), choices=list(CORPORA))
    args = parser.parse_args()
    logging.disable(logging.INFO)
    embeddings.get_encoder()
    # Every variant asks the same questions: encode each once (search reads the module attribute).
    embeddings.encode_query = functools.lru_cache(maxsize=None)(embeddings.encode_query)
    loaded = {}
    for corpus in args.corpora:
        slug, truth, releases = CORPORA[corpus]
        workspace = Workspace.objects.get(slug=slug)
        questions = json.loads(truth.read_text())
        questions = release_paths_widen(questions, release_of(json.loads(releases.read_text())))
        eval_license_set(workspace=workspace, licensed=True)
        loaded[corpus] = (workspace, questions)
    if args.cost:
        for corpus, (workspace, questions) in loaded.items():
            print(corpus, cost(workspace, questions), flush=True)
        return
    chosen = [v for v in variants() if not args.only or v.name in args.only]
    table = {}
    for variant in chosen:
        row = {}
        for corpus, (workspace, questions) in loaded.items():
            started = time.perf_counter()
            row[corpus] = figures(evaluate(workspace, questions, variant))
            row[corpus]["seconds"] = round(time.perf_counter() - started, 1)
        table[variant.name] = row
        cells = "  ".join(
            f"{corpus}: hit {row[corpus]['hit@5']:.3f} mrr {row[corpus]['mrr@10']:.3f} new {row[corpus]['newest@5']:.3f} "
            f"stale {row[corpus]['stale']:.3f} ver {row[corpus]['version']:.3f} chg {row[corpus]['change']:.3f} "
            f"({row[corpus]['seconds']}s)"
            for corpus in loaded
        )
        print(f"{variant.name:38s} {cells}", flush=True)
    if args.json:
        args.json.write_text(json.dumps(table, indent=2))


if __name__ == "__main__":
    main()
