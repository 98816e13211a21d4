"""A question that names a subject ("What monthly fee does Acme Corp pay?") is about that subject's documents.

Siblings (one template filled in for many subjects, rag.lineage.subjects) say the same things in the same words:
the fee passage of every customer's agreement is as close to the question as Acme's. What tells Acme's apart is
the document it is in. So where a question names a subject of the workspace (its words, in order, typos
forgiven), the search adds a list of that subject's own passages, and passages of other subjects' documents give
way; documents without a subject are untouched.
"""

from __future__ import annotations

import re
from difflib import SequenceMatcher

from django.db import connection

from rag.index_cache import index_cached
from rag.models import Document

_WORD = re.compile(r"\w+")
_NAMES_JOINER = "; "  # how a document's subject lists its names (rag.lineage.siblings)
_TYPO_RATIO = 0.8  # "Acme Crop" names "Acme Corp"; short words must match exactly
_TYPO_MIN_LENGTH = 4


def _words(text: str) -> list[str]:
    return [word.casefold() for word in _WORD.findall(text)]


def _same_word(asked: str, name: str) -> bool:
    if asked == name:
        return True
    return min(len(asked), len(name)) >= _TYPO_MIN_LENGTH and SequenceMatcher(None, asked, name).ratio() >= _TYPO_RATIO


def _names(asked: list[str], name: list[str]) -> bool:
    """Whether the question's words hold the name's words in order, side by side."""
    if not name or len(name) > len(asked):
        return False
    return any(all(_same_word(asked[start + index], word) for index, word in enumerate(name))
               for start in range(len(asked) - len(name) + 1))


def workspace_subjects(*, workspace_id: int) -> dict[str, list[int]]:
    """Each subject of the workspace's active documents -> those documents (read once per change of the
    workspace: every scope of every question asks)."""
    return index_cached("subjects", workspace_id=workspace_id, compute=lambda: _subjects(workspace_id))


def _subjects(workspace_id: int) -> dict[str, list[int]]:
    table = Document._meta.db_table
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT subject, array_agg(id ORDER BY id) FROM {table} WHERE workspace_id = %s "
                       "AND subject <> '' AND NOT archived AND status = 'indexed' GROUP BY subject", [workspace_id])
        return {subject: list(ids) for subject, ids in cursor.fetchall()}


def _distinctive(word: str) -> bool:
    """A word that can name on its own: a model's code ("x200") or a longer word ("lopez", "acme")."""
    return (any(ch.isdigit() for ch in word) and any(ch.isalpha() for ch in word)) or len(word) >= _TYPO_MIN_LENGTH


def subjects_named(question: str, subjects: dict[str, list[int]]) -> dict[str, list[int]]:
    """The subjects one of whose names the question names (a statement of work's customer or project alike):
    the whole name in order ("Acme Corp"), or a word of it that no other subject's names hold ("the X200",
    "Lopez's start date")."""
    asked = _words(question)
    names = {subject: [_words(name) for name in subject.split(_NAMES_JOINER)] for subject in subjects}
    holders: dict[str, set[str]] = {}
    for subject, words in names.items():
        for word in {word for name in words for word in name}:
            holders.setdefault(word, set()).add(subject)
    named = {}
    for subject, documents in subjects.items():
        whole = any(_names(asked, name) for name in names[subject])
        own = any(_names(asked, [word]) for name in names[subject] for word in name
                  if _distinctive(word) and holders[word] == {subject})
        if whole or own:
            named[subject] = documents
    return named


def demote_other_subjects(candidates: list, named_documents: set[int], *, demotion: float) -> None:
    """Passages of another subject's document give way to the named subject's (best first again)."""
    for candidate in candidates:
        if candidate.row.get("subject") and candidate.row["document_id"] not in named_documents:
            candidate.score *= demotion
    candidates.sort(key=lambda candidate: -candidate.score)


def different_subjects(a: dict, b: dict) -> bool:
    """Two passages of two subjects' documents (two customers' agreements): never one another's duplicate."""
    return bool(a.get("subject") and b.get("subject") and a["subject"] != b["subject"] and a["text"] != b["text"])
