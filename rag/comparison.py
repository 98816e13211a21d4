"""Two versions of a document side by side: sections added, removed and changed, the changed words marked.

Compares what was indexed (chunks grouped by their section heading), so any two formats compare; the
compare page (rag.views) reads it for two documents a selector already scoped to the user.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from difflib import SequenceMatcher

from rag.facts import highlight_segments
from rag.releases import strip_versions
from rag.models import Document


@dataclass
class SectionChange:
    heading: str
    old_segments: list[tuple[str, bool]] = field(default_factory=list)  # (text, changed) runs
    new_segments: list[tuple[str, bool]] = field(default_factory=list)


@dataclass
class Comparison:
    older: Document
    newer: Document
    added: list[SectionChange]
    removed: list[SectionChange]
    changed: list[SectionChange]
    unchanged: int


_WORD = re.compile(r"\S+")
_MAX_OVERLAP_WORDS = 60  # chunks of one section overlap by a few dozen words (rag.chunking)


def _section_key(heading_path: str) -> str:
    """The heading below the title, versions stripped: the same section in another version has the same key."""
    parts = [part for part in heading_path.split(" > ") if part.strip()]
    return " > ".join(strip_versions(part) for part in parts[1:])


def _joined(texts: list[str]) -> str:
    """Chunk texts of one section as one text, without the overlap that chunking repeats."""
    text = ""
    for chunk_text in texts:
        before, after = text.split(), chunk_text.split()
        overlap = next((n for n in range(min(_MAX_OVERLAP_WORDS, len(before), len(after)), 0, -1)
                        if before[-n:] == after[:n]), 0)
        text = f"{text}\n\n{' '.join(after[overlap:])}" if overlap else f"{text}\n\n{chunk_text}"
    return text.strip()


def _sections(document: Document) -> dict[str, tuple[str, str]]:
    """key -> (heading as this version names it, text), in document order."""
    grouped: dict[str, tuple[str, list[str]]] = {}
    for heading_path, text in document.chunks.order_by("chunk_index").values_list("heading_path", "text"):
        heading = " > ".join(heading_path.split(" > ")[1:]) or "(top of the document)"
        grouped.setdefault(_section_key(heading_path), (heading, []))[1].append(text)
    return {key: (heading, _joined(texts)) for key, (heading, texts) in grouped.items()}


def _word_changes(old: str, new: str) -> tuple[list[tuple[str, bool]], list[tuple[str, bool]]]:
    """Both texts cut into runs, the words that differ marked, for the template to escape and wrap."""
    old_words, new_words = list(_WORD.finditer(old)), list(_WORD.finditer(new))
    matcher = SequenceMatcher(None, [w.group() for w in old_words], [w.group() for w in new_words], autojunk=False)
    old_spans, new_spans = [], []
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag != "equal" and i2 > i1:
            old_spans.append([old_words[i1].start(), old_words[i2 - 1].end()])
        if tag != "equal" and j2 > j1:
            new_spans.append([new_words[j1].start(), new_words[j2 - 1].end()])
    return highlight_segments(old, old_spans), highlight_segments(new, new_spans)


def _in_order(first: Document, second: Document) -> tuple[Document, Document]:
    """Older first: by family position within one family, else by date."""
    if first.family_id and first.family_id == second.family_id and None not in (first.family_position,
                                                                               second.family_position):
        return (first, second) if first.family_position <= second.family_position else (second, first)
    dates = [d.doc_date.timestamp() if d.doc_date else float("-inf") for d in (first, second)]
    return (first, second) if dates[0] <= dates[1] else (second, first)


def document_comparison(*, first: Document, second: Document) -> Comparison:
    """Sections added, removed and changed from the older of two documents to the newer, words marked."""
    older, newer = _in_order(first, second)
    old_sections, new_sections = _sections(older), _sections(newer)
    added = [SectionChange(heading, new_segments=[(text, False)])
             for key, (heading, text) in new_sections.items() if key not in old_sections]
    removed = [SectionChange(heading, old_segments=[(text, False)])
               for key, (heading, text) in old_sections.items() if key not in new_sections]
    changed, unchanged = [], 0
    for key, (heading, text) in new_sections.items():
        if key not in old_sections:
            continue
        old_text = old_sections[key][1]
        if old_text.split() == text.split():
            unchanged += 1
        else:
            changed.append(SectionChange(heading, *_word_changes(old_text, text)))
    return Comparison(older=older, newer=newer, added=added, removed=removed, changed=changed, unchanged=unchanged)
