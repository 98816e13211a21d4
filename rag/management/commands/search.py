"""`manage.py search ["QUERY"] --workspace SLUG [...]`: the command-line face of rag.retrieval.search.

Contract (kept stable, other tools drive it): give the query or --queries-file
(one query per line; the model is loaded once for all of them). --json prints
one JSON object per query: on one line per query, in order, with
--queries-file (JSON Lines).
"""

from __future__ import annotations

import json
import sys
import textwrap
from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser
from pydantic import ValidationError

from rag import embeddings
from rag.models import Workspace
from rag.retrieval import (
    DOC_TYPE_MODES,
    MODES,
    RECENCY_MODES,
    SearchOptionError,
    SearchParams,
    SearchResult,
    SearchResultSet,
    search,
    validation_message,
)


class Command(BaseCommand):
    help = "Search a workspace: hybrid (semantic + full text), canonical-aware, newest version first."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("query", nargs="?", help="the query (or use --queries-file)")
        parser.add_argument("--workspace", required=True, help="workspace slug")
        parser.add_argument("--top-k", type=int, default=5, help="results per query (default 5)")
        parser.add_argument("--json", action="store_true", help="print JSON (JSON Lines with --queries-file)")
        parser.add_argument("--queries-file", type=Path, help="one query per line; blank lines are skipped")
        parser.add_argument("--include-variants", action="store_true",
                            help="show older versions beside their canonical (no canonical-aware collapse)")
        parser.add_argument("--no-dedup", action="store_true", help="keep near-duplicates from different documents")
        parser.add_argument("--mode", choices=MODES, default="hybrid")
        parser.add_argument("--created-after", metavar="DATE",
                            help="only documents dated (doc_date) on or after DATE (YYYY-MM-DD)")
        parser.add_argument("--doc-type", action="append", default=[], metavar="TYPE",
                            help="boost this doc type instead of the one guessed from the query (repeatable)")
        parser.add_argument("--doc-type-mode", choices=DOC_TYPE_MODES, default="boost",
                            help="what --doc-type does: boost (rank it higher, default) or filter (only it)")
        filters = parser.add_argument_group("more filters")
        filters.add_argument("--date-from", metavar="DATE", help="doc_date on or after DATE")
        filters.add_argument("--date-to", metavar="DATE", help="doc_date before DATE")
        filters.add_argument("--when", metavar="PHRASE", help='"last 7 days", "this month", "since 2024", ...')
        filters.add_argument("--only-doc-type", action="append", default=[], metavar="TYPE",
                             help="only documents of this type (repeatable)")
        filters.add_argument("--source-type", action="append", default=[], metavar="TYPE")
        filters.add_argument("--tag", action="append", default=[])
        filters.add_argument("--tags-match", choices=("any", "all"), default="any")
        filters.add_argument("--entity", action="append", default=[])
        filters.add_argument("--entities-match", choices=("any", "all"), default="any")
        filters.add_argument("--include-archived", action="store_true")
        more = parser.add_argument_group("more options")
        more.add_argument("--variant-metadata", action="store_true", help="list each result's other versions")
        more.add_argument("--provenance", action="store_true", help="every version and contradiction per result")
        more.add_argument("--recency", choices=RECENCY_MODES, default=None,
                          help="recency decay: auto (trend queries only), on, off (default: SEARCH_RECENCY)")
        more.add_argument("--pool", type=int, help="candidates per list before fusion")
        versions = parser.add_argument_group("versions")
        versions.add_argument("--as-of-version", metavar="LABEL",
                              help="answer from the versions current at this version label (e.g. 2.1)")
        versions.add_argument("--as-of-date", metavar="DATE",
                              help="answer from the versions current on DATE (YYYY-MM-DD, the whole day)")
        versions.add_argument("--no-version-aware", action="store_true",
                              help="let superseded passages compete with their newer counterparts")

    def handle(self, *args, **opts) -> None:
        queries = self._queries(opts)
        try:
            workspace = Workspace.objects.get(slug=opts["workspace"])
        except Workspace.DoesNotExist:
            raise CommandError(f"no workspace with slug {opts['workspace']!r}") from None
        params = {
            "top_k": opts["top_k"], "mode": opts["mode"], "pool": opts["pool"],
            "include_variants": opts["include_variants"], "dedup": not opts["no_dedup"],
            "created_after": opts["created_after"], "date_from": opts["date_from"], "date_to": opts["date_to"],
            "when": opts["when"], "doc_type": opts["doc_type"], "only_doc_type": opts["only_doc_type"],
            "doc_type_mode": opts["doc_type_mode"],
            "source_type": opts["source_type"], "tag": opts["tag"], "tags_match": opts["tags_match"],
            "entity": opts["entity"], "entities_match": opts["entities_match"],
            "include_archived": opts["include_archived"], "variant_metadata": opts["variant_metadata"],
            "provenance": opts["provenance"], "recency": opts["recency"],
            "as_of_version": opts["as_of_version"], "as_of_date": opts["as_of_date"],
            "version_aware": not opts["no_version_aware"],
        }
        try:
            chosen = SearchParams.model_validate({k: v for k, v in params.items() if v is not None})
        except ValidationError as exc:
            raise CommandError(validation_message(exc.errors())[1]) from None
        options = chosen.search_options(workspace=workspace)
        if opts["mode"] != "lexical":
            embeddings.query_warm_up()  # loaded once, before the first query, for all of them
        for query in queries:
            try:
                results = search(query, options)
            except SearchOptionError as exc:
                raise CommandError(f"{query!r}: {exc}") from None
            if opts["json"]:
                self.stdout.write(json.dumps({"workspace": workspace.slug, **results.to_dict(base_url=settings.PUBLIC_URL)}, ensure_ascii=False))
            else:
                self._print(results)

    def _queries(self, opts: dict) -> list[str]:
        if bool(opts["query"]) == bool(opts["queries_file"]):
            raise CommandError("give either a query or --queries-file")
        if opts["query"]:
            return [opts["query"]]
        source = opts["queries_file"]
        try:
            text = sys.stdin.read() if str(source) == "-" else source.read_text(encoding="utf-8")
        except OSError as exc:
            raise CommandError(f"cannot read {source}: {exc.strerror or exc}") from None
        return [line.strip() for line in text.splitlines() if line.strip()]

    def _print(self, results: SearchResultSet) -> None:
        stats = results.stats
        self.stdout.write(self.style.MIGRATE_HEADING(f"{results.query}"))
        notes = [f"{len(results)} result(s)", f"canonical filtering {results.canonical_filtering}",
                 f"semantic {stats.get('semantic_path', '-')}", f"{stats['duration_ms']:.0f} ms"]
        if stats["doc_types_boosted"]:
            notes.append("boosting " + ", ".join(stats["doc_types_boosted"]))
        if stats["recency"]:
            notes.append("recency on")
        self.stdout.write("  " + "; ".join(notes))
        for rank, result in enumerate(results, start=1):
            date = result.doc_date.date().isoformat() if result.doc_date else "undated"
            flags = []
            if result.variant_count:
                flags.append(f"{result.variant_count} older version(s)")
            if result.has_contradictions:
                flags.append("contradictions pending")
            if result.is_variant:
                flags.append("older version")
            if result.version_label:
                flags.append(_version_note(result))
            where = result.path + (f" > {result.heading_path}" if result.heading_path else "")
            self.stdout.write(f"{rank:>3}. {result.score:.3f}  {date}  [{result.doc_type or '-'}]  {where}")
            if flags:
                self.stdout.write("       " + "; ".join(flags))
            snippet = textwrap.shorten(result.text, width=220, placeholder=" …")
            self.stdout.write(textwrap.indent(textwrap.fill(snippet, width=100), "       "))
        self.stdout.write("")


def _version_note(result: SearchResult) -> str:
    """As the chat sources say it: "3.0 · current", "2.1 · superseded by 3.0", "2.1 · only in 2.1"."""
    if result.lineage == "retired":
        return f"{result.version_label} · only in {result.version_label}"
    if result.lineage == "superseded":
        return f"{result.version_label} · superseded" + (f" by {result.superseded_by_label}"
                                                         if result.superseded_by_label else "")
    # "current" only within a family, as in the chat: a document with no other versions is just labelled.
    current = result.is_latest_version and result.family_id is not None
    return f"{result.version_label} · current" if current else result.version_label
