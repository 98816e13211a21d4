#!/usr/bin/env python3
"""Write the same releases again the ways real exports present them (issue 35's measurement corpora).

    python demo/variants/build_variants.py [--corpus var/scale-corpus] [--out var/variants]
        [--variants frontmatter revdate mtime mixed] [--project django] [--every N] [--seed 35]

From a built corpus (demo/scale/build_corpus.py or demo/real/build_corpus.py: its files.json and resolved
question sets), each variant goes to OUT/<variant>/ with corpus/, files.json (the source's entry plus
`source`, `format`, `moment`, `date_written`, `speaks_for`) and the question sets resolved to the new names
(OUT/<variant>/heldout/, older/, latest/ for the scale corpus; ground_truth.json and latest/ for the Sphinx
one), in the format `manage.py eval_demo` / `eval_answers` read. Variants:

- frontmatter: every page Markdown with YAML frontmatter `title:` and `date:`, the date written in one of
  several real forms ("2022-04-11", "2022-04-11T09:30:00Z", "April 11, 2022", "11 Apr 2022", ...);
- revdate: every page AsciiDoc (`=` headings, `----` listings, `|===` tables) with `:revdate:` in several forms;
- mtime: every page in its original text format, no date in it, with a per-file mtime;
- mixed: each release of a project in another format: .md with frontmatter, .adoc with revdate, .txt with
  mtimes, .docx with core properties (`modified` the page's date; `created` an old template's date, years
  earlier, for some files, as real Word files carry).

Dates (demo/variants/naming.py): a release's files were last touched on a few days (commits) spread over the
weeks or months before its packaging date (the source's release date), a third of them at the window's start,
a release-notes page when its own release happened, as the Django 5.1.4 sdist has them; the release's own notes
page carries the packaging moment itself. Every file keeps that one moment in every variant; files whose date
is written in them get one export moment as mtime, as an export writes all files at once.

Names: `<8 hex>_<basename>`; two prefixes in five have the digits-letter-digits shape (`40b08594`,
`58c20104`), one in ten two letters (`2a61e300`), some are all digits. No release or version is added to a
name, folder or metadata (a release-notes page keeps its own base name, `4.2.17.txt`, as real exports do).

Pages go through Docent's parser and are written in the target syntax (demo/variants/markup.py). The build
checks that every question's file still states its patterns after conversion (else fails loudly) and prints
how many pages read back exactly as their source reads (fidelity). Deterministic: the same seed gives the
same bytes. `--project` keeps one project, `--every N` one page in N (by a hash of project and path) with all
its releases, plus every page a kept question names, so that a small run still asks every question.
"""

from __future__ import annotations

import argparse
import hashlib
import io
import json
import os
import random
import re
import sys
import zipfile
from dataclasses import asdict
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))  # run as a script: demo and rag are imported from the repository

from demo.real.build_corpus import CorpusError, _normalized, _states, problems_report, script_exit  # noqa: E402
from demo.variants.markup import CODE_FENCE, Page, page_read, to_asciidoc, to_docx, to_markdown  # noqa: E402
from demo.variants.naming import (  # noqa: E402
    EXPORT_MOMENT,
    Dating,
    date_form,
    date_written,
    file_moments,
    hex_prefix,
    office_created,
)
from demo.variants.questions import latest_questions_check, latest_questions_resolve  # noqa: E402
from demo.variants.series import expected_release, release_written, series_page  # noqa: E402
from rag.parsers import ParseError, parse_document  # noqa: E402

VARIANTS = ("frontmatter", "revdate", "mtime", "mixed")
MIXED_FORMATS = ("md", "adoc", "txt", "docx")
LATEST_QUESTIONS = {"scale": ROOT / "demo" / "scale" / "latest_release_questions.json",
                    "real": ROOT / "demo" / "real" / "latest_release_questions.json"}
SEED = 35
_LIST_MARKER = re.compile(r"^\s*(?:[-*+•]|\d{1,3}[.)])\s+")


def page_text(parsed_title: str, sections) -> str:  # noqa: ANN001 - parser Sections
    """What a page says, headings included, lower-cased with whitespace collapsed: what question patterns
    and the fidelity figure are matched against."""
    parts = [parsed_title]
    for section in sections:
        if section.level:
            parts.append(section.heading_path[-1])
        parts.append(section.text)
    # Code fences and list markers are not words: an export writes a doctest as code where the reST reader sees
    # a paragraph, and Word's list items read "- item" whatever the source's marker.
    lines = [_LIST_MARKER.sub("", line) for line in "\n".join(parts).lower().splitlines()]
    return " ".join(word for word in " ".join(lines).split() if not word.startswith(CODE_FENCE))


def source_listing(corpus: Path) -> tuple[str, dict[str, dict]]:
    """("scale" | "real", flat name -> entry with project, version, release, path, release_date)."""
    listing = json.loads((corpus / "files.json").read_text(encoding="utf-8"))
    kind = "scale" if all("project" in entry for entry in listing.values()) else "real"
    newest: dict[str, int] = {}
    for entry in listing.values():
        if "mtime" in entry:
            newest[entry["version"]] = max(newest.get(entry["version"], 0), entry["mtime"])
    for entry in listing.values():
        entry.setdefault("project", "sphinx")
        entry["release_date"] = entry.get("date") or datetime.fromtimestamp(newest[entry["version"]], UTC).isoformat()
    return kind, listing


def question_sets(corpus: Path) -> dict[str, tuple[list[dict], list[str]]]:
    """The source's resolved sets: set name ("" for the Sphinx corpus's root one) -> (questions, off-topic)."""
    sets = {}
    for ground_truth in sorted([corpus / "ground_truth.json", *corpus.glob("*/ground_truth.json")]):
        if ground_truth.exists():
            off_topic = ground_truth.parent / "off_topic.json"
            name = "" if ground_truth.parent == corpus else ground_truth.parent.name
            sets[name] = (json.loads(ground_truth.read_text(encoding="utf-8")),
                          json.loads(off_topic.read_text(encoding="utf-8")) if off_topic.exists() else [])
    return sets


def _question_project(question: dict) -> str:
    return question.get("project", "sphinx")


def _named_files(value) -> set[str]:  # noqa: ANN001 - any JSON value
    if isinstance(value, dict):
        return set().union(*(_named_files(item) for item in value.values())) if value else set()
    if isinstance(value, list):
        return set().union(*(_named_files(item) for item in value)) if value else set()
    return {value} if isinstance(value, str) else set()


def _renamed(value, names: dict[str, str]):  # noqa: ANN001, ANN202 - any JSON value
    if isinstance(value, dict):
        return {key: _renamed(item, names) for key, item in value.items()}
    if isinstance(value, list):
        return [_renamed(item, names) for item in value]
    return names.get(value, value) if isinstance(value, str) else value


def kept_files(listing: dict[str, dict], sets: dict[str, list[dict]], *, project: str | None, every: int) -> set[str]:
    """Names kept: the project's pages, one page in `every` with all its releases, plus the pages questions name."""
    def page(name: str) -> str:
        return f"{listing[name]['project']}/{listing[name]['path']}"

    pages = {page(name) for name in listing if every <= 1
             or int(hashlib.sha256(page(name).encode()).hexdigest(), 16) % every == 0}
    for questions in sets.values():
        for question in questions:
            if project is None or _question_project(question) == project:
                pages |= {page(name) for name in _named_files(question) if name in listing}
    return {name for name in listing
            if page(name) in pages and (project is None or listing[name]["project"] == project)}


def mixed_formats(listing: dict[str, dict], seed: int) -> dict[tuple[str, str], str]:
    """(project, bundle) -> its format in the mixed variant: a seeded order of the four formats per project."""
    chosen = {}
    for project in sorted({entry["project"] for entry in listing.values()}):
        order = list(MIXED_FORMATS)
        random.Random(f"{seed}|mixed|{project}").shuffle(order)
        bundles = sorted({e["version"] for e in listing.values() if e["project"] == project},
                         key=lambda v: [int(part) for part in v.split(".")])
        chosen.update({(project, bundle): order[index % len(order)] for index, bundle in enumerate(bundles)})
    return chosen


def _fixed_zip(data: bytes) -> bytes:
    """A .docx with its zip entries dated 1980: python-docx stamps the write time, which would change the
    bytes (and force a re-index) on every build."""
    source = zipfile.ZipFile(io.BytesIO(data))
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as target:
        for info in source.infolist():
            fixed = zipfile.ZipInfo(info.filename, date_time=(1980, 1, 1, 0, 0, 0))
            fixed.compress_type = zipfile.ZIP_DEFLATED
            target.writestr(fixed, source.read(info.filename))
    return buffer.getvalue()


def written(page: Page, *, doc_format: str, source: Path, dating: Dating, new_stem: str) -> tuple[bytes, float, dict]:
    """(bytes, mtime, listing fields) of one page in one format."""
    title = page.parsed.title if page.titled else new_stem
    fields: dict = {"format": doc_format, "moment": dating.moment.isoformat()}
    export = EXPORT_MOMENT.timestamp()
    if doc_format in ("txt", "rst"):
        return source.read_bytes(), dating.moment.timestamp(), {**fields, "date_field": "mtime"}
    if doc_format == "md":
        text = date_written(dating, "frontmatter")
        frontmatter = {"title": json.dumps(title)} if page.titled else {}
        data = to_markdown(page, frontmatter={**frontmatter, "date": text}).encode()
        return data, export, {**fields, "date_field": "frontmatter date", "date_written": text,
                              "date_form": date_form(dating, "frontmatter")}
    if doc_format == "adoc":
        text = date_written(dating, "revdate")
        data = to_asciidoc(page, revdate=text, title=title).encode()
        return data, export, {**fields, "date_field": "revdate", "date_written": text,
                              "date_form": date_form(dating, "revdate")}
    created = office_created(dating)
    data = to_docx(page, title=title, created=created, modified=dating.moment, revision=dating.revision,
                   author="Documentation team")
    return _fixed_zip(data), export, {**fields, "date_field": "office modified", "created": created.isoformat()}


def _variant_format(variant: str, name: str, mixed_format: str, page: Page | None) -> str:
    """The format a page is written in: the variant's, the release's in the mixed one; a page Docent cannot read
    stays in its own text format."""
    if page is None or variant == "mtime":
        return Path(name).suffix.lstrip(".")
    return {"frontmatter": "md", "revdate": "adoc"}.get(variant, mixed_format)


def _write(target: Path, data: bytes, mtime: float) -> None:
    if not target.exists() or target.read_bytes() != data:
        target.write_bytes(data)
    if int(target.stat().st_mtime) != int(mtime):
        os.utime(target, (mtime, mtime))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--corpus", type=Path, default=ROOT / "var" / "scale-corpus")
    parser.add_argument("--out", type=Path, default=ROOT / "var" / "variants")
    parser.add_argument("--variants", nargs="+", default=list(VARIANTS), choices=VARIANTS)
    parser.add_argument("--project", help="keep this project's pages and questions only")
    parser.add_argument("--every", type=int, default=1, help="keep one page in N, with all its releases")
    parser.add_argument("--seed", type=int, default=SEED)
    args = parser.parse_args()
    corpus, out = args.corpus.resolve(), args.out.resolve()
    if not (corpus / "files.json").exists():
        raise CorpusError(f"no corpus at {corpus}: build it first (demo/scale/build_corpus.py)")
    kind, listing = source_listing(corpus)
    sets = question_sets(corpus)
    key_of = {name: (e["project"], e["version"], e["path"]) for name, e in listing.items()}
    texts = {key_of[name]: _normalized((corpus / "corpus" / name).read_bytes()) for name in listing}
    bundles: dict[str, list[str]] = {}
    for project, version in sorted({(project, version) for project, version, _ in key_of.values()}):
        bundles.setdefault(project, []).append(version)
    if kind in LATEST_QUESTIONS:
        latest = json.loads(LATEST_QUESTIONS[kind].read_text(encoding="utf-8"))
        problems = latest_questions_check(latest, texts, bundles=bundles)
        if problems:
            return problems_report(problems, where=str(LATEST_QUESTIONS[kind]))
        names = {key: name for name, key in key_of.items()}
        sets["latest"] = (latest_questions_resolve(latest, texts, names), [])
        print(f"{LATEST_QUESTIONS[kind].name}: {len(latest)} questions checked")
    question_lists = {name: questions for name, (questions, _) in sets.items()}
    kept = kept_files(listing, question_lists, project=args.project, every=args.every)
    print(f"{len(kept)} of {len(listing)} files kept" + (f" ({args.project})" if args.project else "")
          + (f", one page in {args.every}" if args.every > 1 else ""))
    return build(corpus=corpus, out=out, listing=listing, kept=kept, sets=sets, variants=args.variants,
                 seed=args.seed, project=args.project)


def build(*, corpus: Path, out: Path, listing: dict[str, dict], kept: set[str], sets: dict, variants: list[str],
          seed: int, project: str | None) -> int:
    """Write every variant; returns the exit status (problems reported)."""
    released = {name: day for name in kept if series_page(listing[name]["project"], listing[name]["path"])
                and (day := release_written((corpus / "corpus" / name).read_text(encoding="utf-8", errors="replace")))}
    moments = file_moments(listing, seed=seed, written=released)
    formats = mixed_formats(listing, seed)
    renamed: dict[str, dict[str, str]] = {variant: {} for variant in variants}
    entries: dict[str, dict[str, dict]] = {variant: {} for variant in variants}
    taken: dict[str, set[str]] = {variant: set() for variant in variants}
    question_files = set().union(*(_named_files(questions) for questions, _ in sets.values()))
    source_texts: dict[str, str] = {}
    converted_texts: dict[tuple[str, str], str] = {}
    fidelity = {variant: [0, 0] for variant in variants}  # pages read back as their source, pages
    for variant in variants:
        (out / variant / "corpus").mkdir(parents=True, exist_ok=True)
    for name in sorted(kept):
        entry, source = listing[name], corpus / "corpus" / name
        try:
            page = page_read(source, source.read_bytes())
        except ParseError as error:
            page = None
            print(f"  {name}: unreadable by Docent ({error}): copied as it is", file=sys.stderr)
        reference = page_text(page.parsed.title, page.sections()) if page else ""
        if name in question_files:
            source_texts[name] = reference
        expected = expected_release(project=entry["project"], path=entry["path"], release=entry["release"])
        for variant in variants:
            doc_format = _variant_format(variant, name, formats[(entry["project"], entry["version"])], page)
            stem, suffix = Path(entry["path"]).stem, Path(name).suffix if variant == "mtime" else f".{doc_format}"
            prefix = hex_prefix(f"{entry['project']}|{entry['version']}|{entry['path']}", seed=seed,
                                taken=taken[variant], stem=stem + suffix)
            new_name = f"{prefix}_{stem}{suffix}"
            taken[variant].add(new_name)
            dating = moments[name]
            data, mtime, fields = (source.read_bytes(), dating.moment.timestamp(), {"format": doc_format}) \
                if page is None else written(page, doc_format=doc_format, source=source, dating=dating,
                                             new_stem=Path(new_name).stem)
            target = out / variant / "corpus" / new_name
            _write(target, data, mtime)
            renamed[variant][name] = new_name
            entries[variant][new_name] = {**{k: v for k, v in entry.items() if k != "mtime"},
                                          **({"mtime": int(mtime)} if "mtime" in entry else {}), "source": name,
                                          **fields, "speaks_for": asdict(expected)}
            if page is None:
                continue
            try:
                back = parse_document(target, data)
                text = page_text(back.title if page.titled else page.parsed.title, back.sections)
            except ParseError:
                text = ""
            fidelity[variant][1] += 1
            fidelity[variant][0] += text == reference
            if name in question_files:
                converted_texts[(variant, name)] = text
    problems = _questions_write(out=out, variants=variants, sets=sets, renamed=renamed, project=project,
                                source_texts=source_texts, converted_texts=converted_texts)
    for variant in variants:
        (out / variant / "files.json").write_text(json.dumps(entries[variant], indent=1, sort_keys=True) + "\n")
        for stray in (out / variant / "corpus").iterdir():
            if stray.name not in entries[variant]:
                stray.unlink()
        same, total = fidelity[variant]
        print(f"{variant}: {len(entries[variant])} files in {out / variant / 'corpus'}; {same} of {total} pages "
              f"read back exactly as their source reads ({same / max(total, 1):.1%})")
    if problems:
        return problems_report(problems, where="the converted pages")
    print("OK: every question's patterns are still stated by its converted pages")
    return 0


def _questions_write(*, out: Path, variants: list[str], sets: dict, renamed: dict[str, dict[str, str]],
                     project: str | None, source_texts: dict[str, str],
                     converted_texts: dict[tuple[str, str], str]) -> list[str]:
    """Each set resolved to a variant's names; problems where a converted page lost a pattern its source states."""
    problems = []
    for name, (questions, off_topic) in sets.items():
        kept = [q for q in questions if project is None or _question_project(q) == project]
        for variant in variants:
            folder = out / variant / name
            folder.mkdir(parents=True, exist_ok=True)
            (folder / "ground_truth.json").write_text(json.dumps(_renamed(kept, renamed[variant]), indent=2) + "\n")
            if off_topic:
                (folder / "off_topic.json").write_text(json.dumps(off_topic, indent=2) + "\n")
            for question in kept:
                for path, patterns in _pattern_entries(question):
                    if (variant, path) not in converted_texts or not _states(source_texts.get(path, ""), patterns):
                        continue
                    if not _states(converted_texts[(variant, path)], patterns):
                        problems.append(f"{variant}: {question['id']}: {renamed[variant][path]} (from {path}) "
                                        f"no longer states {patterns}")
    return problems


def _pattern_entries(question: dict) -> list[tuple[str, list[str]]]:
    """(file, patterns) pairs a question says files state."""
    found = []
    if question.get("expected_path") and question.get("answer_patterns"):
        found.append((question["expected_path"], question["answer_patterns"]))
    for key in ("outdated", "other_versions", "sides"):
        found += [(entry["path"], entry["patterns"]) for entry in question.get(key, []) if entry.get("patterns")]
    return found


if __name__ == "__main__":
    script_exit(main)
