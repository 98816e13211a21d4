#!/usr/bin/env python3
"""Build the real-documents evaluation corpus: four Sphinx releases' own documentation, flattened.

Usage (from the repository root; `make eval-real` runs it):

    python demo/real/build_corpus.py [--out var/real-corpus]

Why Sphinx: its sdists ship the documentation sources, and its configuration
defaults and sphinx-build behaviour change between releases, each change
recorded in `versionchanged` directives and the changelog.

What it does, reusing what a previous run left in OUT:

1. `pip download --no-deps --no-binary :all: sphinx==X` for each release into
   OUT/sdists (skipped when the sdist is there).
2. Takes the same subset from each sdist (usage guides, man pages, FAQ,
   glossary, LaTeX guide, the changelog) and writes it flat into OUT/corpus
   under version-hiding names: a hash of release and path, then the original
   base name (`3f9c0e12ab-configuration.rst`), as a real pile keeps names
   but not folders. Each file keeps the mtime its tar member carries; nothing
   else is added. The root changelog `CHANGES` (no extension up to 6.2, which
   the docs include as reStructuredText) is written as `CHANGES.rst`.
3. Checks demo/real/ground_truth.json against the texts and fails loudly:
   every pattern of every entry is found in that release's file (all of an
   entry's patterns within WINDOW characters), a question's answer is not
   stated by any other release's file it lists, and no listed other-release
   value is stated by the answer's file.
4. Writes OUT/ground_truth.json (paths replaced by the flattened names, for
   `manage.py eval_demo`) and OUT/files.json (flattened name -> release,
   source path, mtime).

Ground-truth entries name files as `path` (inside the sdist) and `version`
(a release below). Patterns are lower-case regexes matched against the text
lower-cased with whitespace collapsed. They must match both the raw reST and
the text Docent's parser extracts (roles and directive markup stripped), so
they use `\\W*` or short `.{0,n}` gaps where markup may sit.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import subprocess
import sys
import tarfile
from collections.abc import Callable, Sequence
from fnmatch import fnmatch
from pathlib import Path
from typing import NoReturn

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
PROJECT = "sphinx"
RELEASES = {"5.3": "5.3.0", "6.2": "6.2.1", "7.4": "7.4.7", "8.1": "8.1.3"}
SUBSET = (
    "doc/usage/*.rst", "doc/usage/*/*.rst", "doc/usage/*/*/*.rst", "doc/man/*.rst", "doc/faq.rst",
    "doc/glossary.rst", "doc/latex.rst", "doc/changes/*.rst", "CHANGES", "CHANGES.rst",
)
RENAMED = {"CHANGES": "CHANGES.rst"}
KINDS = ("current", "version", "change")
WINDOW = 1200  # characters: an entry's patterns must sit this close, as in one chunk


class CorpusError(Exception):
    """Something the corpus or its ground truth gets wrong; the message says what."""


def sdist_download(*, project: str, release: str, cache: Path) -> Path:
    """A project release's sdist in `cache`, downloaded once (the large corpus' builder uses it too)."""
    cache.mkdir(parents=True, exist_ok=True)
    pattern = f"{project}-{release}.tar.gz"
    found = [path for path in cache.iterdir() if path.name.lower() == pattern]
    if not found:
        subprocess.run(
            [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--no-binary", ":all:",
             f"{project}=={release}", "-d", str(cache)],
            check=True,
        )
        found = [path for path in cache.iterdir() if path.name.lower() == pattern]
    if not found:
        raise CorpusError(f"pip download left no {pattern} in {cache}")
    return found[0]


def sdist_fetch(*, release: str, cache: Path, version: str = "") -> Path:
    """The release's sdist, downloaded once; `version` names a release outside RELEASES (benchmarks use more)."""
    return sdist_download(project=PROJECT, release=version or RELEASES[release], cache=cache)


def flat_name(release: str, path: str) -> str:
    digest = hashlib.sha256(f"{PROJECT} {release} {path}".encode()).hexdigest()[:10]
    return f"{digest}-{Path(path).name}"


def sdist_extract(*, release: str, sdist: Path) -> dict[str, tuple[bytes, int]]:
    """The subset's files as {path inside the sdist: (bytes, mtime)}."""
    files: dict[str, tuple[bytes, int]] = {}
    with tarfile.open(sdist) as tar:
        for member in tar.getmembers():
            path = member.name.split("/", 1)[1] if "/" in member.name else ""
            if member.isfile() and any(fnmatch(path, pattern) for pattern in SUBSET):
                files[RENAMED.get(path, path)] = (tar.extractfile(member).read(), int(member.mtime))
    if not files:
        raise CorpusError(f"{sdist.name}: none of {SUBSET} found")
    return files


def corpus_write(*, out: Path, texts: dict[tuple[str, str], tuple[bytes, int]]) -> dict[str, dict]:
    """Write the flat folder (only what changed), drop files no longer in it; returns the file list."""
    corpus = out / "corpus"
    corpus.mkdir(parents=True, exist_ok=True)
    listing: dict[str, dict] = {}
    for (release, path), (data, mtime) in sorted(texts.items()):
        name = flat_name(release, path)
        target = corpus / name
        if not target.exists() or target.read_bytes() != data:
            target.write_bytes(data)
        if int(target.stat().st_mtime) != mtime:
            os.utime(target, (mtime, mtime))
        listing[name] = {"release": RELEASES[release], "version": release, "path": path, "mtime": mtime}
    for stray in corpus.iterdir():
        if stray.name not in listing:
            stray.unlink()
    return listing


# --- ground truth -----------------------------------------------------------------------------

def _normalized(data: bytes) -> str:
    return " ".join(data.decode("utf-8").lower().split())


def _unescaped(pattern: str) -> str:
    """The pattern without its escapes (`\\W`), which may be upper-case."""
    return re.sub(r"\\[A-Z]", "", pattern)


def _states(text: str, patterns: list[str]) -> bool:
    """All patterns found, each within WINDOW characters of some match of the first."""
    anchors = [m.start() for m in re.finditer(patterns[0], text)]
    return any(
        all(any(abs(m.start() - anchor) <= WINDOW for m in re.finditer(p, text)) for p in patterns[1:])
        for anchor in anchors
    )


def ground_truth_check(
    questions: list[dict], texts: dict[tuple[str, str], str], *, releases: Sequence[str] = tuple(RELEASES),
) -> list[str]:
    """Every problem found: a pattern that matches nothing, or matches a release it should not.

    `texts` maps (release, path) to the normalised text; `releases` lists the releases oldest first
    (the large corpus' builder passes its own).
    """
    problems: list[str] = []
    order = list(releases)

    def text_of(entry: dict, where: str) -> str | None:
        key = (entry.get("version", ""), entry.get("path", ""))
        if key not in texts:
            problems.append(f"{where}: no file {key[1]!r} in release {key[0]!r}")
            return None
        return texts[key]

    def must_state(entry: dict, where: str) -> None:
        patterns = entry.get("patterns") or []
        if not patterns or any(_unescaped(p) != _unescaped(p).lower() for p in patterns):
            problems.append(f"{where}: patterns must be a non-empty list of lower-case regexes")
            return
        text = text_of(entry, where)
        if text is None:
            return
        try:
            missing = [pattern for pattern in patterns if not re.search(pattern, text)]
        except re.error as exc:
            problems.append(f"{where}: bad regex in {patterns}: {exc}")
            return
        for pattern in missing:
            problems.append(f"{where}: {pattern!r} matches nothing in {entry['version']}:{entry['path']}")
        if not missing and not _states(text, patterns):
            problems.append(f"{where}: patterns {patterns} not within {WINDOW} characters in {entry['path']}")

    def must_not_state(entry: dict, other: dict, where: str) -> None:
        text = text_of(other, where)
        if text is not None and entry.get("patterns") and _states(text, entry["patterns"]):
            problems.append(f"{where}: {entry['version']}'s value {entry['patterns']} is also stated by "
                            f"{other['version']}:{other['path']}")

    seen: set[str] = set()
    for question in questions:
        qid, kind = question.get("id", "?"), question.get("kind", "current")
        if qid in seen:
            problems.append(f"{qid}: duplicate id")
        seen.add(qid)
        if kind == "change":
            sides = question.get("sides", [])
            if len(sides) != 2 or sides[0].get("version") not in order or sides[1].get("version") not in order:
                problems.append(f"{qid}: a change question needs two sides of known releases")
                continue
            if order.index(sides[0]["version"]) >= order.index(sides[1]["version"]):
                problems.append(f"{qid}: sides must go from the older release to the newer")
            for index, side in enumerate(sides):
                must_state(side, f"{qid} sides[{index}]")
            continue
        answer = {"path": question.get("expected_path"), "version": question.get("version"),
                  "patterns": question.get("answer_patterns")}
        must_state(answer, f"{qid} answer")
        others = question.get("outdated" if kind == "current" else "other_versions", [])
        named = answer["version"] in question.get("question", "")
        if kind == "version" and (question.get("as_of") != answer["version"] or not named):
            problems.append(f"{qid}: as_of must equal version and be named in the question")
        for index, other in enumerate(others):
            where = f"{qid} {'outdated' if kind == 'current' else 'other_versions'}[{index}]"
            if other.get("version") == answer["version"]:
                problems.append(f"{where}: same release as the answer")
            if kind == "current" and other.get("version") in order and answer["version"] in order and (
                order.index(other["version"]) >= order.index(answer["version"])
            ):
                problems.append(f"{where}: an outdated entry must be older than the answer")
            must_state(other, where)
            must_not_state(answer, other, where)
            must_not_state(other, answer, f"{where} (reversed)")
    return problems


def script_exit(main: Callable[[], int]) -> NoReturn:
    """Run a builder's main: its status, or the CorpusError's message without a traceback."""
    try:
        sys.exit(main())
    except CorpusError as exc:
        sys.exit(f"error: {exc}")


def problems_report(problems: list[str], *, where: str) -> int:
    """Print what the check found, one line each; the exit status of a failed build."""
    print(f"FAILED: {len(problems)} problem(s) in {where}", file=sys.stderr)
    for problem in problems:
        print(f"  - {problem}", file=sys.stderr)
    return 1


def ground_truth_resolve(questions: list[dict]) -> list[dict]:
    """The same questions with flattened file names, as the evaluation reads them."""
    def flat(entry: dict) -> dict:
        return {**entry, "path": flat_name(entry["version"], entry["path"])}

    resolved = []
    for question in questions:
        question = dict(question)
        if "expected_path" in question:
            question["expected_path"] = flat_name(question["version"], question["expected_path"])
        for key in ("outdated", "other_versions", "sides"):
            if key in question:
                question[key] = [flat(entry) for entry in question[key]]
        resolved.append(question)
    return resolved


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, default=ROOT / "var" / "real-corpus")
    parser.add_argument("--ground-truth", type=Path, default=HERE / "ground_truth.json")
    args = parser.parse_args()
    out: Path = args.out.resolve()

    files: dict[tuple[str, str], tuple[bytes, int]] = {}
    for release in RELEASES:
        sdist = sdist_fetch(release=release, cache=out / "sdists")
        for path, content in sdist_extract(release=release, sdist=sdist).items():
            files[(release, path)] = content
    listing = corpus_write(out=out, texts=files)
    per_release = {release: sum(1 for r, _ in files if r == release) for release in RELEASES}
    size = sum(len(data) for data, _ in files.values())
    print(f"corpus: {len(listing)} files, {size / 1e6:.1f} MB in {out / 'corpus'}; per release {per_release}")

    questions = json.loads(args.ground_truth.read_text(encoding="utf-8"))
    texts = {key: _normalized(data) for key, (data, _) in files.items()}
    problems = ground_truth_check(questions, texts)
    kinds = {kind: sum(q.get("kind", "current") == kind for q in questions) for kind in KINDS}
    print(f"questions: {len(questions)} {kinds}")
    if problems:
        return problems_report(problems, where=str(args.ground_truth))
    (out / "ground_truth.json").write_text(json.dumps(ground_truth_resolve(questions), indent=2) + "\n")
    (out / "files.json").write_text(json.dumps(listing, indent=2) + "\n")
    print(f"OK: every pattern found in its release and in none it should not be; wrote {out / 'ground_truth.json'}")
    return 0


if __name__ == "__main__":
    script_exit(main)
