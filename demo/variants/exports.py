#!/usr/bin/env python3
"""Export piles: one project's documentation of 3-4 releases, each release exported another way (issue 50).

    python demo/variants/exports.py --docs var/bench/docs-corpus --out var/exports --project pytest [--pages 60]

From the release trees benchmarks/_docs_corpus.py fetches (OUT/<project>-<release>/), each release of a project
is written in one export form, in a seeded rotation per project:

- pdf: multi-page PDF chapters (one per top folder of the docs), CreationDate the export's date;
- docx: a Word file per page, core properties `created`/`modified` the export's date;
- html: a page per file with <meta name="date"> the export's date;
- md: Markdown with no date, its file time today's (a copy made recently);
- rst: the reStructuredText as shipped, with archive file times (before the release).

No file name, folder or metadata carries a version: files are named by a seeded random hex name (nor does a
name keep its source's stem, "release-3.3.2.md"). Every page of a release's export speaks for that release
(files.json: `release`, `form`, `date_source`). Export dates come a month to over a year after the release (often
after the next one), as real exports are made whenever someone needs them. ground_truth.json holds the pile's
questions (demo/variants/pile_questions.py): facts its pages state differently in its releases. Release dates (the truth the calendar
is judged by) are PyPI's first upload of each release, read from `--release-dates` (project -> {version: day}).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import re
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from demo.variants.markup import page_read, to_docx, to_markdown  # noqa: E402
from demo.variants.pile_questions import NOTES_NAME, pile_questions  # noqa: E402
from rag.parsers import ParseError  # noqa: E402

FORMS = ("pdf", "docx", "html", "md", "rst")
SEED = 50
SUFFIXES = (".rst", ".txt", ".md")


def releases_of(docs: Path, project: str) -> list[tuple[str, Path]]:
    """(release, its docs tree) of the project, oldest first."""
    from packaging.version import Version

    found = [(folder.name[len(project) + 1:], folder) for folder in docs.glob(f"{project}-*")
             if (folder / ".done").exists() and re.fullmatch(r"[\d.]+", folder.name[len(project) + 1:])]
    return sorted(found, key=lambda item: Version(item[0]))


def pages_of(tree: Path, *, keep: int, seed: str) -> list[Path]:
    """The release's pages: every release-notes page and `keep` others, chosen by a hash of their path."""
    every = sorted(path for path in tree.rglob("*") if path.is_file() and path.suffix in SUFFIXES)
    notes = [path for path in every if NOTES_NAME.search(str(path.relative_to(tree)))]
    others = sorted((path for path in every if path not in notes),
                    key=lambda path: hashlib.sha256(f"{seed}|{path.relative_to(tree)}".encode()).hexdigest())
    return sorted(notes + others[:keep])


def _latin(text: str) -> str:
    return text.encode("latin-1", "replace").decode("latin-1")


def pdf_chapter(title: str, pages: list, exported: datetime) -> bytes:
    """One PDF chapter: its title, then each page's title and sections, headings larger than text."""
    from fpdf import FPDF

    pdf = FPDF()
    pdf.set_creation_date(exported)
    pdf.set_auto_page_break(True, margin=15)
    pdf.add_page()
    pdf.set_font("Helvetica", size=22)
    pdf.multi_cell(0, 12, _latin(title), new_x="LMARGIN", new_y="NEXT")
    for page in pages:
        pdf.set_font("Helvetica", size=17)
        pdf.multi_cell(0, 10, _latin(page.parsed.title or "Untitled"), new_x="LMARGIN", new_y="NEXT")
        for section in page.parsed.sections:
            if section.level and len(section.heading_path) > 1:
                pdf.set_font("Helvetica", size=14 if section.level <= 2 else 13)
                pdf.multi_cell(0, 8, _latin(section.heading_path[-1]), new_x="LMARGIN", new_y="NEXT")
            pdf.set_font("Helvetica", size=10)
            for paragraph in section.text.split("\n\n"):
                text = _latin(" ".join(paragraph.split()))[:3000]
                if text:
                    pdf.multi_cell(0, 5, text, new_x="LMARGIN", new_y="NEXT")
                    pdf.ln(2)
    return bytes(pdf.output())


def _text(page) -> str:  # noqa: ANN001 - markup.Page
    return "\n\n".join(section.text for section in page.parsed.sections)


def html_page(page, exported: datetime) -> bytes:  # noqa: ANN001 - markup.Page
    from html import escape

    parts = [f"<!doctype html><html><head><title>{escape(page.parsed.title or '')}</title>"
             f'<meta name="date" content="{exported:%Y-%m-%dT%H:%M:%SZ}"></head><body>'
             f"<h1>{escape(page.parsed.title or '')}</h1>"]
    for section in page.parsed.sections:
        if section.level and len(section.heading_path) > 1:
            level = min(6, max(2, section.level))
            parts.append(f"<h{level}>{escape(section.heading_path[-1])}</h{level}>")
        parts += [f"<p>{escape(paragraph)}</p>" for paragraph in section.text.split("\n\n") if paragraph.strip()]
    return ("\n".join(parts) + "</body></html>").encode()


def _name(rng: random.Random, suffix: str) -> str:
    """A neutral name: nothing of the source's file name ("release-3.3.2") may tell the release."""
    return f"{rng.getrandbits(64):016x}{suffix}"


def pile_build(*, docs: Path, out: Path, project: str, release_dates: dict[str, str], keep: int, seed: int) -> dict:
    """Write the project's pile under out/<project>/corpus; returns its listing (also files.json)."""
    releases = releases_of(docs, project)[-4:]
    rng = random.Random(f"{seed}|{project}")
    forms = list(FORMS)
    rng.shuffle(forms)
    corpus = out / project / "corpus"
    corpus.mkdir(parents=True, exist_ok=True)
    listing: dict[str, dict] = {}
    texts: dict[tuple[str, str], tuple[str, str]] = {}  # (release, page's path in its tree) -> (file, its text)
    now = time.time()
    for index, (release, tree) in enumerate(releases):
        form = forms[index % len(forms)]
        released = datetime.fromisoformat(release_dates[release]).replace(tzinfo=UTC)
        exported = released + timedelta(days=rng.randint(30, 420), hours=rng.randint(0, 23))
        pages = []
        for path in pages_of(tree, keep=keep, seed=f"{seed}|{project}"):
            try:
                pages.append((path, page_read(path, path.read_bytes())))
            except (ParseError, UnicodeDecodeError, ValueError):
                continue
        written: list[tuple[str, bytes, float, str]] = []
        if form == "pdf":
            chapters: dict[str, list] = {}
            for path, page in pages:
                top = path.relative_to(tree).parts[1] if len(path.relative_to(tree).parts) > 2 else "guide"
                chapters.setdefault(Path(top).stem, []).append((path, page))
            for chapter, members in sorted(chapters.items()):
                title = f"{project.capitalize()} documentation: {chapter.replace('_', ' ')}"
                name = _name(rng, ".pdf")
                written.append((name, pdf_chapter(title, [page for _path, page in members], exported),
                                exported.timestamp(), "pdf_creationdate"))
                texts.update({(release, str(path.relative_to(tree))): (name, _text(page)) for path, page in members})
        else:
            for path, page in pages:
                if form == "docx":  # an untitled page's Word file is untitled, not named by its source file
                    data = to_docx(page, title=page.parsed.title or "Untitled", created=exported - timedelta(hours=2),
                                   modified=exported, revision=1, author="Documentation team")
                    written.append((_name(rng, ".docx"), data, exported.timestamp(), "office_modified"))
                elif form == "html":
                    written.append((_name(rng, ".html"), html_page(page, exported), exported.timestamp(),
                                    "html_meta_date"))
                elif form == "md":
                    written.append((_name(rng, ".md"), to_markdown(page, frontmatter={}).encode(), now, "mtime"))
                else:
                    archived = released - timedelta(days=rng.randint(0, 60), seconds=rng.randint(0, 86399))
                    written.append((_name(rng, path.suffix), path.read_bytes(), archived.timestamp(), "mtime"))
                texts[(release, str(path.relative_to(tree)))] = (written[-1][0], _text(page))
        for name, data, mtime, source in written:
            target = corpus / name
            target.write_bytes(data)
            os.utime(target, (mtime, mtime))
            listing[name] = {"project": project, "release": release, "form": form, "date_source": source,
                             "exported": exported.isoformat() if form in ("pdf", "docx", "html") else ""}
    for stray in corpus.iterdir():
        if stray.name not in listing:
            stray.unlink()
    (out / project / "files.json").write_text(json.dumps(listing, indent=1, sort_keys=True) + "\n")
    questions = pile_questions(project, texts, [release for release, _tree in releases], seed=seed)
    (out / project / "ground_truth.json").write_text(json.dumps(questions, indent=1) + "\n")
    (out / project / "release_dates.json").write_text(json.dumps(release_dates, indent=1, sort_keys=True) + "\n")
    return listing


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--docs", type=Path, default=ROOT / "var" / "bench" / "docs-corpus")
    parser.add_argument("--out", type=Path, default=ROOT / "var" / "exports")
    parser.add_argument("--project", action="append", required=True)
    parser.add_argument("--release-dates", type=Path, required=True,
                        help="JSON: project -> {version: 'YYYY-MM-DD'} (PyPI's first upload of each release)")
    parser.add_argument("--pages", type=int, default=60, help="pages per release besides its release notes")
    parser.add_argument("--seed", type=int, default=SEED)
    args = parser.parse_args()
    dates = json.loads(args.release_dates.read_text())
    for project in args.project:
        listing = pile_build(docs=args.docs, out=args.out, project=project, release_dates=dates[project],
                             keep=args.pages, seed=args.seed)
        forms = sorted({(entry["release"], entry["form"]) for entry in listing.values()})
        print(f"{project}: {len(listing)} files; " + ", ".join(f"{release} as {form}" for release, form in forms))
    return 0


if __name__ == "__main__":
    sys.exit(main())
