"""Questions for an export pile (issue 50): facts a page states differently in the pile's releases.

The pile's releases ship the same pages, and a page's sentence that changed between two releases is a fact with
a current value (the newest release's) and older ones. For each such sentence pair (one word-span replaced,
the rest the same, found with difflib on the pages' parsed text):

- a current question asks the sentence with the changed span left out; the newest release's copy of the page
  must state the new span (`answer_patterns`), an older copy's span is stale (`outdated`);
- a question naming the older release ("In scrapy 2.6.3, ...", the project named as it writes its name) expects the older copy stating the old span,
  and counts the newest copy's span as leakage (`other_versions`).

Pure text over the pages the builder read (their paths inside the release's tree, their export file names):
what the questions expect is where each page went, never what Docent makes of it.
"""

from __future__ import annotations

import difflib
import hashlib
import re
from collections.abc import Mapping

from packaging.version import Version

# (release, path inside its tree) -> (export file name, the page's text)
Pages = Mapping[tuple[str, str], tuple[str, str]]
PARAGRAPH = re.compile(r"\n\s*\n")
SENTENCE = re.compile(r"(?<=[.!?])\s+")
WORD = re.compile(r"[a-z][a-z0-9]*|\d+(?:\.\d+)*")
WORDS = (8, 40)  # a sentence this long: a statement, not a heading or a code line
SIMILAR = 0.75  # the two sentences agree on this share of their words at least
SPAN = (1, 4)  # words replaced on each side
PER_PROJECT = 24
# Pages a release's notes are likely in: an old release's notes speak for that release, whatever a newer copy
# corrects in them, so no current fact is asked of them.
NOTES_NAME = re.compile(r"change|news|history|release|whatsnew|what_new|what-new", re.I)


def _sentences(text: str) -> list[str]:
    found = []
    for sentence in (sentence for paragraph in PARAGRAPH.split(text)
                     for sentence in SENTENCE.split(" ".join(paragraph.split()))):
        words = sentence.split()
        # Prose: a sentence of words, not code, a table or a list of names.
        if WORDS[0] <= len(words) <= WORDS[1] and sum(bool(re.fullmatch(r"[A-Za-z][a-z]*[,;:]?", w))
                                                     for w in words) >= 0.7 * len(words):
            found.append(sentence)
    return found


def _normal(text: str) -> str:
    return " ".join(text.lower().split())


def _plain(words: list[str]) -> bool:
    return all(re.fullmatch(r"[a-z0-9]+(?:\.[0-9]+)*", word) for word in words)


def changed_pair(new: str, old: str) -> tuple[str, str, str] | None:
    """(question stem, new span, old span) where `new` replaces one short span of `old`'s words, else None."""
    a, b = old.lower().rstrip(".!?").split(), new.lower().rstrip(".!?").split()
    matcher = difflib.SequenceMatcher(a=a, b=b, autojunk=False)
    if matcher.ratio() < SIMILAR:
        return None
    edits = [op for op in matcher.get_opcodes() if op[0] != "equal"]
    if len(edits) != 1 or edits[0][0] != "replace":
        return None
    _tag, i1, i2, j1, j2 = edits[0]
    old_span, new_span = a[i1:i2], b[j1:j2]
    if not (SPAN[0] <= len(old_span) <= SPAN[1] and SPAN[0] <= len(new_span) <= SPAN[1]):
        return None
    if not (_plain(old_span) and _plain(new_span)):
        return None
    # The span with a word of context on each side: specific enough to be that sentence's value.
    left, right = b[max(0, j1 - 1):j1], b[j2:j2 + 1]
    old_left, old_right = a[max(0, i1 - 1):i1], a[i2:i2 + 1]
    stem = " ".join(b[:j1] + b[j2:])
    return stem, " ".join(left + new_span + right), " ".join(old_left + old_span + old_right)


def pile_questions(project: str, pages: Pages, releases: list[str], *, seed: int) -> list[dict]:
    """The pile's current questions and its questions naming an older release (see the module docstring)."""
    newest = max(releases, key=Version)
    texts = {key: _normal(text) for key, (_name, text) in pages.items()}
    found: list[dict] = []
    seen_stems: set[str] = set()
    for (release, path), (name, text) in sorted(pages.items()):
        if release != newest or NOTES_NAME.search(path):
            continue
        older = {other: pages[(other, path)] for other in releases if other != newest and (other, path) in pages}
        for old_release, (old_name, old_text) in sorted(older.items(), key=lambda item: Version(item[0])):
            olds = _sentences(old_text)
            for sentence in _sentences(text):
                if _normal(sentence) in texts[(old_release, path)]:
                    continue
                best = max(olds, key=lambda old, s=sentence: difflib.SequenceMatcher(
                    a=old.split(), b=s.split(), autojunk=False).ratio(), default=None)
                pair = changed_pair(sentence, best) if best else None
                if pair is None:
                    continue
                stem, new_span, old_span = pair
                # The new value is the newest release's alone; the old one is not the newest's.
                if stem in seen_stems or old_span in texts[(newest, path)] or any(
                        new_span in texts[(other, path)] for other in older):
                    continue
                seen_stems.add(stem)
                stale = [{"path": older[other][0], "patterns": [old_span]} for other in sorted(older)
                         if old_span in texts[(other, path)]]
                key = hashlib.sha256(f"{seed}|{project}|{path}|{stem}".encode()).hexdigest()
                found.append({"key": key, "path": path, "stem": stem, "new": (name, new_span),
                              "old": (old_release, old_name, old_span), "stale": stale})
                break
    # One per page first (a page that changed much gives no more questions than another), in a seeded order.
    found.sort(key=lambda item: item["key"])
    chosen, pages_used = [], set()
    for item in found:
        if item["path"] not in pages_used:
            chosen.append(item)
            pages_used.add(item["path"])
    chosen = chosen[:PER_PROJECT]
    questions = []
    for index, item in enumerate(chosen, start=1):
        name, new_span = item["new"]
        old_release, old_name, old_span = item["old"]
        question = item["stem"][:1].upper() + item["stem"][1:] + "?"
        questions.append({"id": f"{project}-current-{index}", "kind": "current", "question": question,
                          "expected_path": name, "answer_patterns": [new_span], "outdated": item["stale"]})
        questions.append({"id": f"{project}-older-{index}", "kind": "version", "as_of": old_release,
                          "question": f"In {project} {old_release}, {question[:1].lower()}{question[1:]}",
                          "expected_path": old_name,
                          "answer_patterns": [old_span],
                          "other_versions": [{"path": name, "patterns": [new_span]}]})
    return questions
