"""`make eval` and `make eval-real`, second half: answer quality per configuration (chat.evaluation).

Takes the same arguments as `eval_demo` (the corpus is indexed the same way, unchanged
files skipped), plus the off-topic questions that should be abstained on.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path

from django.conf import settings
from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandError

from chat.answering import Answer
from chat.evaluation import CONFIGS, evaluate_answers, format_answer_table, malformed_quotes, nonsense
from rag import embeddings
from rag.evaluation import eval_workspace_prepare, release_paths_widen
from rag.management.commands.eval_demo import _release_of

ROOT = Path(settings.BASE_DIR)


class Command(BaseCommand):
    help = "Answer quality on an evaluation corpus: accuracy, citation, abstention, length."

    def add_arguments(self, parser) -> None:
        parser.add_argument("--corpus", type=Path, help="default: demo/corpus, with the manifest's dates applied")
        parser.add_argument("--ground-truth", type=Path, default=ROOT / "demo" / "ground_truth.json")
        parser.add_argument("--off-topic", type=Path, default=ROOT / "demo" / "off_topic.json",
                            help="JSON list of questions no document answers (2,000 characters of nonsense are added)")
        parser.add_argument("--workspace", default="eval")
        parser.add_argument("--title", default="Demo corpus")
        parser.add_argument("--releases", type=Path, default=ROOT / "demo" / "manifest.json")
        parser.add_argument("--json", action="store_true", help="print the figures as one JSON object")
        parser.add_argument("--details", action="store_true", help="print every full-pipeline answer")
        parser.add_argument("--config", action="append", choices=[name for name, _ in CONFIGS],
                            help="only this configuration (repeatable; default: all)")

    def handle(self, *args, corpus: Path | None, ground_truth: Path, off_topic: Path, workspace: str, title: str,
               **opts) -> None:
        if not ground_truth.exists():
            raise CommandError(f"no ground truth at {ground_truth}")
        questions = json.loads(ground_truth.read_text(encoding="utf-8"))
        if opts["releases"] is not None and opts["releases"].exists():
            questions = release_paths_widen(questions, _release_of(json.loads(opts["releases"].read_text())))
        off = [*json.loads(off_topic.read_text(encoding="utf-8")), nonsense()]
        if opts["verbosity"] < 2:
            logging.disable(logging.INFO)
        settings.LLM_BASE_URL = ""  # the extractive answerer is what is measured
        call_command("migrate", interactive=False, verbosity=0)
        if corpus is None:
            from rag.bootstrap import demo_corpus_prepare

            corpus = demo_corpus_prepare()
        elif not corpus.is_dir():
            raise CommandError(f"no corpus folder at {corpus}")
        target, indexed = eval_workspace_prepare(corpus=corpus, slug=workspace, name=title)
        self.stderr.write(f"indexing: {indexed}")
        embeddings.get_encoder()
        configs = [config for config in CONFIGS if not opts["config"] or config[0] in opts["config"]]
        progress = None if opts["json"] else (
            lambda name, values: self.stderr.write(format_answer_table(title, {name: values})))
        figures = evaluate_answers(target, questions, off, configs=configs, on_config=progress,
                                   on_answer=self._details if opts["details"] else None)
        if opts["json"]:
            self.stdout.write(json.dumps({"title": title, "answers": figures}, indent=2))
            return
        self.stdout.write(format_answer_table(title, figures))

    def _details(self, config: str, question: dict, result: Answer) -> None:
        if config != "full pipeline":
            return
        mark = "ABSTAINED " if result.abstained else ""
        self.stdout.write(f"{question['id']}: {question['question']}\n  {mark}{result.text}")
        for problem in malformed_quotes(result):
            self.stdout.write(f"  MALFORMED {problem}")
