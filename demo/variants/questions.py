"""The frozen "latest release" questions (demo/scale/latest_release_questions.json): checked, then resolved.

Three things people ask that only the order of a project's series answers (issue 35): "what's new in the
latest release", "the newest patch release of line X", "the current LTS". Each question names its project,
the bundle whose copy the builder reads (`version`, as the other question sets do), the series page that
answers (`expected_path`) and the release that page is (`expected_version`), with `answer_patterns` the page
must state (lower-case regexes on the text lower-cased with whitespace collapsed, all within a window, as
demo/real/build_corpus.py checks them). `asks` says which of the three it is; a newest-patch question names
its `line`, an LTS question the `lts_patterns` an LTS page states.

`latest_questions_check` refuses a set whose expected page does not state its patterns, is not a series
page (demo/variants/series.py) of the expected release, or is not the newest such page the corpus holds;
`latest_questions_resolve` names every copy of the expected page (the same page ships in several bundles)
by its file name in the corpus.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from packaging.version import Version

from demo.real.build_corpus import _states, _unescaped
from demo.variants.series import parsed_version, release_line, series_page

ASKS = ("latest", "newest_patch", "current_lts")
Texts = Mapping[tuple[str, str, str], str]  # (project, bundle version, path inside the sdist) -> normalised text


def _stated_versions(project: str, path: str, text: str) -> list[Version]:
    """The releases a series page speaks for: its own, or every patch release of its line it names."""
    found = series_page(project, path)
    if found is None:
        return []
    kind, version = found
    if kind == "release":
        return [Version(version)]
    if kind == "changelog":  # "Release 8.1.3 (released Oct 13, 2024)": every release it has an entry for
        return [v for token in re.findall(r"\brelease (\d+\.\d+(?:\.\d+)?)\b", text) if (v := parsed_version(token))]
    line = re.escape(release_line(version))
    return [v for token in re.findall(rf"(?<![\w.]){line}\.\d+(?![\w]|\.\d)", text) if (v := parsed_version(token))]


def series_versions(texts: Texts, project: str) -> dict[tuple[str, str], list[Version]]:
    """(bundle, path) -> the releases that series page speaks for, over every bundle of the project."""
    return {(version, path): found for (name, version, path), text in texts.items()
            if name == project and (found := _stated_versions(project, path, text))}


def latest_questions_check(questions: list[dict], texts: Texts, *, bundles: Mapping[str, list[str]]) -> list[str]:
    """Every problem of a latest-release question set (empty: the set holds); `bundles`: project -> its bundles."""
    problems: list[str] = []
    seen: set[str] = set()
    for question in questions:
        qid = question.get("id", "?")
        if qid in seen:
            problems.append(f"{qid}: duplicate id")
        seen.add(qid)
        project, bundle, path = question.get("project"), question.get("version"), question.get("expected_path")
        asks, expected = question.get("asks"), parsed_version(str(question.get("expected_version", "")))
        if question.get("kind") != "latest" or asks not in ASKS:
            problems.append(f"{qid}: kind must be 'latest' and asks one of {ASKS}")
            continue
        if project not in bundles or bundle not in bundles[project]:
            problems.append(f"{qid}: {project!r} {bundle!r} is not a bundle of the corpus")
            continue
        if expected is None or not question.get("question"):
            problems.append(f"{qid}: needs its question and an expected_version")
            continue
        patterns = question.get("answer_patterns") or []
        text = texts.get((project, bundle, path))
        if text is None:
            problems.append(f"{qid}: no file {path!r} in {project} {bundle}")
            continue
        if not patterns or any(_unescaped(p) != _unescaped(p).lower() for p in patterns):
            problems.append(f"{qid}: answer_patterns must be a non-empty list of lower-case regexes")
            continue
        if not _states(text, patterns):
            problems.append(f"{qid}: {project} {bundle}:{path} does not state {patterns}")
        for entry in question.get("also", []):
            if not _states(texts.get((project, entry.get("version"), entry.get("path")), ""), patterns):
                problems.append(f"{qid}: also {entry.get('version')}:{entry.get('path')} does not state {patterns}")
        if str(expected) in question["question"]:
            problems.append(f"{qid}: the question names the release it expects ({expected})")
        stated = _stated_versions(project, path, text)
        if expected not in stated:
            problems.append(f"{qid}: {path} is not a series page of {expected} "
                            f"(it speaks for {[str(v) for v in stated]})")
        every = [v for versions in series_versions(texts, project).values() for v in versions]
        if asks == "latest" and expected != max(every, default=expected):
            problems.append(f"{qid}: {expected} is not the newest {project} release the corpus documents "
                            f"({max(every)})")
        elif asks == "newest_patch":
            line = str(question.get("line", ""))
            in_line = [v for v in every if release_line(str(v)) == line]
            if release_line(str(expected)) != line or expected != max(in_line, default=expected):
                problems.append(f"{qid}: {expected} is not the newest release of line {line!r} "
                                f"({max(in_line, default='none')})")
        elif asks == "current_lts":
            problems += _lts_problems(question, texts, expected)
    return problems


def _lts_problems(question: dict, texts: Texts, expected: Version) -> list[str]:
    """The expected page states it is an LTS, and no release page of a newer line does."""
    qid, project, lts = question["id"], question["project"], question.get("lts_patterns") or []
    if not lts:
        return [f"{qid}: an LTS question needs lts_patterns"]
    problems = []
    if not _states(texts[(project, question["version"], question["expected_path"])], lts):
        problems.append(f"{qid}: the expected page does not state {lts}")
    for (bundle, path), versions in sorted(series_versions(texts, project).items()):
        newer = [v for v in versions if Version(release_line(str(v))) > Version(release_line(str(expected)))]
        if newer and series_page(project, path)[0] == "release" and _states(texts[(project, bundle, path)], lts):
            problems.append(f"{qid}: {bundle}:{path} ({newer[0]}) is a newer LTS")
    return problems


def latest_questions_resolve(questions: list[dict], texts: Texts,
                             names: Mapping[tuple[str, str, str], str]) -> list[dict]:
    """The questions with file names: `expected_path` the bundle's copy, `paths` every copy that states the
    patterns (any is the right page; `also` names other pages that do, as {version, path}), `release_paths` the
    same, for the evaluation's version scorers."""
    resolved = []
    for question in questions:
        project = question["project"]
        pages = {question["expected_path"], *(entry["path"] for entry in question.get("also", []))}
        copies = sorted(names[key] for key in texts if key[0] == project and key[2] in pages and key in names
                        and _states(texts[key], question["answer_patterns"]))
        expected = names[(project, question["version"], question["expected_path"])]
        resolved.append({**question, "expected_path": expected,
                         "paths": copies, "release_paths": copies})
    return resolved
