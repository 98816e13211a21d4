"""Query expansion from a workspace's domain dictionary (QueryExpansion rows, edited in the admin).

A question says "capacity", the reference says "max concurrent workflows": the
dictionary maps a term to the words the documents use instead. Expansions go to
the lexical side only (the full-text terms and the identifiers); the semantic
side already reads meaning, and a list of extra words would blur its vector.
"""

from __future__ import annotations

import re

from rag.models import QueryExpansion


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
