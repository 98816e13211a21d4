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
import threading
import time

from django.db import connection
from django.db.models import Count, Max

from rag.models import Chunk, Document, QueryExpansion


def expansions_for(question: str, *, workspace_id: int) -> list[str]:
    """The expansions of every dictionary term that the question contains as whole words, each once."""
    lowered = question.lower()
    found: dict[str, None] = {}
    for entry in QueryExpansion.objects.filter(workspace_id=workspace_id).only("term", "expansions"):
        term = entry.term.strip().lower()
        if term and re.search(rf"(?<!\w){re.escape(term)}(?!\w)", lowered):
            for expansion in entry.expansion_list():
                found.setdefault(expansion, None)
    return list(found)


# workspace id -> (what the documents and dictionary were when it was read, when that was last checked,
# word -> passages using it).
_VOCABULARIES: dict[int, tuple[tuple, float, dict[str, int]]] = {}
_VOCABULARIES_LOCK = threading.Lock()
# A question reads the vocabulary as checked at most this long ago: checking costs two aggregates (~10 ms on
# a busy machine), and a word of a document indexed seconds ago can wait that long to be a correction.
VOCABULARY_RECHECK_SECONDS = 30.0


def _vocabulary_key(workspace_id: int) -> tuple:
    """Changes whenever a document is indexed, removed or re-indexed, or a dictionary term is added or removed."""
    documents = Document.objects.filter(workspace_id=workspace_id).aggregate(count=Count("pk"), newest=Max("indexed_at"))
    terms = QueryExpansion.objects.filter(workspace_id=workspace_id).aggregate(count=Count("pk"), last=Max("pk"))
    return documents["count"], documents["newest"], terms["count"], terms["last"]


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

    Read once per change of the documents, checked at most every VOCABULARY_RECHECK_SECONDS, since a
    question must not pay for a scan of every passage.
    """
    cached = _VOCABULARIES.get(workspace_id)
    now = time.monotonic()
    if cached is not None and now - cached[1] < VOCABULARY_RECHECK_SECONDS:
        return cached[2]
    key = _vocabulary_key(workspace_id)
    words = cached[2] if cached is not None and cached[0] == key else _vocabulary_read(workspace_id)
    with _VOCABULARIES_LOCK:
        _VOCABULARIES[workspace_id] = (key, now, words)
    return words
