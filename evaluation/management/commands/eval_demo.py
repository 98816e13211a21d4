"""`make eval` and `make eval-real`: retrieval quality per configuration and question kind (evaluation.retrieval).

Indexes the corpus into its own workspace (in-process; unchanged files are
skipped on a rerun), merges it, then runs every question of the ground
truth through each configuration of `evaluation.retrieval.ablation_configs()`: licensed ones
with an Enterprise license, then "Free tier" on the same index with the
workspace's licenses deleted. Prints a summary and a table per question kind.

Without --corpus it evaluates demo/corpus (the manifest's dates applied);
`make eval-real` passes the corpus built by demo/real/build_corpus.py.
Run it with its own DATA_DIR (the Makefile does), so it never touches a real instance.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand

from rag import embeddings
from evaluation.retrieval import (
    ablation_configs,
    Config,
    evaluate_configs,
    format_tables,
    path_matches,
)
from evaluation.doctypes import doc_type_accuracy, doc_type_truth, format_doc_type_table
from evaluation.inputs import ROOT, eval_arguments_add, eval_corpus_index, eval_questions_load
from rag.retrieval import SearchResult

class Command(BaseCommand):
    help = "Retrieval quality on an evaluation corpus: newest-version hit, stale leakage, version and change questions."

    def add_arguments(self, parser) -> None:
        eval_arguments_add(parser, title="Demo corpus retrieval")
        parser.add_argument("--details", action="store_true", help="print each question's top 5 for the full pipeline")
        parser.add_argument("--doc-types", type=Path, default=ROOT / "demo" / "real" / "doc_types.json",
                            help="hand-labelled document types by source path, for a corpus whose --releases "
                                 "listing carries none (the manifest carries its own)")

    def handle(self, *args, corpus: Path | None, ground_truth: Path, workspace: str, title: str, **opts) -> None:
        questions = eval_questions_load(ground_truth=ground_truth, releases=opts["releases"])
        if opts["verbosity"] < 2:
            logging.disable(logging.INFO)  # one log line per document and per search would bury the table
        if settings.EMBEDDING_ENCODER == "hashing":
            self.stderr.write("warning: EMBEDDING_ENCODER=hashing; figures mean nothing without the real model")
        self.stderr.write(f"DATA_DIR {settings.DATA_DIR}")
        corpus, target, indexed = eval_corpus_index(corpus=corpus, workspace=workspace, title=title)
        self.stderr.write(f"indexing: {indexed}")

        embeddings.query_warm_up()  # loaded once, before the first question
        configs = ablation_configs()
        self._first = configs[0]
        figures = evaluate_configs(target, questions, configs, on_results=self._details if opts["details"] else None)
        if opts["json"]:
            self.stdout.write(json.dumps({"title": title, "configurations": figures}, indent=2))
            return
        self.stdout.write(format_tables(title, figures))
        self._doc_types(corpus, title, opts)

    def _doc_types(self, corpus: Path, title: str, opts: dict) -> None:
        listing = json.loads(opts["releases"].read_text()) if opts["releases"] and opts["releases"].exists() else {}
        labels = json.loads(opts["doc_types"].read_text())["labels"] if opts["doc_types"].exists() else {}
        truth = doc_type_truth(listing, labels)
        if truth:
            self.stdout.write(format_doc_type_table(title, doc_type_accuracy(corpus=corpus, truth=truth)))

    def _details(self, config: Config, question: dict, results: Sequence[SearchResult]) -> None:
        """The full pipeline's top 5; `*` marks a result from a document the question expects."""
        if config is not self._first:
            return
        expected = [question["expected_path"]] if "expected_path" in question else [
            side["path"] for side in question["sides"]]
        self.stdout.write(f"{question['id']}: {question['question']}  (expected {', '.join(expected)})")
        for rank, result in enumerate(list(results)[:5], start=1):
            mark = "*" if any(path_matches(result.path, path) for path in expected) else " "
            date = result.doc_date.date().isoformat() if result.doc_date else "undated"
            where = f"{Path(result.path).name} [{result.version_label or '-'}] > {result.heading_path}"
            self.stdout.write(f"   {mark}{rank}. {result.score:.3f} {date} {where}")
