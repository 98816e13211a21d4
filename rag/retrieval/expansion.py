"""Query expansion from a workspace's domain dictionary (QueryExpansion rows, edited in the admin), and the
workspace's vocabulary: the words its documents and dictionary use.

A question says "capacity", the reference says "max concurrent workflows": the
dictionary maps a term to the words the documents use instead. Expansions go to
the lexical side only (the full-text terms and the identifiers); the semantic
side already reads meaning, and a list of extra words would blur its vector.
The vocabulary is what a misspelt question word is corrected to (chat.followups).
"""

from __future__ import annotations

import re

from django.db import connection

from rag.index_cache import index_cached
from rag.models import Chunk, QueryExpansion


def expansions_for(question: str, *, workspace_id: int) -> list[str]:
    """The expansions of every dictionary term that the question contains as whole words, each once."""
    lowered = question.lower()
    found: dict[str, None] = {}
    for term, expansions in index_cached("dictionary", workspace_id=workspace_id,
                                         compute=lambda: _dictionary(workspace_id)):
        if term and re.search(rf"(?<!\w){re.escape(term)}(?!\w)", lowered):
            for expansion in expansions:
                found.setdefault(expansion, None)
    return list(found)


def _dictionary(workspace_id: int) -> list[tuple[str, list[str]]]:
    """(term in lower case, its expansions) of the workspace's dictionary."""
    return [(entry.term.strip().lower(), entry.expansion_list())
            for entry in QueryExpansion.objects.filter(workspace_id=workspace_id).only("term", "expansions")]


def _vocabulary_read(workspace_id: int) -> dict[str, int]:
    # ts_stat takes its query as text; the id is an int, so formatting it in is safe.
    statement = (f"SELECT to_tsvector('simple', heading_path || ' ' || text) FROM {Chunk._meta.db_table} "
                 f"WHERE workspace_id = {int(workspace_id)}")
    with connection.cursor() as cursor:
        cursor.execute("SELECT word, ndoc FROM ts_stat(%s) WHERE word ~ '^[a-z][a-z''-]*[a-z]$'", [statement])
        words = {word: count for word, count in cursor.fetchall()}
    for entry in QueryExpansion.objects.filter(workspace_id=workspace_id).only("term", "expansions"):
        for phrase in [entry.term, *entry.expansion_list()]:
            for word in re.findall(r"[a-z][a-z'-]*[a-z]", phrase.lower()):
                words[word] = words.get(word, 0) + 1
    return words


def workspace_vocabulary(*, workspace_id: int) -> dict[str, int]:
    """Every word of the workspace's passages, headings and dictionary, with how many passages use it.

    Read once per change of the workspace (rag.index_cache): a question must not pay for a scan of every passage.
    """
    return index_cached("vocabulary", workspace_id=workspace_id, compute=lambda: _vocabulary_read(workspace_id))
