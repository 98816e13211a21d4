"""`make eval`: retrieval quality on the demo corpus, the full pipeline against each feature switched off.

Indexes demo/corpus into the workspace `eval` (in-process; unchanged files are
skipped on a rerun), rebuilds its canonical records, gives it an Enterprise
license, then runs every question of demo/ground_truth.json through each
configuration and prints:

- hit@5: a top-5 result comes from the expected document;
- answer@5: a top-5 result from the expected document states the answer (all its answer_patterns);
- MRR@10: mean of 1 / rank of the first result from the expected document (0 past rank 10);
- stale: stale-version leakage, the share of all top-5 results that come from an
  older version of the expected document (`outdated[].path`) and state its outdated
  fact (all of `outdated[].patterns`); "q stale" counts the questions with any such result.

Patterns match the text lower-cased with whitespace collapsed, as substrings or as
regexes (demo/README.md).

Run it with DATA_DIR=var/eval (the Makefile does), so it never touches a real instance.
Paths in the ground truth are relative to demo/corpus; documents store absolute
paths, so they are matched by suffix.
"""

from __future__ import annotations

import json
import logging
import re
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandError

from rag import embeddings
from rag.models import IndexingJob, Workspace
from rag.retrieval import SearchOptions, search

ROOT = Path(settings.BASE_DIR)


@dataclass(frozen=True)
class Config:
    name: str
    changes: dict[str, Any]


CONFIGS = [
    Config("full pipeline", {}),
    Config("plain semantic", {"mode": "semantic", "respect_canonicals": False, "dedup": False,
                              "doc_type_boost": 1.0, "recency": "off"}),
    Config("no canonicals", {"respect_canonicals": False}),
    Config("no near-dup collapse", {"dedup": False}),
    Config("no doc-type boost", {"doc_type_boost": 1.0}),
    Config("no recency", {"recency": "off"}),
]


def _normalized(text: str) -> str:
    return " ".join(text.lower().split())


def _states(text: str, patterns: list[str]) -> bool:
    """Every pattern appears in the text (lower-cased, whitespace collapsed), as a substring or a regex."""
    if not patterns:
        return False
    normalized = _normalized(text)
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


def _suffix_match(path: str, expected: str) -> bool:
    path = path.replace("\\", "/")
    expected = expected.replace("\\", "/").lstrip("./")
    return path == expected or path.endswith("/" + expected)


class Command(BaseCommand):
    help = "Retrieval quality on the demo corpus: hit@5, MRR@10, stale-version leakage, per feature switched off."

    def add_arguments(self, parser) -> None:
        parser.add_argument("--corpus", type=Path, help="default: demo/corpus, with the manifest's dates applied")
        parser.add_argument("--ground-truth", type=Path, default=ROOT / "demo" / "ground_truth.json")
        parser.add_argument("--workspace", default="eval")
        parser.add_argument("--json", action="store_true", help="print the figures as one JSON object")
        parser.add_argument("--details", action="store_true", help="print each question's top 5 for the full pipeline")

    def handle(self, *args, corpus: Path | None, ground_truth: Path, workspace: str, **opts) -> None:
        if not ground_truth.exists():
            raise CommandError(f"no ground truth at {ground_truth}")
        questions = json.loads(ground_truth.read_text(encoding="utf-8"))
        if isinstance(questions, dict):
            questions = questions.get("questions", [])
        if opts["verbosity"] < 2:
            logging.disable(logging.INFO)  # one log line per document and per search would bury the table
        if settings.EMBEDDING_ENCODER == "hashing":
            self.stderr.write("warning: EMBEDDING_ENCODER=hashing; figures mean nothing without the real model")
        self.stderr.write(f"DATA_DIR {settings.DATA_DIR}")
        call_command("migrate", interactive=False, verbosity=0)
        if corpus is None:
            from rag.bootstrap import demo_corpus_prepare

            corpus = demo_corpus_prepare()  # dateless .txt files get their intended mtimes
        target = self._prepare(corpus, workspace)

        embeddings.get_encoder()  # loaded once, before the first question
        vectors = {q["id"]: tuple(embeddings.encode_query(q["question"])) for q in questions}
        table = []
        for config in CONFIGS:
            figures = self._evaluate(target, questions, vectors, config, details=opts["details"] and not table)
            table.append((config.name, figures))
        if opts["json"]:
            self.stdout.write(json.dumps({name: figures for name, figures in table}, indent=2))
            return
        self._print_table(table, len(questions))

    # --- setup --------------------------------------------------------------------------------

    def _prepare(self, corpus: Path, slug: str) -> Workspace:
        from celery import current_app

        from licensing.features import RETRIEVAL_INTEGRATION
        from licensing.models import License, LicenseTier
        from licensing.services import has_feature, license_save
        from rag.dedup.merge import workspace_merge
        from rag.services import indexing_job_create, job_item_run

        target, _ = Workspace.objects.get_or_create(slug=slug, defaults={"name": "Evaluation"})
        # Merges queued by indexing run here and now: there is no worker to take them.
        current_app.conf.task_always_eager = True
        job = indexing_job_create(workspace=target, paths=[corpus], source=IndexingJob.Source.DEMO, enqueue=False)
        statuses: dict[str, int] = {}
        for item_id in job.items.order_by("pk").values_list("pk", flat=True):
            status = job_item_run(item_id=item_id)
            statuses[status] = statuses.get(status, 0) + 1
        merged = workspace_merge(workspace_id=target.pk)
        self.stderr.write(
            f"indexed {dict(sorted(statuses.items()))}; records created {merged.records_created}, "
            f"changed {merged.records_changed}; contradictions raised {merged.contradictions_raised}"
        )
        if not has_feature(target.pk, RETRIEVAL_INTEGRATION):
            license_save(
                license=License(workspace=target, tier=LicenseTier.objects.get(slug="enterprise"),
                                issued_to="make eval", notes="granted by manage.py eval_demo"),
                actor_label="eval_demo",
            )
        return target

    # --- measuring ----------------------------------------------------------------------------

    def _evaluate(self, target: Workspace, questions: list[dict], vectors: dict, config: Config, *,
                  details: bool) -> dict[str, float]:
        hits = answers = 0
        reciprocal_ranks = 0.0
        stale_results = top5_results = stale_questions = 0
        base = SearchOptions(workspace=target, top_k=10)
        for question in questions:
            options = replace(base, query_embedding=vectors[question["id"]], **config.changes)
            results = search(question["question"], options)
            expected = question["expected_path"]
            top5 = list(results)[:5]
            from_expected = [_suffix_match(r.path, expected) for r in results]
            hits += any(from_expected[:5])
            answers += any(ok and _states(r.text, question.get("answer_patterns", []))
                           for r, ok in zip(top5, from_expected))
            first = next((rank for rank, ok in enumerate(from_expected[:10], start=1) if ok), None)
            reciprocal_ranks += 1 / first if first else 0.0
            leaking = 0
            for result in top5:
                for outdated in question.get("outdated", []):
                    if _suffix_match(result.path, outdated["path"]) and _states(
                        result.text, outdated.get("patterns", [])
                    ):
                        leaking += 1
                        break
            stale_results += leaking
            top5_results += len(top5)
            stale_questions += leaking > 0
            if details:
                self._print_details(question, top5, expected)
        count = max(len(questions), 1)
        return {
            "hit@5": hits / count,
            "answer@5": answers / count,
            "mrr@10": reciprocal_ranks / count,
            "stale": stale_results / max(top5_results, 1),
            "stale_questions": stale_questions,
        }

    def _print_details(self, question: dict, top5: list, expected: str) -> None:
        self.stdout.write(f"{question['id']}: {question['question']}  (expected {expected})")
        for rank, result in enumerate(top5, start=1):
            mark = "*" if _suffix_match(result.path, expected) else " "
            date = result.doc_date.date().isoformat() if result.doc_date else "undated"
            where = f"{Path(result.path).name} > {result.heading_path}"
            self.stdout.write(f"   {mark}{rank}. {result.score:.3f} {date} {where}")

    def _print_table(self, table: list[tuple[str, dict]], questions: int) -> None:
        self.stdout.write(f"\nDemo corpus retrieval, {questions} questions (top_k 10)\n")
        header = f"{'configuration':<22} {'hit@5':>6} {'answer@5':>9} {'MRR@10':>7} {'stale':>6} {'q stale':>8}"
        self.stdout.write(header)
        self.stdout.write("-" * len(header))
        for name, f in table:
            self.stdout.write(
                f"{name:<22} {f['hit@5']:>6.3f} {f['answer@5']:>9.3f} {f['mrr@10']:>7.3f} {f['stale']:>6.3f} "
                f"{f['stale_questions']:>8d}"
            )
