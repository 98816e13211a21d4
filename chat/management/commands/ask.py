"""`manage.py ask ["QUESTION"] --workspace SLUG [--json] [--queries-file FILE]`."""

from __future__ import annotations

import json
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from chat.answering import Answer, answer
from chat.models import default_search_options
from rag import embeddings
from rag.models import Workspace
from rag.retrieval import SearchOptionError


def _public(result: Answer) -> dict:
    keys = ("n", "chunk_id", "document_id", "path", "document_title", "doc_date", "relevance", "sentence_ids",
            "variant_count", "has_contradictions", "role")
    citations = []
    for citation in result.citations:
        entry = {key: citation.get(key) for key in keys}
        entry["title"] = entry.pop("document_title")
        citations.append(entry)
    data = {"answer": result.text, "mode": result.mode, "notice": result.notice, "abstained": result.abstained,
            "citations": citations, "asked_as": result.asked_as, "read_as": result.read_as}
    if result.abstained:
        # The nearest sources, for a reader to look at: not citations, since they do not answer.
        data["closest_matches"] = [{"title": c["document_title"], "path": c["path"], "chunk_id": c["chunk_id"],
                                    "document_id": c["document_id"], "relevance": c["relevance"]}
                                   for c in result.closest]
    return data


class Command(BaseCommand):
    help = "Answer questions from a workspace's documents, with citations."

    def add_arguments(self, parser) -> None:
        parser.add_argument("question", nargs="?", help="the question (or use --queries-file)")
        parser.add_argument("--workspace", required=True, help="workspace slug")
        parser.add_argument("--json", action="store_true", dest="as_json", help="print JSON (JSON Lines with --queries-file)")
        parser.add_argument("--queries-file", type=Path, help="one question per line")

    def handle(self, *args, question: str | None, workspace: str, as_json: bool, queries_file: Path | None, **options) -> None:
        if bool(question) == bool(queries_file):
            raise CommandError("give either a question or --queries-file")
        try:
            target = Workspace.objects.get(slug=workspace)
        except Workspace.DoesNotExist:
            raise CommandError(f"no workspace with slug {workspace!r}") from None
        if queries_file:
            try:
                questions = [line.strip() for line in queries_file.read_text().splitlines() if line.strip()]
            except OSError as exc:
                raise CommandError(f"cannot read {queries_file}: {exc.strerror}") from None
        else:
            questions = [question]
        embeddings.query_warm_up()  # before the first question, so that none of them waits for it
        for asked in questions:
            try:
                result = answer(asked, workspace=target, options=default_search_options())
            except SearchOptionError as exc:
                raise CommandError(str(exc)) from None
            self._print(asked, result, as_json=as_json, many=bool(queries_file))

    def _print(self, asked: str, result: Answer, *, as_json: bool, many: bool) -> None:
        data = _public(result)
        if as_json:
            if many:
                data = {"question": asked, **data}
            self.stdout.write(json.dumps(data, indent=None if many else 2, ensure_ascii=False))
            return
        if many:
            self.stdout.write(f"Q: {asked}")
        if result.notice:
            self.stdout.write(f"({result.notice})")
        if result.read_as:
            self.stdout.write(f"(read as: {result.read_as})")
        self.stdout.write(result.text)
        for citation in data["citations"]:
            date = (citation["doc_date"] or "undated")[:10]
            self.stdout.write(f"  [{citation['n']}] {citation['title']} ({date}) {citation['path']}")
        if data.get("closest_matches"):
            self.stdout.write("  Closest matches (they do not answer it):")
            for match in data["closest_matches"]:
                self.stdout.write(f"  - {match['title']} {match['path']}")
        if many:
            self.stdout.write("")

