"""Do questions find the right release's page in an export pile? (issue 50)

    python benchmarks/eval_export_search.py --piles var/exports [--project scrapy ...] [--encoder hashing|minilm]
        [--json OUT.json]

Each pile demo/variants/exports.py writes is indexed into its own workspace of this benchmark's DATA_DIR
(var/bench/export-search; BENCH_EXPORT_SEARCH_DATA_DIR moves it) as eval_release_variants.py indexes a variant
(in-process, merged, a rerun skips unchanged files; a rebuilt pile starts a new workspace), then its
ground_truth.json questions (demo/variants/pile_questions.py) are asked, per project and per export form of the
page that answers:

- current questions: newest@5 (the newest release's page stating the new value in the top 5) through the full
  pipeline and through plain semantic search, and stale (the share of top-5 results stating an older value);
- questions naming an older release: hit@5 (the asked release's page in the top 5) and leakage (the share of
  top-5 results stating the newest release's value).

Targets (issue 50): newest@5 >= 0.90 and >= plain + 0.05, stale <= 0.02; hit@5 >= 0.90, leakage <= 0.05. The
hashing encoder is the default (quick); the targets are stated for MiniLM.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

from _setup import ROOT, django_setup, machine_load

DATA_DIR = Path(os.environ.get("BENCH_EXPORT_SEARCH_DATA_DIR", ROOT / "var" / "bench" / "export-search"))
FIGURES = (("current", "newest@5"), ("current", "plain newest@5"), ("current", "stale"),
           ("naming a release", "hit@5"), ("naming a release", "leakage"))


def pile_measure(folder: Path, *, encoder: str) -> dict[str, Any]:
    """Index the pile and ask its questions, grouped by the export form of the page that answers."""
    from eval_release_variants import current_figures, release_question_figures, variant_workspace_slug
    from evaluation.retrieval import eval_license_set, eval_workspace_prepare, release_paths_widen

    listing = json.loads((folder / "files.json").read_text(encoding="utf-8"))
    slug = variant_workspace_slug(f"ex-{folder.name}-{encoder}", folder)
    workspace, indexed = eval_workspace_prepare(corpus=folder / "corpus", slug=slug, name=f"Export pile {folder.name}")
    eval_license_set(workspace=workspace, licensed=True)
    questions = release_paths_widen(json.loads((folder / "ground_truth.json").read_text(encoding="utf-8")),
                                    {name: entry["release"] for name, entry in listing.items()})
    groups: dict[str, list[dict]] = defaultdict(list)
    for question in questions:
        entry = listing[question["expected_path"]]
        groups[f"{entry['form']} ({entry['release']})"].append(question)
        groups["all"].append(question)
    figures: dict[str, Any] = {"indexed": indexed["indexed"]}
    for group, asked in sorted(groups.items()):
        current = [question for question in asked if question["kind"] == "current"]
        naming = [question for question in asked if question["kind"] == "version"]
        figures[group] = {
            "current": current_figures(workspace, current) if current else {},
            "naming a release": {key: value for key, value in release_question_figures(
                workspace, naming, details=False).items() if key != "per question"} if naming else {},
        }
    return figures


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    parser.add_argument("--piles", type=Path, default=ROOT / "var" / "exports")
    parser.add_argument("--project", action="append")
    parser.add_argument("--encoder", default="hashing", choices=["hashing", "minilm"])
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    django_setup(encoder=args.encoder, data_dir=DATA_DIR)
    sys.path.insert(0, str(ROOT))
    projects = args.project or sorted(p.name for p in args.piles.iterdir() if (p / "ground_truth.json").exists())
    results = {}
    for project in projects:
        results[project] = found = pile_measure(args.piles / project, encoder=args.encoder)
        print(f"{project}: indexed {found['indexed']}", flush=True)
        for group, figures in found.items():
            if group == "indexed":
                continue
            counts = f"{figures['current'].get('questions', 0)} current, " \
                     f"{figures['naming a release'].get('questions', 0)} naming a release"
            cells = []
            for section, key in FIGURES:
                value = figures[section].get(key)
                cells.append(f"{key} {'-' if value is None else f'{value:.3f}'}")
            print(f"  {group:18} ({counts}): " + "  ".join(cells), flush=True)
    print(f"(encoder {args.encoder}; {machine_load()} at the end)")
    if args.json:
        args.json.write_text(json.dumps({"encoder": args.encoder, "results": results}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
