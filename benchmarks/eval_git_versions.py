"""A Git source of real documentation with release tags: what it costs to index, and version questions.

    python benchmarks/eval_git_versions.py [--encoder minilm|hashing] [--questions FILE]

Builds a Git repository from five Sphinx releases' sdists (the subset that `make eval-real` uses:
usage guides, man pages, FAQ, glossary, LaTeX guide, changelog), one commit per release dated by
its files' newest mtime and tagged with the release (5.3.0 ... 8.1.3); sdists are cached in
var/real-corpus/sdists (demo/real/build_corpus.py fetches them with pip). Then adds it as a Git
source of a fresh workspace with an empty embedding cache and syncs it in this process, as
`source sync --sync` does. Figures:

- chunks encoded vs the distinct chunk texts across all tags (target <= 1.2x), and what indexing
  every tag's tree on its own would have encoded;
- version questions (benchmarks/git_version_questions.json, each checked first against the text of
  the file its tag's tree holds): a question "as of" a release is right when the top result comes
  from a blob that release's tree holds and one of the top 3 states the answer; a "what changed"
  question when both releases' statements are among the results. Version accuracy: the share of
  right answers (target >= 0.90).

Own DATA_DIR: var/bench/git-versions; the repository beside it, var/bench/git-versions-repo. Exit 1 when a target is missed.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

from _setup import ROOT, django_setup

sys.path.insert(0, str(ROOT / "demo" / "real"))
from build_corpus import sdist_extract, sdist_fetch  # noqa: E402

DATA_DIR = ROOT / "var" / "bench" / "git-versions"
# Beside DATA_DIR, never inside it: a source may not read Docent's own data folder.
REPO = DATA_DIR.with_name("git-versions-repo")
SDISTS = ROOT / "var" / "real-corpus" / "sdists"
RELEASES = {"5.3": "5.3.0", "6.2": "6.2.1", "7.2": "7.2.6", "7.4": "7.4.7", "8.1": "8.1.3"}
QUESTIONS = Path(__file__).with_name("git_version_questions.json")
SLUG = "git-versions"
ENCODED_RATIO_TARGET, ACCURACY_TARGET = 1.2, 0.90


def _git(repo: Path, *args: str, date: int | None = None) -> str:
    env = {**os.environ, "GIT_AUTHOR_NAME": "Docs", "GIT_AUTHOR_EMAIL": "docs@example.com",
           "GIT_COMMITTER_NAME": "Docs", "GIT_COMMITTER_EMAIL": "docs@example.com",
           "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1"}
    if date is not None:
        env["GIT_AUTHOR_DATE"] = env["GIT_COMMITTER_DATE"] = f"{date} +0000"
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True,
                          env=env).stdout.strip()


def release_files() -> dict[str, dict[str, tuple[bytes, int]]]:
    """Each release's documentation subset: {release: {path: (bytes, mtime)}}."""
    return {release: sdist_extract(release=series, sdist=sdist_fetch(release=series, cache=SDISTS, version=release))
            for series, release in RELEASES.items()}


def repository_build(repo: Path, releases: dict[str, dict[str, tuple[bytes, int]]]) -> None:
    """One commit per release, dated by its newest file, tagged with the release."""
    shutil.rmtree(repo, ignore_errors=True)
    repo.mkdir(parents=True)
    _git(repo, "init", "-q", "-b", "main")
    for release, files in releases.items():
        for tracked in _git(repo, "ls-files").splitlines():
            (repo / tracked).unlink()
        for path, (data, _mtime) in files.items():
            (repo / path).parent.mkdir(parents=True, exist_ok=True)
            (repo / path).write_bytes(data)
        _git(repo, "add", "-A")
        _git(repo, "commit", "-q", "-m", f"Sphinx {release} documentation", date=max(m for _d, m in files.values()))
        _git(repo, "tag", release)


def _normalized(data: bytes) -> str:
    return " ".join(data.decode("utf-8", "replace").lower().split())


def _states(text: str, patterns: list[str]) -> bool:
    return all(re.search(pattern, text) for pattern in patterns)


def questions_check(questions: list[dict], trees: dict[str, dict[str, bytes]]) -> list[str]:
    """Every expected statement is in the file the asked release's tree holds."""
    problems = []
    for question in questions:
        for side in question["expect"]:
            data = trees[RELEASES[side["version"]]].get(side["path"])
            if data is None or not _states(_normalized(data), side["patterns"]):
                problems.append(f"{question['id']}: {side['path']} of {side['version']} does not state "
                                f"{side['patterns']}")
    return problems


def sync_here(source_id: int):
    from rag.models import IndexingJobItem
    from rag.jobs.run import job_item_run
    from rag.sources.services import source_sync

    job = source_sync(source_id=source_id, enqueue=False)
    for item_id in job.items.filter(status=IndexingJobItem.Status.QUEUED).values_list("pk", flat=True):
        job_item_run(item_id=item_id, merge_inline=True)
    return job


def tree_holds(source, version: str) -> set[str]:
    """Document paths whose blob the tree of `version` (its newest tag in that series) holds."""
    from rag.releases import within_version
    from rag.models import SourceFile

    source.refresh_from_db()
    tag = [name for name in source.state["order"] if within_version(name, version)][-1]
    return set(SourceFile.objects.filter(source=source, tags__contains=[tag]).values_list("document_path", flat=True))


def answer(question: dict, source, workspace) -> tuple[bool, bool, str]:
    """(answered from the right tags, the expected statement among the top 3 from those tags, the top result).

    Right tags: for an "as of" question the top result's blob is held by that release's tree; for a
    "what changed" question each side's release holds the blob of one of the results.
    """
    from rag.retrieval.options import SearchOptions
    from rag.retrieval.search import search

    results = list(search(question["question"], SearchOptions(workspace=workspace, top_k=5)))
    if not results:
        return False, False, "no result"
    sides = [(tree_holds(source, side["version"]), side["patterns"]) for side in question["expect"]]
    texts = [(r.path, _normalized(r.text.encode())) for r in results]
    if len(sides) == 1:
        held, patterns = sides[0]
        from_tags = results[0].path in held
        stated = any(path in held and _states(text, patterns) for path, text in texts[:3])
    else:
        from_tags = all(any(path in held for path, _text in texts) for held, _patterns in sides)
        stated = all(any(path in held and _states(text, patterns) for path, text in texts) for held, patterns in sides)
    return from_tags, stated, f"{results[0].version_label or '-'} {results[0].path.split('/', 3)[-1]}"


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--encoder", default="minilm", choices=["minilm", "hashing"])
    parser.add_argument("--questions", type=Path, default=QUESTIONS)
    parser.add_argument("--reuse", action="store_true", help="ask the questions of the last run's index")
    args = parser.parse_args()
    os.environ.setdefault("DATA_DIR", str(DATA_DIR))
    os.environ.setdefault("SOURCE_FOLDER_ROOTS", str(REPO))  # the repository it syncs
    django_setup(encoder=args.encoder)
    from django.db.models import Count

    from rag.embeddings import get_encoder
    from rag.models import Chunk, EmbeddingCache, SourceFile, Workspace
    from rag.sources.services import source_add

    questions = json.loads(args.questions.read_text())
    releases = release_files()
    trees = {release: {path: data for path, (data, _mtime) in files.items()} for release, files in releases.items()}
    problems = questions_check(questions, trees)
    if problems:
        print("questions that their release's text does not back:", *problems, sep="\n  ")
        return 1
    if args.reuse:
        workspace = Workspace.objects.get(slug=SLUG)
        return 0 if questions_ask(questions, workspace.sources.get(), workspace) >= ACCURACY_TARGET else 1
    repository_build(REPO, releases)
    Workspace.objects.filter(slug=SLUG).delete()
    EmbeddingCache.objects.filter(model_name=get_encoder().name).delete()  # every chunk counted, none cached
    workspace = Workspace.objects.create(slug=SLUG, name="Git versions")
    source = source_add(workspace=workspace, name="sphinx-docs", kind="git", location=str(REPO),
                        every_minutes=0)
    job = sync_here(source.pk)
    encoded = sum(job.items.values_list("encoded_count", flat=True))
    distinct = Chunk.objects.filter(workspace=workspace).values("text_hash").distinct().count()
    per_blob = dict(Chunk.objects.filter(workspace=workspace).values_list("document__path")
                    .annotate(n=Count("id")).values_list("document__path", "n"))
    every_tree = sum(per_blob.get(path, 0) * len(tags) for path, tags in
                     SourceFile.objects.filter(source=source).values_list("document_path", "tags"))
    files = sum(len(tree) for tree in trees.values())
    ratio = encoded / distinct if distinct else float("inf")
    print(f"repository: {len(RELEASES)} tags, {files} files across the tags' trees, "
          f"{SourceFile.objects.filter(source=source).count()} distinct (path, blob) documents")
    print(f"chunks encoded {encoded}, distinct chunk texts across tags {distinct}: {ratio:.2f}x "
          f"(target <= {ENCODED_RATIO_TARGET}x)  {'MET' if ratio <= ENCODED_RATIO_TARGET else 'MISSED'}; "
          f"every tree indexed on its own: {every_tree} chunks")

    accuracy = questions_ask(questions, source, workspace)
    return 0 if ratio <= ENCODED_RATIO_TARGET and accuracy >= ACCURACY_TARGET else 1


def questions_ask(questions: list[dict], source, workspace) -> float:
    """Print each question's outcome and both figures; returns the version accuracy."""
    from_tags = stated = 0
    for question in questions:
        right_tags, right_answer, top = answer(question, source, workspace)
        from_tags, stated = from_tags + right_tags, stated + right_answer
        mark = ("tags ok" if right_tags else "TAGS BAD") + (", answer ok" if right_answer else ", answer missed")
        print(f"  {question['id']} [{question['kind']}] {mark}: {question['question']}  -> top: {top}", flush=True)
    accuracy = from_tags / len(questions)
    print(f"version accuracy {accuracy:.2f} on {len(questions)} questions ({from_tags} answered from the right "
          f"tags; target >= {ACCURACY_TARGET})  {'MET' if accuracy >= ACCURACY_TARGET else 'MISSED'}")
    print(f"answer found: {stated / len(questions):.2f} ({stated} with the expected statement among the top 3 "
          "results from the right tags; both sides for a change)")
    return accuracy


if __name__ == "__main__":
    sys.exit(main())
