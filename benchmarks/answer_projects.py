"""The answer ranker trained across projects, judged on projects it never saw (issue 51).

    # the releases read here (benchmarks/_docs_corpus.py's sdists), then the questions of their docs
    python benchmarks/answer_projects.py download
    python benchmarks/answer_projects.py questions [--corpus var/bench/docs-corpus] [--per-project 250]
    # index projects (hashing encoder unless --encoder minilm), ask their questions through the answer path
    DATA_DIR=var/answer-projects python benchmarks/answer_projects.py evaluate --projects django sqlalchemy pytest
    # the training projects' candidates, as benchmarks/train_answer_ranker.py collect writes them
    DATA_DIR=var/answer-projects python benchmarks/answer_projects.py collect --projects click celery ... \
        --out var/answer-ranker/projects.json

Questions come from what reference documentation states in a fixed shape, never from prose read by
Docent: a setting's or option's `Default: ``X``` (or "defaults to ``X``", `:default: X`), `.. versionadded::`,
`.. versionchanged::` and `.. deprecated::` (and their Markdown spellings "New in version X"), and the
parameters of a `.. function::` / `.. method::` signature. Each becomes (question, expected values, source
file); the subject of the question is the entry's name (the setting, option, function) or, outside an
entry, its section's title. A subject whose fact of one kind has two values in one release is dropped: the
question would be ambiguous.

Held-out projects (HELD_OUT) are never collected for training; Django and SQLAlchemy are never trained on
at all. A held-out project is indexed with its current release and one older one (OLDER) in one workspace;
its questions are the current release's, and the older release's named by release ("In SQLAlchemy 1.4, ...").
"Asked fact first": the answer's first statement holds every expected value (a bare True/None/number also
needs the subject's name beside it); "markup": evaluation.answers.raw_markup finds something in the answer.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

CORPUS = ROOT / "var" / "bench" / "docs-corpus"
# Chosen before any figure was seen: Django and SQLAlchemy (never trained on), and pytest.
HELD_OUT = ("django", "sqlalchemy", "pytest")
NEVER_TRAINED = ("django", "sqlalchemy")
# The downloaded projects whose docs state structural facts (kombu, babel, marshmallow, docutils and pylint
# state almost none in their sources: autodoc or prose).
TRAINING = ("celery", "alembic", "click", "werkzeug", "jinja2", "gunicorn", "pyramid", "attrs", "mako", "coverage",
            "tornado", "pygments", "mypy")
CURRENT = {"django": "5.0.9", "sqlalchemy": "2.0.36", "pytest": "8.3.3", "celery": "4.4.7", "alembic": "1.13.3"}
OLDER = {"django": "4.1.13", "sqlalchemy": "1.4.54", "pytest": "6.2.5"}
# Where a big project's questions and index come from: its reference pages (the rest is tutorials and
# release notes, which state few structural facts and would take an hour to index on this machine).
FOLDERS = {"django": ("docs/ref",), "sqlalchemy": ("doc/build/core", "doc/build/orm")}
SEED = 51
NAMES = {"django": "Django", "sqlalchemy": "SQLAlchemy", "pytest": "pytest"}  # as an older-release question names it
SUFFIXES = (".rst", ".txt", ".md")


@dataclass(frozen=True)
class Fact:
    kind: str  # default, added, changed, deprecated, parameters
    subject: str
    values: tuple[str, ...]
    path: str
    line: int


_HEADING_RULE = re.compile(r"^([=\-~^\"'`#*+.])\1{2,}\s*$")
_ENTRY = re.compile(r"^\s*\.\.\s+(?:[\w]+:)?(setting|confval|option|cmdoption|envvar|function|method|class|"
                    r"attribute|data|decorator|describe|classmethod|staticmethod|exception|templatetag|"
                    r"templatefilter|django-admin)::\s*(.+?)\s*$")
_VERSION = re.compile(r"^\s*\.\.\s+(versionadded|versionchanged|deprecated)::\s*([0-9][\w.]*)")
_VERSION_TEXT = re.compile(r"\b(New in version|Changed in version|Deprecated since version)\s+([0-9][\w.]*\w)")
_VERSION_KIND = {"versionadded": "added", "versionchanged": "changed", "deprecated": "deprecated",
                 "New in version": "added", "Changed in version": "changed", "Deprecated since version": "deprecated"}
_DEFAULT_LINE = re.compile(r"^\s*(?::default:|Default:|Defaults to:?)\s*(.+?)\s*$")
_DEFAULT_PROSE = re.compile(r"\b(?:[Dd]efaults to|[Tt]he default (?:value )?is|by default(?: it)? is)\s+"
                            r"(``[^`]+``|\"[^\"]+\"|'[^']+'|[\w./-]+)")
_LITERAL = re.compile(r"^(?:``(.+?)``|`(.+?)`|\"(.+?)\"|'(.+?)'|(\S+))")
_MD_HEADING = re.compile(r"^#{1,6}\s+(.+?)\s*#*\s*$")
_ROLE = re.compile(r":[\w:+.-]+:`~?!?([^`<]*?)\s*(?:<[^`>]*>)?`")
_PARAM = re.compile(r"^\*{0,2}([A-Za-z_]\w*)")
_GENERIC = re.compile(r"^(?:none|true|false|null|-?\d{1,2}|\[\]|\{\}|\(\)|''|\"\")$", re.I)
# An unquoted default that is a value: a number, a switch word, a dotted or underscored name, a path.
_BARE_VALUE = re.compile(r"^(?:\d[\w.]*|true|false|none|disabled|enabled|on|off|yes|no|\S*[_./]\S*)$", re.I)
_SIGNATURE_KINDS = ("function", "method", "classmethod", "staticmethod", "decorator")


def _plain(text: str) -> str:
    """Inline markup gone: `:setting:`X`` -> X, ``x`` -> x."""
    text = _ROLE.sub(r"\1", text)
    return re.sub(r"`+([^`]+?)`+_?", r"\1", text).replace("\\", "").strip()


def _value(raw: str) -> str:
    """The value a Default: line states: its first literal ("``[]`` (Empty list)" -> "[]")."""
    raw = _plain(raw) if raw.startswith(":") else raw
    match = _LITERAL.match(raw.strip())
    if not match:
        return ""
    value = next(group for group in match.groups() if group is not None).strip().rstrip(".,;").strip("\"'")
    return value if match.group(5) is None or _BARE_VALUE.match(value) else ""  # "Default: see below" is none


def _entry_subject(kind: str, argument: str) -> str:
    """The name a reader asks with: `ALLOWED_HOSTS`, `--verbose`, `create_engine` (no module path, no args)."""
    name = argument.split("(", 1)[0].strip()
    if kind in ("option", "cmdoption"):
        name = argument.split(",")[0].split("=")[0].split(" <")[0].split()[0] if argument.split() else ""
    return name.rpartition(".")[2] if kind not in ("option", "cmdoption", "envvar", "setting", "confval") else name


def _parameters(argument: str) -> tuple[str, ...]:
    """The first two named parameters of a signature ("create_engine(url, **kwargs)" -> url, kwargs)."""
    inside = argument.partition("(")[2].rpartition(")")[0]
    names = []
    for piece in re.split(r"[,\[\]]", inside):
        match = _PARAM.match(piece.strip())
        if match and match.group(1) not in ("self", "cls") and match.group(1) not in names:
            names.append(match.group(1))
    return tuple(names[:2])


def source_facts(text: str, path: str) -> list[Fact]:
    """The structural facts of one documentation source (reStructuredText or Markdown)."""
    lines = text.splitlines()
    facts: list[Fact] = []
    heading = ""
    entry: tuple[str, int] | None = None  # (subject, indent of the entry directive)
    for index, line in enumerate(lines):
        following = lines[index + 1] if index + 1 < len(lines) else ""
        stripped = line.strip()
        if stripped and _HEADING_RULE.match(following) and len(following.strip()) >= len(stripped) \
                and not _HEADING_RULE.match(line):
            heading = _plain(stripped)
            entry = entry if entry and heading == entry[0] else None  # Django titles a setting with its name
            continue
        if (md := _MD_HEADING.match(line)) and path.endswith(".md"):
            heading, entry = _plain(md.group(1)), None
            continue
        if entry and stripped and len(line) - len(line.lstrip()) <= entry[1] and not line.lstrip().startswith(".. "):
            if not _HEADING_RULE.match(line):
                entry = entry if _DEFAULT_LINE.match(line) else None
        if match := _ENTRY.match(line):
            kind, argument = match.groups()
            subject = _entry_subject(kind, _plain(argument))
            entry = (subject, len(line) - len(line.lstrip())) if subject else None
            if subject and kind in _SIGNATURE_KINDS and (params := _parameters(argument)):
                facts.append(Fact("parameters", subject, params, path, index + 1))
            continue
        subject = entry[0] if entry else heading
        if not subject:
            continue
        if match := _VERSION.match(line):
            facts.append(Fact(_VERSION_KIND[match.group(1)], subject, (match.group(2).rstrip("."),), path, index + 1))
        elif match := _VERSION_TEXT.search(line):
            facts.append(Fact(_VERSION_KIND[match.group(1)], subject, (match.group(2),), path, index + 1))
        elif (match := _DEFAULT_LINE.match(line)) and entry and (value := _value(match.group(1))):
            facts.append(Fact("default", subject, (value,), path, index + 1))
        elif entry and (match := _DEFAULT_PROSE.search(line)) and (value := _value(match.group(1))):
            facts.append(Fact("default", subject, (value,), path, index + 1))
    return _unambiguous(facts)


def _unambiguous(facts: list[Fact]) -> list[Fact]:
    values: dict[tuple[str, str], set[tuple[str, ...]]] = {}
    for fact in facts:
        values.setdefault((fact.kind, fact.subject), set()).add(fact.values)
    seen: set[tuple[str, str]] = set()
    kept = []
    for fact in facts:
        key = (fact.kind, fact.subject)
        if len(values[key]) == 1 and key not in seen and len(fact.subject) >= 3:
            seen.add(key)
            kept.append(fact)
    return kept


_TEMPLATES = {
    "default": ("What is the default value of {subject}?", "What is {subject} set to by default?"),
    "added": ("In which version was {subject} added?", "Since which version is {subject} available?"),
    "changed": ("In which version did {subject} change?",),
    "deprecated": ("Since which version is {subject} deprecated?",),
    "parameters": ("Which parameters does {subject} take?", "What arguments does {subject} accept?"),
}


def patterns(fact: Fact) -> list[str]:
    """What the first statement must hold (lower case): the values, and the subject beside a bare value."""
    wanted = [value.lower() for value in fact.values]
    if any(_GENERIC.match(value) for value in wanted) or fact.kind == "parameters":
        wanted.append(fact.subject.lower().lstrip("-"))
    return wanted


def question(fact: Fact, *, pick: random.Random, project: str = "", release: str = "") -> dict:
    """The question a reader would ask for a fact, its expected patterns and its source file."""
    text = pick.choice(_TEMPLATES[fact.kind]).format(subject=fact.subject)
    if release:
        line = ".".join(release.split(".")[:2])
        text = f"In {NAMES.get(project, project.capitalize())} {line}, {text[0].lower()}{text[1:]}"
    return {"question": text, "kind": fact.kind, "subject": fact.subject, "values": list(fact.values),
            "patterns": patterns(fact), "path": fact.path, "release": release}


def release_folder(corpus: Path, project: str, release: str | None = None) -> Path | None:
    """OUT/<project>-<release> of benchmarks/_docs_corpus.py: the asked release, else the newest downloaded."""
    if release:
        folder = corpus / f"{project}-{release}"
        return folder if folder.is_dir() else None
    found = sorted(corpus.glob(f"{project}-[0-9]*"), key=lambda p: [int(x) if x.isdigit() else 0 for x in
                                                                    re.split(r"[.-]", p.name[len(project) + 1:])])
    return found[-1] if found else None


def project_files(folder: Path, project: str) -> list[Path]:
    """The documentation files of a release this benchmark reads and indexes (FOLDERS restricts a big one)."""
    roots = [folder / sub for sub in FOLDERS.get(project, ("",))]
    return sorted(path for root in roots if root.exists() for path in root.rglob("*")
                  if path.suffix in SUFFIXES and path.is_file() and "changelog" not in path.name.lower()
                  and "release" not in str(path.relative_to(folder)).lower()
                  and not {"_sources", "_build"} & set(path.relative_to(folder).parts))


def release_facts(folder: Path, project: str) -> list[Fact]:
    facts = []
    for path in project_files(folder, project):
        text = path.read_text(encoding="utf-8", errors="replace")
        facts += source_facts(text, str(path.relative_to(folder.parent)))
    return facts


def project_questions(corpus: Path, project: str, *, limit: int, older: bool) -> list[dict]:
    """A project's questions: its current release's facts, and (older=True) its older release's, named."""
    pick = random.Random(f"{SEED}-{project}")
    current = release_folder(corpus, project, CURRENT.get(project))
    if current is None:
        return []
    asked = [question(fact, pick=pick) for fact in _sample(release_facts(current, project), limit, pick)]
    if older and project in OLDER and (old := release_folder(corpus, project, OLDER[project])):
        release = OLDER[project]
        asked += [question(fact, pick=pick, project=project, release=release)
                  for fact in _sample(release_facts(old, project), limit // 2, pick)]
    return asked


def _sample(facts: list[Fact], limit: int, pick: random.Random) -> list[Fact]:
    """Up to `limit` facts in a seeded order, signatures at most a quarter: Django's reference is mostly those."""
    pick.shuffle(facts)
    signatures = [fact for fact in facts if fact.kind == "parameters"][:max(1, limit // 4)]
    return [fact for fact in facts if fact.kind != "parameters" or fact in signatures][:limit]


# --- Docent: index, ask, collect (needs DATA_DIR) -----------------------------------------------------------

def _index(corpus: Path, project: str, *, older: bool):  # noqa: ANN202 - a Workspace
    """The project's files (current, and older when asked) copied into one folder and indexed into its own
    workspace, as `make eval-scale` indexes (in-process; a rerun skips unchanged files)."""
    import shutil

    from evaluation.retrieval import eval_workspace_prepare

    staging = Path(os.environ["DATA_DIR"]) / "projects" / project
    releases = [CURRENT.get(project)] + ([OLDER[project]] if older and project in OLDER else [])
    for release in releases:
        folder = release_folder(corpus, project, release)
        if folder is None:
            continue
        for path in project_files(folder, project):
            target = staging / path.relative_to(folder.parent)
            if not target.exists() or target.read_bytes() != path.read_bytes():
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(path, target)
    workspace, indexed = eval_workspace_prepare(corpus=staging, slug=f"project-{project}", name=project)
    print(f"  {project}: indexed {indexed['indexed']}", flush=True)
    return workspace


def first_statement(text: str) -> str:
    from evaluation.answers import _statements

    statements = _statements(text)
    return statements[0] if statements else ""


def holds(text: str, wanted: list[str]) -> bool:
    """Every pattern in the text, as evaluation.answers matches a ground truth's (lower case, spaces folded)."""
    normalized = " ".join(text.lower().split())
    return bool(wanted) and all(pattern in normalized for pattern in wanted)


def candidates(entry: dict, workspace):  # noqa: ANN001, ANN201 - a Workspace; chat.units.Unit list
    """The units an answer chooses its lead among, scored as the answer scores them (search, cut, score_units)."""
    from django.conf import settings

    from chat.extractive import answer_units, question_vector, score_units
    from chat.models import default_search_options
    from chat.search import search_for_chat

    results, _used = search_for_chat(entry["question"], workspace=workspace, options=default_search_options(),
                                     top_k=settings.ANSWER_TOP_K, query_embedding=question_vector(entry["question"]))
    units = answer_units(list(results))
    score_units(entry["question"], units)
    return units


def evaluate(corpus: Path, projects: list[str], *, limit: int, details: bool) -> dict:
    """Per project and scope (current / older release): answered, asked fact first, the fact among the
    candidates at all (what retrieval leaves the ranker), the ranker's top candidate holding it, and markup."""
    from django.conf import settings

    from chat.answer_ranker import load_weights
    from chat.answering import answer
    from chat.models import default_search_options
    from evaluation.answers import raw_markup
    from evaluation.retrieval import eval_license_set
    from rag import embeddings

    settings.LLM_BASE_URL = ""  # the extractive answerer is what is measured
    weights, _bias = load_weights()  # read once: a retrain writing the file mid-run changes nothing here
    print(f"weights: {sorted(weights.items())[:3]}...", flush=True)
    figures = {}
    for project in projects:
        workspace = _index(corpus, project, older=True)
        eval_license_set(workspace=workspace, licensed=True)
        embeddings.query_warm_up()
        rows: dict[str, list[dict[str, bool]]] = {"current": [], "older": []}
        for entry in project_questions(corpus, project, limit=limit, older=True):
            result = answer(entry["question"], workspace=workspace, options=default_search_options())
            units = candidates(entry, workspace)
            markup = raw_markup(result)
            row = {"answered": not result.abstained,
                   "fact_first": holds(first_statement(result.text), entry["patterns"]) and not result.abstained,
                   "in_candidates": any(holds(unit.text, entry["patterns"]) for unit in units),
                   "ranked_first": bool(units) and holds(max(units, key=lambda u: u.score).text, entry["patterns"]),
                   "markup": bool(markup)}
            rows["older" if entry["release"] else "current"].append(row)
            if details and (not row["fact_first"] or markup):
                print(f"  [{project}] {entry['question']} -> {entry['patterns']}\n    {result.text[:300]!r}"
                      + "".join(f"\n    MARKUP {problem}" for problem in markup[:2]), flush=True)
        figures[project] = {scope: {"questions": len(values), "markup": sum(v["markup"] for v in values),
                                    **{key: sum(v[key] for v in values) / max(1, len(values))
                                       for key in ("answered", "fact_first", "in_candidates", "ranked_first")}}
                            for scope, values in rows.items()}
        for scope, v in figures[project].items():
            print(f"{project:12s} {scope:8s} n={v['questions']:3d}  fact first {v['fact_first']:.3f}  "
                  f"answered {v['answered']:.3f}  in candidates {v['in_candidates']:.3f}  "
                  f"ranker's first {v['ranked_first']:.3f}  markup {v['markup']}", flush=True)
    return figures


def collect(corpus: Path, projects: list[str], *, limit: int, out: Path) -> None:
    """Candidates of each training project's questions, in benchmarks/train_answer_ranker.py's format: a unit is
    correct when it states the fact's values and comes from the fact's own file (a "3.0" elsewhere is not it)."""
    from django.conf import settings

    from evaluation.retrieval import path_matches
    from rag import embeddings

    assert not set(projects) & set(HELD_OUT), "a held-out project is never trained on"
    settings.ANSWER_RANKER = "hand"  # the features are the same either way; the hand score is kept beside them
    groups = []
    for project in projects:
        workspace = _index(corpus, project, older=False)
        embeddings.query_warm_up()
        asked = project_questions(corpus, project, limit=limit, older=False)
        kept = 0
        for entry in asked:
            units = candidates(entry, workspace)
            labels = [holds(unit.text, entry["patterns"]) and path_matches(unit.result.path, entry["path"])
                      for unit in units]
            if any(labels) and not all(labels):
                kept += 1
                groups.append({"corpus": project, "question": entry["question"], "labels": labels,
                               "features": [unit.features for unit in units], "hand": [unit.score for unit in units],
                               "texts": [unit.text[:160] for unit in units]})
        print(f"  {project}: {kept} of {len(asked)} questions have a correct and a wrong candidate", flush=True)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(groups), encoding="utf-8")
    print(f"{len(groups)} questions -> {out}")


def download(corpus: Path, projects: list[str]) -> None:
    """Only the releases this benchmark reads, from benchmarks/_docs_corpus.py's list (it fetches all 120)."""
    import _docs_corpus

    wanted = [(project, release) for project, release in _docs_corpus.SDISTS if project in projects
              and release in (CURRENT.get(project, release), OLDER.get(project))]
    chosen = list({project: (project, release) for project, release in reversed(wanted)
                   if project not in CURRENT}.values()) + [entry for entry in wanted if entry[0] in CURRENT]
    for project, release in chosen:
        folder = corpus / f"{project}-{release}"
        if not (folder / ".done").exists():
            sdist = _docs_corpus.sdist_download(project=project, release=release, cache=corpus.parent / "sdists")
            files = _docs_corpus.docs_extract(sdist, folder)
            folder.mkdir(parents=True, exist_ok=True)
            (folder / ".done").write_text(f"{files}\n")
        print(f"  {project} {release}: {folder}", flush=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", type=Path, default=CORPUS, help="benchmarks/_docs_corpus.py's --out")
    commands = parser.add_subparsers(dest="command", required=True)
    fetch = commands.add_parser("download", help="fetch the releases read here (training and held-out)")
    fetch.add_argument("--projects", nargs="+", default=[*TRAINING, *HELD_OUT])
    listing = commands.add_parser("questions", help="count (and with --show print) each project's questions")
    listing.add_argument("--projects", nargs="+", default=[*TRAINING, *HELD_OUT])
    listing.add_argument("--per-project", type=int, default=250)
    listing.add_argument("--show", type=int, default=0)
    judged = commands.add_parser("evaluate", help="answer each held-out project's questions and score them")
    judged.add_argument("--projects", nargs="+", default=list(HELD_OUT))
    judged.add_argument("--per-project", type=int, default=200)
    judged.add_argument("--encoder", default="hashing", choices=["hashing", "minilm"])
    judged.add_argument("--details", action="store_true")
    judged.add_argument("--json", type=Path)
    gather = commands.add_parser("collect", help="write the training projects' candidates")
    gather.add_argument("--projects", nargs="+", default=list(TRAINING))
    gather.add_argument("--per-project", type=int, default=250)
    gather.add_argument("--encoder", default="hashing", choices=["hashing", "minilm"])
    gather.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    if args.command == "download":
        download(args.corpus, args.projects)
        return 0
    if args.command == "questions":
        for project in args.projects:
            asked = project_questions(args.corpus, project, limit=args.per_project, older=True)
            kinds = {kind: sum(q["kind"] == kind for q in asked) for kind in _TEMPLATES}
            print(f"{project:12s} {len(asked):4d} " + " ".join(f"{k} {v}" for k, v in kinds.items()))
            for entry in asked[:args.show]:
                print(f"    {entry['question']}  -> {entry['patterns']}  ({entry['path']})")
        return 0
    from _setup import django_setup

    django_setup(encoder=args.encoder)
    if args.command == "evaluate":
        figures = evaluate(args.corpus, args.projects, limit=args.per_project, details=args.details)
        if args.json:
            args.json.write_text(json.dumps({"encoder": args.encoder, "projects": figures}, indent=1))
    else:
        collect(args.corpus, args.projects, limit=args.per_project, out=args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
