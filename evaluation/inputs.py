"""What every evaluation command reads (`eval_demo`, chat's `eval_answers`): one corpus, one way."""

from __future__ import annotations

import json
from argparse import ArgumentParser
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management import call_command
from django.core.management.base import CommandError

from evaluation.retrieval import eval_workspace_prepare, release_paths_widen
from rag.bootstrap import demo_corpus_prepare
from rag.models import Workspace

ROOT = Path(settings.BASE_DIR)


def eval_arguments_add(parser: ArgumentParser, *, title: str) -> None:
    parser.add_argument("--corpus", type=Path, help="default: demo/corpus, with the manifest's dates applied")
    parser.add_argument("--ground-truth", type=Path, default=ROOT / "demo" / "ground_truth.json")
    parser.add_argument("--workspace", default="eval")
    parser.add_argument("--title", default=title)
    parser.add_argument("--releases", type=Path, default=ROOT / "demo" / "manifest.json",
                        help="JSON of the corpus files' releases (a manifest list or a {path: {version}} map)")
    parser.add_argument("--json", action="store_true", help="print the figures as one JSON object")


def release_of(listing: Any) -> dict[str, str]:
    """path -> release, from demo/manifest.json ({"files": [...]}) or a real corpus's files.json ({path: entry})."""
    if isinstance(listing, dict):
        listing = listing["files"] if "files" in listing else [{**entry, "path": path} for path, entry in listing.items()]
    return {entry["path"]: str(entry["version"]) for entry in listing if entry.get("version")}


def eval_questions_load(*, ground_truth: Path, releases: Path | None) -> list[dict]:
    """The ground truth, version and change questions widened to every document of their release."""
    if not ground_truth.exists():
        raise CommandError(f"no ground truth at {ground_truth}")
    questions = json.loads(ground_truth.read_text(encoding="utf-8"))
    if releases is not None and releases.exists():
        questions = release_paths_widen(questions, release_of(json.loads(releases.read_text())))
    return questions


def eval_corpus_index(*, corpus: Path | None, workspace: str, title: str) -> tuple[Path, Workspace, dict[str, Any]]:
    """Migrate, then index the corpus (the demo's by default) into its own workspace; unchanged files are skipped."""
    call_command("migrate", interactive=False, verbosity=0)
    if corpus is None:
        corpus = demo_corpus_prepare()  # dateless .txt files get their intended mtimes
    elif not corpus.is_dir():
        raise CommandError(f"no corpus folder at {corpus}")
    target, indexed = eval_workspace_prepare(corpus=corpus, slug=workspace, name=title)
    return corpus, target, indexed
