#!/usr/bin/env python3
"""Write the template-pile corpus of issue 42 (demo/siblings/): siblings made from five templates, true versions of
a few of them, the ground truth and the frozen questions.

    python demo/siblings/make_corpus.py            # rewrite corpus/, files.json and questions.json
    python demo/siblings/make_corpus.py --check    # exit 1 when the committed files differ from what it writes

Siblings share a template's title and most of its text and name another subject (a customer, a hire, a project,
a product, a country); they are not versions of one another. True versions (an amended and restated agreement,
a policy's 2025 edition, a datasheet's revision B) are. The output is deterministic (one seed, fixed zip times
in the .docx files), so tests/demo/test_siblings_corpus.py can hold the committed corpus to it: nobody edits the
corpus by hand. Questions that the texts make ambiguous (another sibling states the same value) are refused here,
before they are frozen.

files.json, per file (path relative to corpus/): template, subject, version_group (files that are versions of one
another share it), edition (1 the oldest), edition_label, date, mtime (the date the file system should carry:
.txt files have no other; benchmarks/eval_siblings.py applies it), format, title, and facts (per field: the text
as written, its answer pattern and a comparable value).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import sys
from datetime import datetime
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
sys.path.insert(0, str(ROOT))  # run as a script: the template modules are imported from the repository

from demo.siblings import agreements, datasheets, offers, policies, sows  # noqa: E402
from demo.siblings.common import Doc, slug  # noqa: E402
from demo.siblings.formats import file_text, render  # noqa: E402
from demo.siblings.questions import Texts, across, candidates, questions_check, select  # noqa: E402

SEED = 4242
CORPUS = HERE / "corpus"
FILES = HERE / "files.json"
QUESTIONS = HERE / "questions.json"

TEMPLATES = (agreements, offers, sows, datasheets, policies)
FOLDERS = {"service_agreement": "contracts", "offer_letter": "hr/offers", "statement_of_work": "projects",
           "product_datasheet": "products", "country_policy": "policies"}
# Share of each format per template: mostly Markdown, Word for letters, HTML for what lives on the intranet.
FORMATS = {
    "service_agreement": {"md": 70, "txt": 12, "docx": 10, "html": 8},
    "offer_letter": {"md": 55, "docx": 25, "txt": 12, "html": 8},
    "statement_of_work": {"md": 70, "txt": 10, "docx": 10, "html": 10},
    "product_datasheet": {"md": 55, "html": 30, "txt": 10, "docx": 5},
    "country_policy": {"md": 65, "html": 20, "txt": 10, "docx": 5},
}
NOUNS = {"service_agreement": ("agreement", "Service Agreement"), "offer_letter": ("offer", "Offer Letter"),
         "statement_of_work": ("sow", "Statement of Work"), "product_datasheet": ("datasheet", "Datasheet"),
         "country_policy": ("policy", "Employment Policy")}


def _layout(docs: list[Doc], rng: random.Random) -> None:
    """Give each document a format and a path: named by its subject, generically ("agreement (3).md") or by a hash;
    a few land in inbox/ whatever they are. No two files share a base name."""
    generic_numbers: dict[str, int] = {}
    taken: set[str] = set()
    for doc in docs:
        weights = FORMATS[doc.template]
        doc.fmt = rng.choices(list(weights), weights=list(weights.values()))[0]
        noun, display = NOUNS[doc.template]
        folder = "inbox" if rng.random() < 0.08 else FOLDERS[doc.template]
        style = rng.choices(["subject", "generic", "hashed"], weights=[45, 35, 20])[0]
        suffix = "" if doc.edition == 1 else "-amended" if doc.template == "service_agreement" \
            else "-" + slug(doc.edition_label)
        if style == "subject":
            stem = f"{slug(doc.subject)}-{noun}{suffix}"
        elif style == "generic":
            generic_numbers[doc.template] = generic_numbers.get(doc.template, 0) + rng.randint(1, 3)
            stem = f"{rng.choice([noun, display])} ({generic_numbers[doc.template]})"
        else:
            stem = hashlib.sha1(f"{doc.version_group}/{doc.edition}".encode()).hexdigest()[:10]
        while f"{stem}.{doc.fmt}" in taken:  # base names are unique: the family figures match files by name
            stem += " copy"
        taken.add(f"{stem}.{doc.fmt}")
        doc.path = f"{folder}/{stem}.{doc.fmt}"
        if doc.fmt == "md":
            if rng.random() < 0.1:
                doc.frontmatter["date"] = f"{doc.doc_date.isoformat()}T09:00:00"
            if rng.random() < 0.4:
                doc.frontmatter["author"] = rng.choice(["Legal", "HR", "Product management", "PMO", "K. Nordmann"])
            if rng.random() < 0.3:
                doc.frontmatter["status"] = rng.choice(["final", "signed", "approved"])


def build() -> dict[str, bytes]:
    """Every output file (corpus/..., files.json, questions.json) as bytes, from the seed alone."""
    rng = random.Random(SEED)
    docs = [doc for template in TEMPLATES for doc in template.build(rng)]
    _layout(docs, rng)
    outputs = {f"corpus/{doc.path}": render(doc) for doc in docs}
    listing = {doc.path: _entry(doc) for doc in sorted(docs, key=lambda doc: doc.path)}
    texts = Texts({path[len("corpus/"):]: file_text(path, data) for path, data in outputs.items()})
    askable = [question for question in candidates(listing, rng)
               if not questions_check([question], texts, listing)]
    chosen = select(askable, rng) + across(listing)
    questions = []
    counters: dict[str, int] = {}
    for question in chosen:
        prefix = {"current": "s", "version": "v", "across": "a"}[question["kind"]]
        counters[prefix] = counters.get(prefix, 0) + 1
        question = {"id": f"{prefix}{counters[prefix]:03d}", **{k: v for k, v in question.items() if k != "phrasing"}}
        questions.append(question)
    problems = questions_check(questions, texts, listing)
    if problems:
        raise SystemExit("the chosen questions are not askable:\n  " + "\n  ".join(problems))
    outputs["files.json"] = (json.dumps(listing, indent=1, ensure_ascii=False) + "\n").encode("utf-8")
    outputs["questions.json"] = (json.dumps(questions, indent=1, ensure_ascii=False) + "\n").encode("utf-8")
    return outputs


def _entry(doc: Doc) -> dict:
    return {
        "template": doc.template, "subject": doc.subject, "short_subject": doc.short_subject,
        "version_group": doc.version_group, "edition": doc.edition, "edition_label": doc.edition_label,
        "date": doc.doc_date.isoformat(), "mtime": f"{doc.doc_date.isoformat()}T12:00:00+00:00", "format": doc.fmt,
        "title": doc.title,
        "facts": {field: {"text": fact.text, "pattern": fact.pattern, "value": fact.value}
                  for field, fact in doc.facts.items()},
    }


def mtimes_apply(corpus: Path, listing: dict[str, dict]) -> None:
    """Give every file its date as modification time: a checkout stamps them all with the time of checkout, and
    a .txt file has no other date."""
    for path, entry in listing.items():
        target = corpus / path
        if target.exists():
            stamp = datetime.fromisoformat(entry["mtime"]).timestamp()
            os.utime(target, (stamp, stamp))


def committed_differences(outputs: dict[str, bytes]) -> list[str]:
    """Files that differ between the generator's outputs and what is committed under demo/siblings/."""
    committed = {path.relative_to(HERE).as_posix() for path in CORPUS.rglob("*") if path.is_file()}
    committed |= {name for name in ("files.json", "questions.json") if (HERE / name).exists()}
    differences = [f"missing: {name}" for name in sorted(set(outputs) - committed)]
    differences += [f"not generated: {name}" for name in sorted(committed - set(outputs))]
    differences += [f"differs: {name}" for name in sorted(set(outputs) & committed)
                    if (HERE / name).read_bytes() != outputs[name]]
    return differences


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--check", action="store_true", help="compare with the committed files, write nothing")
    args = parser.parse_args()
    outputs = build()
    if args.check:
        differences = committed_differences(outputs)
        for difference in differences:
            print(difference)
        return 1 if differences else 0
    for stray in [path for path in CORPUS.rglob("*") if path.is_file()] if CORPUS.exists() else []:
        if stray.relative_to(HERE).as_posix() not in outputs:
            stray.unlink()
    for name, data in outputs.items():
        target = HERE / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
    listing = json.loads(outputs["files.json"])
    mtimes_apply(CORPUS, listing)
    questions = json.loads(outputs["questions.json"])
    kinds = {kind: sum(q["kind"] == kind for q in questions) for kind in ("current", "version", "across")}
    print(f"{len(listing)} files, {len({e['version_group'] for e in listing.values()})} version groups; "
          f"questions: {kinds}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
