#!/usr/bin/env python3
"""Check demo/ground_truth.json and demo/manifest.json against demo/corpus/.

Usage (from the repository root):

    python demo/check_ground_truth.py

What is checked:

* every corpus file is listed in manifest.json and vice versa; .txt files
  carry an mtime; the date embedded in each file (frontmatter ``date``,
  AsciiDoc ``:revdate:``/``:date:``, reST ``:Date:``, HTML
  ``<meta name="date">``, PDF ``/CreationDate``) matches the manifest;
* every question has the expected fields, a unique id, an existing
  expected_path and outdated paths, and outdated versions older than the
  expected version;
* every answer pattern occurs in the expected document, and every outdated
  pattern occurs in its outdated document;
* questions of kind "version" (asked about one release, `as_of`) name that
  release in their text, their expected document is of that release, and
  every `other_versions` entry is a document of another release stating
  that release's different value;
* questions of kind "change" have two `sides`, old release then newer one,
  each a document of its release stating that release's value, and name the
  older release in their text.
  Patterns of every kind are checked the same way: Patterns are lower-case strings
  that must match both as a plain substring and as a Python regular
  expression, against the document text lower-cased with whitespace
  collapsed (PDF text comes from pdfplumber; other formats are read raw,
  markup included; HTML entities are decoded);
* all patterns of one entry occur close together (within WINDOW
  characters of the first pattern), i.e. plausibly in the same chunk.

Exits 0 when everything passes, 1 otherwise.
"""

from __future__ import annotations

import html
import json
import re
import sys
from functools import cache
from pathlib import Path

HERE = Path(__file__).resolve().parent
CORPUS = HERE / "corpus"
WINDOW = 1200  # characters either side of the first pattern
DOC_TYPES = {"api", "architecture", "operations", "troubleshooting", "user"}
VERSIONS = {"2.0": 0, "2.1": 1, "3.0": 2}
COMMON_FIELDS = {"id": str, "question": str, "answer": str, "doc_type": str, "trend": bool}
FIELDS = {
    "current": {**COMMON_FIELDS, "expected_path": str, "version": str, "answer_patterns": list, "outdated": list},
    "version": {**COMMON_FIELDS, "expected_path": str, "version": str, "as_of": str, "answer_patterns": list,
                "other_versions": list},
    "change": {**COMMON_FIELDS, "sides": list},
}

errors: list[str] = []


def fail(msg: str) -> None:
    errors.append(msg)


@cache
def raw_text(rel: str) -> str:
    path = CORPUS / rel
    if path.suffix.lower() == ".pdf":
        import pdfplumber

        with pdfplumber.open(path) as pdf:
            return "\n".join(page.extract_text() or "" for page in pdf.pages)
    return path.read_text(encoding="utf-8")


@cache
def norm_text(rel: str) -> str:
    text = raw_text(rel)
    if rel.lower().endswith((".html", ".htm")):
        text = html.unescape(text)
    return re.sub(r"\s+", " ", text).lower()


def positions(text: str, pattern: str) -> list[int]:
    return [m.start() for m in re.finditer(pattern, text)]


def check_patterns(rel: str, patterns: list[str], where: str) -> None:
    if not patterns:
        fail(f"{where}: empty pattern list")
        return
    if not (CORPUS / rel).is_file():
        fail(f"{where}: file not found: {rel}")
        return
    text = norm_text(rel)
    ok = True
    for p in patterns:
        if p != p.lower():
            fail(f"{where}: pattern not lower-case: {p!r}")
        try:
            rx_found = re.search(p, text) is not None
        except re.error as exc:
            fail(f"{where}: invalid regex {p!r}: {exc}")
            ok = False
            continue
        if p not in text or not rx_found:
            fail(f"{where}: pattern {p!r} not found in {rel} (substring={p in text}, regex={rx_found})")
            ok = False
    if ok and len(patterns) > 1:
        anchors = positions(text, patterns[0])
        if not any(
            all(any(abs(q - a) <= WINDOW for q in positions(text, p)) for p in patterns[1:])
            for a in anchors
        ):
            fail(f"{where}: patterns {patterns} are not within {WINDOW} chars of each other in {rel}")


def embedded_date(rel: str) -> str | None:
    suffix = Path(rel).suffix.lower()
    if suffix == ".pdf":
        import pdfplumber

        with pdfplumber.open(CORPUS / rel) as pdf:
            value = pdf.metadata.get("CreationDate", "")
        m = re.match(r"D:(\d{4})(\d{2})(\d{2})", value)
        return f"{m[1]}-{m[2]}-{m[3]}" if m else None
    text = raw_text(rel)
    head = "\n".join(text.splitlines()[:15])
    pattern = {
        ".md": r"^date:\s*(\d{4}-\d{2}-\d{2})",
        ".adoc": r"^:(?:revdate|date):\s*(\d{4}-\d{2}-\d{2})",
        ".rst": r"^:Date:\s*(\d{4}-\d{2}-\d{2})",
        ".html": r'<meta name="date" content="(\d{4}-\d{2}-\d{2})"',
    }.get(suffix)
    if pattern is None:
        return None
    m = re.search(pattern, head, re.M)
    return m[1] if m else None


def check_manifest() -> dict[str, dict]:
    manifest = json.loads((HERE / "manifest.json").read_text(encoding="utf-8"))
    entries = {e["path"]: e for e in manifest["files"]}
    on_disk = {p.relative_to(CORPUS).as_posix() for p in CORPUS.rglob("*") if p.is_file()}
    for missing in sorted(on_disk - entries.keys()):
        fail(f"manifest: corpus file not listed: {missing}")
    for extra in sorted(entries.keys() - on_disk):
        fail(f"manifest: listed file does not exist: {extra}")
    for rel, e in entries.items():
        if rel not in on_disk:
            continue
        if e.get("version") not in VERSIONS:
            fail(f"manifest {rel}: bad version {e.get('version')!r}")
        if e.get("doc_type") not in DOC_TYPES:
            fail(f"manifest {rel}: bad doc_type {e.get('doc_type')!r}")
        if rel.endswith(".txt"):
            if not str(e.get("mtime", "")).startswith(e["date"]):
                fail(f"manifest {rel}: .txt file needs an mtime on its date {e['date']}")
            if re.search(r"20\d\d-\d\d-\d\d", raw_text(rel)):
                fail(f"manifest {rel}: .txt file should carry no ISO date in its text")
        else:
            found = embedded_date(rel)
            if found != e["date"]:
                fail(f"manifest {rel}: embedded date {found} != manifest date {e['date']}")
        if not str(e.get("mtime", "")).startswith(e["date"]):
            fail(f"manifest {rel}: mtime {e.get('mtime')!r} does not fall on the date {e['date']}")
        if rel.endswith(".pdf"):
            import pdfplumber

            with pdfplumber.open(CORPUS / rel) as pdf:
                mod = pdf.metadata.get("ModDate", "")
            m = re.match(r"D:(\d{4})(\d{2})(\d{2})", mod)
            if not m or f"{m[1]}-{m[2]}-{m[3]}" != e.get("pdf_moddate"):
                fail(f"manifest {rel}: PDF ModDate {mod!r} != pdf_moddate {e.get('pdf_moddate')!r}")
    return entries


def check_version_entry(entry: dict, entries: dict[str, dict], where: str) -> None:
    """A {path, version, patterns} entry: a document of that release stating that release's value."""
    path = entry.get("path", "")
    if path in entries and entries[path]["version"] != entry.get("version"):
        fail(f"{where}: version {entry.get('version')} != manifest version of {path}")
    if entry.get("version") not in VERSIONS:
        fail(f"{where}: bad version {entry.get('version')!r}")
    check_patterns(path, entry.get("patterns", []), where)


def check_current(q: dict, entries: dict[str, dict]) -> None:
    qid, exp = q["id"], q.get("expected_path", "")
    for i, o in enumerate(q.get("outdated", [])):
        where = f"{qid} outdated[{i}]"
        if o.get("path") == exp:
            fail(f"{where}: outdated path equals expected path")
        if VERSIONS.get(o.get("version"), 99) >= VERSIONS.get(q.get("version"), -1):
            fail(f"{where}: outdated version {o.get('version')} is not older than {q.get('version')}")
        check_version_entry(o, entries, where)


def check_version(q: dict, entries: dict[str, dict]) -> None:
    qid = q["id"]
    if q.get("as_of") != q.get("version"):
        fail(f"{qid}: as_of {q.get('as_of')!r} != version {q.get('version')!r}")
    if q.get("as_of", "?") not in q.get("question", ""):
        fail(f"{qid}: the question does not name its release {q.get('as_of')!r}")
    if not q.get("other_versions"):
        fail(f"{qid}: a version question needs other_versions (what the other releases say)")
    for i, other in enumerate(q.get("other_versions", [])):
        where = f"{qid} other_versions[{i}]"
        if other.get("version") == q.get("as_of"):
            fail(f"{where}: same release as the question")
        if other.get("patterns") == q.get("answer_patterns"):
            fail(f"{where}: states the same value as the answer")
        check_version_entry(other, entries, where)


def check_change(q: dict, entries: dict[str, dict]) -> None:
    qid, sides = q["id"], q.get("sides", [])
    if len(sides) != 2:
        fail(f"{qid}: a change question needs exactly two sides (old, new)")
        return
    old, new = sides
    if VERSIONS.get(old.get("version"), 99) >= VERSIONS.get(new.get("version"), -1):
        fail(f"{qid}: sides must go from an older release to a newer one")
    if old.get("version", "?") not in q.get("question", ""):
        fail(f"{qid}: the question does not name the older release {old.get('version')!r}")
    for i, entry in enumerate(sides):
        check_version_entry(entry, entries, f"{qid} sides[{i}]")


def check_spellings(q: dict) -> None:
    """A wrong value is written the ways the right one may be: each `answer_accept` spelling ("15m" for
    "15 minutes") has its counterpart in every outdated and other-release entry's `accept` ("30m"), or an
    answer stating the wrong value so would still score accurate."""
    spellings = len(q.get("answer_accept", []))
    for field in ("outdated", "other_versions"):
        for i, entry in enumerate(q.get(field, [])):
            if len(entry.get("accept", [])) != spellings:
                fail(f"{q['id']} {field}[{i}]: {len(entry.get('accept', []))} accept spellings for the answer's "
                     f"{spellings}")


def check_ground_truth(entries: dict[str, dict]) -> list[dict]:
    questions = json.loads((HERE / "ground_truth.json").read_text(encoding="utf-8"))
    seen: set[str] = set()
    for q in questions:
        qid = q.get("id", "?")
        kind = q.get("kind", "current")
        if kind not in FIELDS:
            fail(f"{qid}: bad kind {kind!r}")
            continue
        for field, typ in FIELDS[kind].items():
            if not isinstance(q.get(field), typ):
                fail(f"{qid}: field {field!r} missing or not {typ.__name__}")
        if qid in seen:
            fail(f"{qid}: duplicate id")
        seen.add(qid)
        if q.get("doc_type") not in DOC_TYPES:
            fail(f"{qid}: bad doc_type {q.get('doc_type')!r}")
        if kind == "change":
            check_change(q, entries)
            continue
        exp = q.get("expected_path", "")
        if exp in entries and entries[exp]["version"] != q.get("version"):
            fail(f"{qid}: version {q.get('version')} != manifest version of {exp}")
        check_patterns(exp, q.get("answer_patterns", []), f"{qid} answer")
        (check_version if kind == "version" else check_current)(q, entries)
        check_spellings(q)
    return questions


def main() -> int:
    entries = check_manifest()
    questions = check_ground_truth(entries)
    current = [q for q in questions if q.get("kind", "current") == "current"]
    changed = sum(1 for q in current if q.get("outdated") and not q.get("trend"))
    stable = sum(1 for q in current if not q.get("outdated") and not q.get("trend"))
    trend = sum(1 for q in current if q.get("trend"))
    n_out = sum(len(q.get("outdated", [])) for q in current)
    version = sum(1 for q in questions if q.get("kind") == "version")
    change = sum(1 for q in questions if q.get("kind") == "change")
    print(f"corpus files: {len(entries)}")
    print(f"questions: {len(questions)}: current {len(current)} (changed: {changed}, stable/single-doc: {stable}, "
          f"trend: {trend}; outdated references: {n_out}), version-scoped {version}, change {change}")
    if errors:
        print(f"\nFAILED: {len(errors)} problem(s)")
        for e in errors:
            print(f"  - {e}")
        return 1
    print("OK: all patterns found, manifest consistent")
    return 0


if __name__ == "__main__":
    sys.exit(main())
