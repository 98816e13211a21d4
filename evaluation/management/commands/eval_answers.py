"""`make eval` and `make eval-real`, second half: answer quality per configuration (evaluation.answers).

Takes the same arguments as `eval_demo` (the corpus is indexed the same way, unchanged
files skipped), plus the off-topic questions that should be abstained on: those the answer floor was
calibrated on, and a held-out set scored beside them. On the demo corpus, then, the follow-ups and typo
questions of demo/followups.json and demo/typos.json (evaluation.followups).
"""

from __future__ import annotations

import json
import logging
from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand

from chat.answering import Answer
from evaluation.answers import (CONFIGS, evaluate_answers, format_answer_table, malformed_quotes, nonsense,
                                raw_markup, score_answer)
from evaluation.followups import evaluate_in_conversation, format_in_conversation
from evaluation.inputs import ROOT, eval_arguments_add, eval_corpus_index, eval_questions_load
from evaluation.retrieval import eval_license_set
from rag import embeddings


class Command(BaseCommand):
    help = "Answer quality on an evaluation corpus: accuracy, citation, abstention, length."

    def add_arguments(self, parser) -> None:
        eval_arguments_add(parser, title="Demo corpus")
        parser.add_argument("--off-topic", type=Path, default=ROOT / "demo" / "off_topic.json",
                            help="JSON list of questions no document answers (2,000 characters of nonsense are added)")
        parser.add_argument("--held-out", type=Path, default=ROOT / "demo" / "off_topic_heldout.json",
                            help="JSON list of off-topic questions the answer floor was never calibrated on")
        parser.add_argument("--details", action="store_true", help="print every full-pipeline answer")
        parser.add_argument("--config", action="append", choices=[name for name, _ in CONFIGS],
                            help="only this configuration (repeatable; default: all)")

    def handle(self, *args, corpus: Path | None, ground_truth: Path, off_topic: Path, held_out: Path, workspace: str,
               title: str, **opts) -> None:
        questions = eval_questions_load(ground_truth=ground_truth, releases=opts["releases"])
        off = [*json.loads(off_topic.read_text(encoding="utf-8")), nonsense()]
        if opts["verbosity"] < 2:
            logging.disable(logging.INFO)
        settings.LLM_BASE_URL = ""  # the extractive answerer is what is measured
        _corpus, target, indexed = eval_corpus_index(corpus=corpus, workspace=workspace, title=title)
        self.stderr.write(f"indexing: {indexed}")
        embeddings.query_warm_up()
        configs = [config for config in CONFIGS if not opts["config"] or config[0] in opts["config"]]
        progress = None if opts["json"] else (
            lambda name, values: self.stderr.write(format_answer_table(title, {name: values})))
        held = json.loads(held_out.read_text(encoding="utf-8")) if held_out.exists() else []
        figures = evaluate_answers(target, questions, off, held_out=held, configs=configs, on_config=progress,
                                   on_answer=self._details if opts["details"] else None)
        conversation = {}
        if corpus is None:  # the sets are written on the demo corpus
            eval_license_set(workspace=target, licensed=True)
            conversation = evaluate_in_conversation(target, on_answer=self._conversation_details if opts["details"]
                                                    else None)
        if opts["json"]:
            self.stdout.write(json.dumps({"title": title, "answers": figures, "conversation": conversation}, indent=2))
            return
        self.stdout.write(format_answer_table(title, figures))
        if conversation:
            self.stdout.write(format_in_conversation(conversation))

    def _conversation_details(self, item: dict, result: Answer) -> None:
        asked = result.asked_as or result.read_as or item.get("follow_up") or item["question"]
        self.stdout.write(f"{item['id']}: {asked}\n  {'ABSTAINED ' if result.abstained else ''}{result.text[:300]}")

    def _details(self, config: str, question: dict, result: Answer) -> None:
        if config != "full pipeline":
            return
        wrong = question.get("id") != "off-topic" and not score_answer(question, result)["accurate"]
        mark = ("ABSTAINED " if result.abstained else "") + ("WRONG " if wrong else "")
        self.stdout.write(f"{question['id']}: {question['question']}\n  {mark}{result.text}")
        for problem in malformed_quotes(result):
            self.stdout.write(f"  MALFORMED {problem}")
        for problem in raw_markup(result):
            self.stdout.write(f"  MARKUP {problem}")
