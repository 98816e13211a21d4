"""How an answer names whom and which release it speaks for, and says no other release's figure first."""

from __future__ import annotations

import re

from rag.releases import version_key

# A table row whose columns are releases, as the readers write it: "Maximum request body: 2.0: 10 MB; 2.1: 25 MB."
# "2.1: 25 MB" or, where a table's header names what each release column holds, "2.1 default: 25 MB".
_RELEASE_CELL = re.compile(r"(v?\d+(?:\.\d+)+)(?:\s+([a-z]+))?\s*:\s*([^;]+?)\s*(?:;\s*|\.?\s*$)")


def row_for_release(text: str, label: str = "") -> str:
    """A row that gives each release its value, cut to the asked release's cell ("Maximum request body:
    25 MB." for 2.1), or to the newest one when no release is asked ("Database pool size (3.0): 20."):
    the asked value leads, never another release's. Any other text is returned as it is."""
    name, colon, rest = text.partition(": ")
    rest = rest.strip()
    if not colon or not name.strip() or re.fullmatch(r"v?\d+(?:\.\d+)+", name.strip()):
        return text
    cells, end = [], 0
    for match in _RELEASE_CELL.finditer(rest):
        if match.start() != end:
            return text  # something else than release cells in the row
        cells.append((match.group(1), " ".join(filter(None, match.group(2, 3)))))
        end = match.end()
    if len(cells) < 2 or end != len(rest) or not all(version_key(release) for release, _ in cells):
        return text
    if label:
        asked = [value for release, value in cells if version_key(release) == version_key(label)]
        return f"{name}: {asked[0]}." if asked else text
    release, value = max(cells, key=lambda cell: version_key(cell[0]))
    return f"{name} ({release}): {value}."


def version_said(label: str, statement: str) -> str:
    """"In 2.1: ...": a version question's answer says which release it answers from (one place to phrase it)."""
    return f"In {label}: {statement}"


def subject_said(subject: str, statement: str) -> str:
    """"Acme Corp: the Customer pays ...": a sibling's passage says "the Customer", the answer says which one.

    `subject` is the document's (rag.lineage.subjects); a statement that names it already is left as it is.
    """
    names = [name for name in subject.split("; ") if name]
    if not names or any(name.casefold() in statement.casefold() for name in names):
        return statement
    return f"{names[0]}: {statement}"


def without_subjects(question: str, subjects: set[str]) -> str:
    """The question less the subjects it names ("What is Maria Lopez's salary?" -> "What is salary?"): search
    found the subject's document; what the answer must state is the rest, not a sentence that names her."""
    for subject in sorted(subjects, key=len, reverse=True):
        for name in subject.split("; "):
            for word in sorted({word for word in re.findall(r"\w+", name) if len(word) > 1}, key=len, reverse=True):
                question = re.sub(rf"\b{re.escape(word)}(?:['’]s)?\b", " ", question, flags=re.IGNORECASE)
    return " ".join(question.split())
