"""Training questions for the answer ranker (chat/answer_ranker.json), written from the corpora's own statements.

    .venv/bin/python demo/answer_training/build.py [--real-corpus var/real-corpus/corpus] [--out FILE]

Each statement of a corpus that states a value (a version, a duration, a size, a number with its unit, a
default, a path, a setting or a command) gives one question, templated by what the value is ("How long is
the ... ?", "Which version of ... ?", "What is the default ... ?", "Which command ... ?"), whose subject
is the statement's rarest words and its section's title: the words a reader would ask with, never the value.
The statement is the correct unit; `benchmarks/train_answer_ranker.py` asks each question of an indexed
workspace and reads the candidate units the answerer would choose among.

Kept apart from every frozen evaluation set: a question whose content words overlap any frozen question's
(demo, siblings, formats, Sphinx, scale held-out / older / latest, git versions) by half or more is dropped,
and none of their questions is ever written here.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import re
import sys
from collections import Counter
from pathlib import Path
from types import SimpleNamespace

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

import django  # noqa: E402

django.setup()

from chat.extractive import answer_units, content_words  # noqa: E402
from chat.questions import values_in  # noqa: E402
from rag.facts import extract_facts  # noqa: E402
from rag.chunking import chunk_document  # noqa: E402
from rag.parsers import detect_format, parse_document  # noqa: E402

FROZEN = [
    ROOT / "demo" / "ground_truth.json", ROOT / "demo" / "siblings" / "questions.json",
    ROOT / "demo" / "formats" / "ground_truth.json", ROOT / "demo" / "real" / "ground_truth.json",
    ROOT / "demo" / "real" / "latest_release_questions.json", ROOT / "demo" / "scale" / "heldout_questions.json",
    ROOT / "demo" / "scale" / "older_release_questions.json", ROOT / "demo" / "scale" / "latest_release_questions.json",
    ROOT / "benchmarks" / "git_version_questions.json",
]
TEMPLATES = {
    "version": ["Which version of {subject} is needed?", "What {subject} version should I use?",
                "Which {subject} release is it?"],
    "duration": ["How long is the {subject}?", "How long until {subject}?", "What is the {subject} period?"],
    "amount": ["What is the {subject} limit?", "How much is the {subject}?", "How many for {subject}?"],
    "default": ["What is the default {subject}?", "What does {subject} default to?", "What is {subject} by default?"],
    "command": ["Which command do I run to {subject}?", "What command is used for {subject}?"],
    "name": ["Which setting controls {subject}?", "What is the path for {subject}?", "What is {subject} called?"],
}
_SECTION_NUMBER = re.compile(r"^[\d.]+\s+|^(?:step|chapter|section)\s+\d+[:.]?\s*", re.IGNORECASE)
_COMMAND = re.compile(r"`[^`]*\s[^`]*`|\$ \w|\b(?:run|execute|invoke)\b", re.IGNORECASE)


def frozen_questions() -> list[set[str]]:
    """The content words of every frozen evaluation question that exists here."""
    found = []
    for path in [*FROZEN, *ROOT.glob("var/*/ground_truth.json"), *ROOT.glob("var/*/*/ground_truth.json")]:
        if path.exists():
            data = json.loads(path.read_text(encoding="utf-8"))
            entries = data if isinstance(data, list) else data.get("questions", [])
            found += [content_words(entry["question"]) for entry in entries if isinstance(entry, dict)
                      and entry.get("question")]
    return found


def value_kind(text: str) -> str:
    """What a statement's value is: one of TEMPLATES' keys, or "" (nothing a value question would ask for)."""
    if re.search(r"\bdefaults?\b", text, re.IGNORECASE) and values_in(text):
        return "default"
    kinds = {fact.kind for fact in extract_facts(text)}
    if "version" in kinds:
        return "version"
    if "duration" in kinds:
        return "duration"
    if kinds & {"size", "percent", "number"}:
        return "amount"
    if not values_in(text):
        return ""
    return "command" if _COMMAND.search(text) else "name"


def subject_words(text: str, heading: str, frequency: Counter, documents: int) -> str:
    """The statement's two or three rarest words (never its values), in reading order, after its section title."""
    values = {word for value in values_in(text) for word in content_words(value)}
    words = [w for w in dict.fromkeys(re.findall(r"[A-Za-z][\w.-]*[A-Za-z0-9]", text))
             if w.lower() not in values and w.lower() in content_words(w) and len(w) > 3]
    rarity = {w: math.log(documents / (1 + frequency[w.lower()])) for w in words}
    chosen = set(sorted(words, key=lambda w: -rarity[w])[:3])
    title = _SECTION_NUMBER.sub("", heading.split(">")[-1].strip()) if heading else ""
    title = title if 0 < len(title.split()) <= 5 else ""
    picked = [w for w in words if w in chosen and w.lower() not in title.lower()]
    return " ".join([title, *picked]).strip()


def corpus_chunks(folder: Path) -> list[tuple[str, str, str]]:
    """(path relative to the corpus, heading path, text) of every chunk of every file that parses."""
    chunks = []
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        try:
            detect_format(path)
            parsed = parse_document(path, path.read_bytes())
        except Exception:  # noqa: BLE001 - a file that does not parse teaches nothing
            continue
        chunks += [(str(path.relative_to(folder)), c.heading_path, c.text) for c in chunk_document(parsed)]
    return chunks


def build(corpora: dict[str, Path], *, per_corpus: int, seed: int = 36) -> list[dict]:
    frozen = frozen_questions()
    pick = random.Random(seed)
    questions: list[dict] = []
    for name, folder in corpora.items():
        chunks = corpus_chunks(folder)
        frequency = Counter(w for _path, _heading, text in chunks for w in content_words(text))
        found: list[dict] = []
        seen: set[str] = set()
        for number, (path, heading, text) in enumerate(chunks):
            result = SimpleNamespace(chunk_id=number, heading_path=heading, text=text)
            for unit in answer_units([result]):
                kind = value_kind(unit.text)
                if not kind or unit.text in seen:
                    continue
                subject = subject_words(unit.text, heading or "", frequency, len(chunks))
                if len(subject.split()) < 2:
                    continue
                question = pick.choice(TEMPLATES[kind]).format(subject=subject)
                words = content_words(question)
                if any(len(words & other) / max(1, len(words | other)) >= 0.5 for other in frozen):
                    continue  # near a frozen evaluation question: never trained on
                seen.add(unit.text)
                found.append({"corpus": name, "question": question, "kind": kind, "path": path,
                              "heading_path": heading, "statement": unit.text, "values": values_in(unit.text)[:3]})
        pick.shuffle(found)
        questions += found[:per_corpus]
    return questions


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--real-corpus", type=Path, default=ROOT / "var" / "real-corpus" / "corpus",
                        help="the Sphinx corpus (demo/real/build_corpus.py); skipped when absent")
    parser.add_argument("--per-corpus", type=int, default=300)
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "questions.json")
    args = parser.parse_args()
    corpora = {"demo": ROOT / "demo" / "corpus", "siblings": ROOT / "demo" / "siblings" / "corpus"}
    if args.real_corpus.is_dir():
        corpora["real"] = args.real_corpus
    questions = build(corpora, per_corpus=args.per_corpus)
    args.out.write_text(json.dumps(questions, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    counts = Counter((q["corpus"], q["kind"]) for q in questions)
    print(f"{len(questions)} questions -> {args.out}: " + ", ".join(f"{c}/{k} {n}" for (c, k), n in sorted(counts.items())))


if __name__ == "__main__":
    main()
