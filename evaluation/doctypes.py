"""`make eval`'s document-type section: how often the automatic type is right, per type.

The labelled files are classified afresh with the workspace's rules (the admin's DocType rows)
and their path inside the corpus, so the figures follow the classifier as it is now, even
for files a rerun of the evaluation skips as unchanged. A file left untyped is not wrong:
it counts against coverage, not precision (a wrong type is what misleads the boost and the
filter; no type is merely no help).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rag.ingest import doc_type_rules, guess_doc_type, section_headings
from rag.parsers import ParseError, UnsupportedFormat, parse_document


@dataclass
class TypeFigures:
    labelled: int = 0  # files whose true type is this one
    right: int = 0
    wrong: int = 0  # given another type
    untyped: int = 0
    claimed: int = 0  # files the classifier gave this type, rightly or not

    @property
    def precision(self) -> float | None:
        return self.right / self.claimed if self.claimed else None

    @property
    def recall(self) -> float | None:
        return self.right / self.labelled if self.labelled else None


@dataclass
class DocTypeAccuracy:
    per_type: dict[str, TypeFigures] = field(default_factory=dict)
    evidence: Counter = field(default_factory=Counter)  # what decided the types given
    confusions: Counter = field(default_factory=Counter)  # (true, given) for wrong types
    unreadable: int = 0

    @property
    def total(self) -> TypeFigures:
        total = TypeFigures()
        for figures in self.per_type.values():
            for name in ("labelled", "right", "wrong", "untyped", "claimed"):
                setattr(total, name, getattr(total, name) + getattr(figures, name))
        return total


def doc_type_truth(listing: Any, labels: dict[str, str] | None = None) -> dict[str, str]:
    """Corpus path -> true type: demo/manifest.json carries `doc_type` per file; a real corpus's
    files.json maps flattened names to source paths, which `labels` (hand labels) types."""
    if isinstance(listing, dict) and "files" in listing:
        return {entry["path"]: entry["doc_type"] for entry in listing["files"] if entry.get("doc_type")}
    labels = labels or {}
    return {name: labels[entry["path"]] for name, entry in listing.items() if entry.get("path") in labels}


def doc_type_accuracy(*, corpus: Path, truth: dict[str, str]) -> DocTypeAccuracy:
    rules = doc_type_rules()
    accuracy = DocTypeAccuracy()
    for relative, expected in sorted(truth.items()):
        path = corpus / relative
        try:
            parsed = parse_document(path, path.read_bytes())
        except (OSError, ParseError, UnsupportedFormat):
            accuracy.unreadable += 1
            continue
        guess = guess_doc_type(path=relative, title=parsed.title, text=parsed.text,
                               frontmatter_type=parsed.doc_type, rules=rules,
                               headings=section_headings(parsed.sections))
        figures = accuracy.per_type.setdefault(expected, TypeFigures())
        figures.labelled += 1
        if guess.slug:
            accuracy.evidence[guess.evidence] += 1
            accuracy.per_type.setdefault(guess.slug, TypeFigures()).claimed += 1
        if not guess.slug:
            figures.untyped += 1
        elif guess.slug == expected:
            figures.right += 1
        else:
            figures.wrong += 1
            accuracy.confusions[(expected, guess.slug)] += 1
    return accuracy


def _share(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def format_doc_type_table(title: str, accuracy: DocTypeAccuracy) -> str:
    rows = [(slug, accuracy.per_type[slug]) for slug in sorted(accuracy.per_type)] + [("all", accuracy.total)]
    header = ["type", "labelled", "right", "wrong", "untyped", "typed as it", "precision", "recall"]
    body = [[slug, str(f.labelled), str(f.right), str(f.wrong), str(f.untyped), str(f.claimed), _share(f.precision),
             _share(f.recall)] for slug, f in rows]
    widths = [max(len(row[i]) for row in [header, *body]) for i in range(len(header))]
    lines = ["", f"{title}: document types (labelled files classified afresh; untyped is not wrong)"]
    lines += ["  " + "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True))
              for row in [header, *body]]
    evidence = ", ".join(f"{name} {count}" for name, count in accuracy.evidence.most_common()) or "none"
    lines.append(f"  types given by: {evidence}")
    if accuracy.confusions:
        lines.append("  wrong: " + ", ".join(f"{true} typed {given} x{count}"
                                             for (true, given), count in accuracy.confusions.most_common()))
    if accuracy.unreadable:
        lines.append(f"  unreadable labelled files: {accuracy.unreadable}")
    return "\n".join(lines)
