"""The real corpus's stand-in for `run_all.py --smoke`: no download, the same layout, a few files.

    python benchmarks/_smoke_corpus.py --out var/bench/smoke-corpus

`make bench` builds (or reuses) var/real-corpus with demo/real/build_corpus.py, which downloads four
Sphinx releases; the suite's smoke run must not need the network. This writes what that builder leaves
(`corpus/`, flat version-hiding names, mtimes kept, and `files.json`) from two demo pages in two or
three releases each, so that the scripts reading the real corpus go through the same build-or-reuse step and the same
reading of its folder, at a size that takes seconds.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# Releases of the user guide and the configuration reference (families, supersession), and pages beside them:
# enough text for bench_search's smallest run.
PAGES = [("2.0", "v2.0/user-guide.html"), ("2.1", "user_guide_2.1.rst"), ("3.0", "docs/user-guide-3.0.md"),
         ("2.0", "archive/configuration-reference-2.0.txt"), ("3.0", "configuration-reference-v3.rst"),
         ("2.0", "v2.0/install-guide.md"), ("2.1", "release-notes/release-notes-2.1.md"),
         ("3.0", "release-notes/RELEASE_NOTES_3.0.txt")]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, required=True)
    out = parser.parse_args().out.resolve()
    corpus = out / "corpus"
    corpus.mkdir(parents=True, exist_ok=True)
    listing = {}
    for version, path in PAGES:
        source = ROOT / "demo" / "corpus" / path
        name = f"{hashlib.sha256(f'{version}/{path}'.encode()).hexdigest()[:10]}-{Path(path).name}"
        (corpus / name).write_bytes(source.read_bytes())
        mtime = int(source.stat().st_mtime)
        os.utime(corpus / name, (mtime, mtime))
        listing[name] = {"version": version, "path": path, "mtime": mtime}
    (out / "files.json").write_text(json.dumps(listing, indent=2) + "\n")
    print(f"smoke corpus: {len(listing)} files in {corpus}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
