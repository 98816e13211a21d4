#!/usr/bin/env python3
"""How often an unlabelled file's inferred release is its true one, on the scale corpus (issue 29).

Usage (from the repository root, after `demo/scale/build_corpus.py`):

    python benchmarks/eval_release_inference.py [--corpus var/scale-corpus]

Parses every file as indexing does (title, version label, version directives, date), groups the
files into batches as `rag.releases.inference` does (same folder and file date) and runs the
same decision, without a database or an encoder: the figure is the share of files without a label
of their own whose inferred release series is the one files.json records, per project and release.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections import Counter, defaultdict
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

import django  # noqa: E402

django.setup()

from django.conf import settings  # noqa: E402

from rag.parsers import parse_document  # noqa: E402
from rag.releases.calendar import series_label  # noqa: E402
from rag.releases.labels import extract_version_label  # noqa: E402
from rag.releases.inference import _later_claims, batch_key, batch_release  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", type=Path, default=ROOT / "var" / "scale-corpus")
    args = parser.parse_args()
    files = json.loads((args.corpus / "files.json").read_text())
    rows, batches = {}, defaultdict(list)
    for name in sorted(files):
        path = args.corpus / "corpus" / name
        try:
            parsed = parse_document(path, path.read_bytes())
        except Exception as exc:  # noqa: BLE001 - a file indexing would fail is left out, and counted
            print(f"unparsed {name}: {exc}", file=sys.stderr)
            continue
        label = extract_version_label(path=str(path), title=parsed.title, metadata=parsed.metadata,
                                      doc_format=parsed.format)
        truth = files[name]
        row = {"name": name, "title": parsed.title, "version_label": label.label if label else "",
               # the family stand-in: the same (project, path) across releases (lineage's purity is 0.97)
               "family_id": hash((truth["project"], truth["path"])),
               "directives": [entry.get("version", "") for entry in parsed.metadata.get("version_directives", [])]}
        rows[name] = row
        key = batch_key(str(path), datetime.fromtimestamp(path.stat().st_mtime, tz=UTC), "mtime")
        batches[key].append(row)
    score: Counter = Counter()
    wrong: Counter = Counter()
    decided = _later_claims({key: guess for key, members in batches.items()
                             if len(members) >= settings.RELEASE_BATCH_MIN_SIZE and (guess := batch_release(members))},
                            batches)
    for key, members in batches.items():
        guess = decided.get(key)
        for row in members:
            truth = files[row["name"]]
            where = (truth["project"], truth["version"])
            if row["version_label"]:
                score[(*where, "labelled")] += 1
                continue
            got = (guess.label or f"after {guess.after}") if guess else ""
            score[(*where, "right" if got == series_label(truth["version"]) else "wrong")] += 1
            if got != series_label(truth["version"]):
                wrong[(*where, got, guess.source if guess else "none")] += 1
    right = sum(count for key, count in score.items() if key[2] == "right")
    unlabelled = right + sum(count for key, count in score.items() if key[2] == "wrong")
    print(f"release inference on {args.corpus}: {len(rows)} files, {unlabelled} without a label of their own")
    for project, version in sorted({key[:2] for key in score}):
        r, w, lab = (score[(project, version, kind)] for kind in ("right", "wrong", "labelled"))
        print(f"  {project} {version}: {r}/{r + w} right ({lab} labelled by their own title or metadata)")
    for (project, version, got, source), count in wrong.most_common(10):
        print(f"  wrong: {count} of {project} {version} inferred {got or 'nothing'} ({source})")
    print(f"accuracy {right / max(unlabelled, 1):.3f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
