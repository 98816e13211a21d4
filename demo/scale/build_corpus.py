#!/usr/bin/env python3
"""Build the large real corpus: several releases of three projects' own documentation, flattened.

Usage (from the repository root; `make eval-scale` runs it):

    python demo/scale/build_corpus.py [--out var/scale-corpus] [--no-questions]

Why these: the PyPI sdists of Django, Celery and Flask ship their documentation
sources (reStructuredText; Django's as .txt), and settings, defaults and
supported versions change between their releases, each change written in
`versionchanged` directives and release notes. Four Django releases, three of
Celery and three of Flask give ~3,100 files, the size of the pile Docent is
meant for, with the same page present in up to four releases.

What it does, reusing what a previous run left in OUT:

1. `pip download --no-deps --no-binary :all: NAME==X` for each release into
   OUT/sdists (skipped when the sdist is there), checked against its sha256.
2. Takes each sdist's documentation tree (minus build helpers and files that
   carry the release's version as metadata) and writes it flat into OUT/corpus
   under names that hide project and release: a hash of project, release and
   path, then the original base name (`3f9c0e12ab-settings.txt`). Every file
   of a release gets the release's date as its mtime (the newest mtime in the
   sdist's documentation tree, i.e. when the release was packaged), nothing
   else: no release or project in a name, a folder or metadata, so only dates
   and the release notes inside the corpus tell a page's release (issue 29).
3. Checks that no file states a version in its metadata (a reST `:version:` or
   `:revnumber:` field, frontmatter `version:`), then both frozen question sets
   against the texts (see `questions_check`), and fails loudly.
4. Writes OUT/files.json (flattened name -> project, release, version,
   path, date: the family ground truth, the same (project, path) across
   releases being one document), OUT/ingest_order.txt (names, oldest release
   first), and per question set OUT/heldout/ and OUT/older/ with the
   `ground_truth.json` (and `off_topic.json`) that `eval_demo` / `eval_answers`
   read.

Question files (demo/scale/heldout_questions.json, older_release_questions.json)
use the format of demo/real/ground_truth.json, plus `project` on each question
and "off_topic" entries (kind "off_topic", a question only). Version labels are
unique across the three projects, so a (version, path) pair names one file.
"""

from __future__ import annotations

import argparse
import datetime as dt
import hashlib
import json
import os
import re
import sys
import tarfile
from fnmatch import fnmatch
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
sys.path.insert(0, str(ROOT))  # run as a script: the Sphinx builder's checker is imported from the repository

from demo.real.build_corpus import (  # noqa: E402
    CorpusError,
    _normalized,
    _states,
    ground_truth_check,
    problems_report,
    script_exit,
    sdist_download,
)

# project -> {version label: (release on PyPI, sha256 of its sdist)}; labels are unique across projects.
PROJECTS: dict[str, dict[str, tuple[str, str]]] = {
    "django": {
        "2.2": ("2.2.28", "0200b657afbf1bc08003845ddda053c7641b9b24951e52acd51f6abda33a7413"),
        "3.2": ("3.2.25", "7ca38a78654aee72378594d63e51636c04b8e28574f5505dff630895b5472777"),
        "4.2": ("4.2.16", "6f1616c2786c408ce86ab7e10f792b8f15742f7b7b7460243929cb371e7f1dad"),
        "5.1": ("5.1.4", "de450c09e91879fa5a307f696e57c851955c910a438a35e6b4c895e86bedc82a"),
    },
    "celery": {
        "5.2": ("5.2.7", "fafbd82934d30f8a004f81e8f7a062e31413a23d444be8ee3326553915958c6d"),
        "5.3": ("5.3.6", "870cc71d737c0200c397290d730344cc991d13a057534353d124c9380267aab9"),
        "5.4": ("5.4.0", "504a19140e8d3029d5acad88330c541d4c3f64c789d85f94756762d8bca7e706"),
    },
    "flask": {
        "2.0": ("2.0.3", "e1120c228ca2f553b470df4a5fa927ab66258467526069981b3eb0a91902687d"),
        "2.3": ("2.3.3", "09c347a92aa7ff4a8e7f3206795f30d826654baf38b873d0744cd571ca609efc"),
        "3.0": ("3.0.3", "ceb27b0af3823ea2737928a4d99d125a06175b8512c445cbd9a9ce200ef76842"),
    },
}
VERSIONS = [version for releases in PROJECTS.values() for version in releases]  # each project oldest first
PROJECT_OF = {version: project for project, releases in PROJECTS.items() for version in releases}
SUBSET = ("docs/*.txt", "docs/*.rst")  # fnmatch: `*` crosses folders
EXCLUDE = (
    "docs/_*", "docs/*/_*",  # Sphinx extensions, themes, templates
    "docs/requirements*.txt", "docs/*/requirements*.txt",  # pip requirements, not documentation
    "docs/includes/introduction.txt",  # Celery's: its first line is `:Version: 5.4.0 (opalescent)`
)
_METADATA_VERSION = re.compile(
    r"^:(?:version|revnumber):[ \t]*\S|\A---\n(?:.*\n)*?version:[ \t]*\S", re.IGNORECASE | re.MULTILINE,
)  # a reST docinfo field anywhere, a `version:` only in frontmatter
QUESTION_SETS = {"heldout": HERE / "heldout_questions.json", "older": HERE / "older_release_questions.json"}


def sdist_fetch(*, project: str, version: str, cache: Path) -> Path:
    """The release's sdist, downloaded once and checked against its pinned sha256."""
    release, sha256 = PROJECTS[project][version]
    sdist = sdist_download(project=project, release=release, cache=cache)
    digest = hashlib.sha256(sdist.read_bytes()).hexdigest()
    if digest != sha256:
        raise CorpusError(f"{sdist.name}: sha256 {digest}, expected {sha256}")
    return sdist


def flat_name(project: str, version: str, path: str) -> str:
    digest = hashlib.sha256(f"{project} {version} {path}".encode()).hexdigest()[:10]
    return f"{digest}-{Path(path).name}"


def sdist_extract(*, sdist: Path) -> tuple[dict[str, bytes], int]:
    """The documentation files as {path inside the sdist: bytes}, and the release's date (epoch seconds)."""
    files: dict[str, bytes] = {}
    newest = 0
    with tarfile.open(sdist) as tar:
        for member in tar.getmembers():
            path = member.name.split("/", 1)[1] if "/" in member.name else ""
            if not member.isfile() or not any(fnmatch(path, pattern) for pattern in SUBSET):
                continue
            newest = max(newest, int(member.mtime))
            if not any(fnmatch(path, pattern) for pattern in EXCLUDE):
                files[path] = tar.extractfile(member).read()
    if not files:
        raise CorpusError(f"{sdist.name}: none of {SUBSET} found")
    return files, newest


def metadata_versions(texts: dict[tuple[str, str], bytes]) -> list[str]:
    """Files whose metadata names a version: what would tell a page's release besides its date."""
    return [f"{version}:{path}: {match.group(0)!r}" for (version, path), data in sorted(texts.items())
            for match in [_METADATA_VERSION.search(data.decode("utf-8", "replace"))] if match]


def corpus_write(*, out: Path, texts: dict[tuple[str, str], bytes], dates: dict[str, int]) -> dict[str, dict]:
    """Write the flat folder (only what changed), drop files no longer in it; returns the file list."""
    corpus = out / "corpus"
    corpus.mkdir(parents=True, exist_ok=True)
    listing: dict[str, dict] = {}
    for (version, path), data in sorted(texts.items()):
        project = PROJECT_OF[version]
        name = flat_name(project, version, path)
        target = corpus / name
        if not target.exists() or target.read_bytes() != data:
            target.write_bytes(data)
        if int(target.stat().st_mtime) != dates[version]:
            os.utime(target, (dates[version], dates[version]))
        listing[name] = {
            "project": project, "release": PROJECTS[project][version][0], "version": version, "path": path,
            "date": dt.datetime.fromtimestamp(dates[version], dt.UTC).isoformat(),
        }
    for stray in corpus.iterdir():
        if stray.name not in listing:
            stray.unlink()
    return listing


# --- questions --------------------------------------------------------------------------------

def _stated_by(entry: dict, texts: dict[tuple[str, str], str], version: str) -> bool:
    text = texts.get((version, entry["path"]))
    return text is not None and _states(text, entry["patterns"])


def questions_check(questions: list[dict], texts: dict[tuple[str, str], str], *, older: bool) -> list[str]:
    """Every problem of a question set: the Sphinx corpus' checks, plus what a set at scale must hold.

    - every question names its project, and its releases are that project's;
    - a version question's fact belongs to its release: the same page of every other release of the
      project states something else or does not exist;
    - `older` (issue 29) instead: the asked release is not the project's newest and the newest release's
      page, listed among `other_versions`, states a different fact (what "in 3.2" asks is what the 3.2
      docs said, which later releases may repeat).
    """
    answerable = [q for q in questions if q.get("kind") != "off_topic"]
    problems = ground_truth_check(answerable, texts, releases=VERSIONS)
    for question in questions:
        qid, kind = question.get("id", "?"), question.get("kind", "current")
        if kind == "off_topic":
            if not question.get("question"):
                problems.append(f"{qid}: an off-topic entry needs its question")
            continue
        project = question.get("project")
        if project not in PROJECTS:
            problems.append(f"{qid}: project {project!r} is not one of {sorted(PROJECTS)}")
            continue
        entries = [*question.get("sides", []), *question.get("outdated", []), *question.get("other_versions", [])]
        if "version" in question:
            entries.append({"version": question["version"]})
        for entry in entries:
            if PROJECT_OF.get(entry.get("version")) != project:
                problems.append(f"{qid}: release {entry.get('version')!r} is not a {project} release")
        if kind != "version":
            if older:
                problems.append(f"{qid}: the older-release set holds version questions only")
            continue
        newest = list(PROJECTS[project])[-1]
        listed = {entry.get("version") for entry in question.get("other_versions", [])}
        if older and (question["version"] == newest or newest not in listed):
            problems.append(f"{qid}: an older-release question asks before {newest} and lists {newest}'s fact")
        if older:
            continue  # "in 3.2" is what the 3.2 docs said, though 4.2's may say the same (issue 29)
        answer = {"path": question["expected_path"], "patterns": question["answer_patterns"]}
        for version in PROJECTS[project]:
            if version != question["version"] and _stated_by(answer, texts, version):
                problems.append(f"{qid}: {version}:{answer['path']} states the {question['version']} fact too")
    return problems


def questions_resolve(questions: list[dict]) -> tuple[list[dict], list[str]]:
    """(the answerable questions with flattened file names, the off-topic questions), as the evaluation reads them."""
    def flat(project: str, entry: dict) -> dict:
        return {**entry, "path": flat_name(project, entry["version"], entry["path"])}

    resolved, off_topic = [], []
    for question in questions:
        if question.get("kind") == "off_topic":
            off_topic.append(question["question"])
            continue
        question = dict(question)
        project = question["project"]
        if "expected_path" in question:
            question["expected_path"] = flat_name(project, question["version"], question["expected_path"])
        for key in ("outdated", "other_versions", "sides"):
            if key in question:
                question[key] = [flat(project, entry) for entry in question[key]]
        resolved.append(question)
    return resolved, off_topic


def question_sets_write(*, out: Path, texts: dict[tuple[str, str], str]) -> list[str]:
    """Check both frozen sets and write what the evaluation reads; returns the problems (nothing written then)."""
    problems: list[str] = []
    checked: dict[str, list[dict]] = {}
    for name, source in QUESTION_SETS.items():
        questions = json.loads(source.read_text(encoding="utf-8"))
        found = questions_check(questions, texts, older=name == "older")
        problems += [f"{source.name}: {problem}" for problem in found]
        kinds: dict[str, int] = {}
        for question in questions:
            kinds[question.get("kind", "current")] = kinds.get(question.get("kind", "current"), 0) + 1
        print(f"{source.name}: {len(questions)} questions {dict(sorted(kinds.items()))}")
        checked[name] = questions
    if problems:
        return problems
    for name, questions in checked.items():
        resolved, off_topic = questions_resolve(questions)
        (out / name).mkdir(parents=True, exist_ok=True)
        (out / name / "ground_truth.json").write_text(json.dumps(resolved, indent=2) + "\n")
        if off_topic:
            (out / name / "off_topic.json").write_text(json.dumps(off_topic, indent=2) + "\n")
    return []


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, default=ROOT / "var" / "scale-corpus")
    parser.add_argument("--no-questions", action="store_true", help="build the corpus only")
    args = parser.parse_args()
    out: Path = args.out.resolve()

    files: dict[tuple[str, str], bytes] = {}
    dates: dict[str, int] = {}
    for project, releases in PROJECTS.items():
        for version in releases:
            sdist = sdist_fetch(project=project, version=version, cache=out / "sdists")
            extracted, dates[version] = sdist_extract(sdist=sdist)
            files.update({(version, path): data for path, data in extracted.items()})
    labelled = metadata_versions(files)
    if labelled:
        raise CorpusError("files name a version in their metadata:\n  " + "\n  ".join(labelled))
    listing = corpus_write(out=out, texts=files, dates=dates)
    order = sorted(listing, key=lambda name: (listing[name]["date"], name))
    (out / "files.json").write_text(json.dumps(listing, indent=2, sort_keys=True) + "\n")
    (out / "ingest_order.txt").write_text("".join(f"{name}\n" for name in order))
    size = sum(len(data) for data in files.values())
    print(f"corpus: {len(listing)} files, {size / 1e6:.1f} MB in {out / 'corpus'}")
    for version in sorted(VERSIONS, key=dates.__getitem__):
        count = sum(1 for v, _ in files if v == version)
        day = dt.datetime.fromtimestamp(dates[version], dt.UTC).date()
        print(f"  {PROJECT_OF[version]} {PROJECTS[PROJECT_OF[version]][version][0]}: {count} files, dated {day}")
    if args.no_questions:
        return 0

    problems = question_sets_write(out=out, texts={key: _normalized(data) for key, data in files.items()})
    if problems:
        return problems_report(problems, where=", ".join(path.name for path in QUESTION_SETS.values()))
    print(f"OK: every pattern found in its release and in none it should not be; wrote {out}/heldout, {out}/older")
    return 0


if __name__ == "__main__":
    script_exit(main)
