"""Citations: the entry stored per cited source, and how well a generated answer keeps to [N].

Compliance is measured per LLM answer and kept in Message.metadata["compliance"], so the
chat can mark uncited sentences and the admin can chart a workspace's rate over time:

- cited_share: the share of the answer's sentences with at least one valid [N];
- invalid_markers: numbers the answer cites that name no source;
- uncited_sources: sources the model was given and never cited;
- uncited_spans: [start, end] of each sentence without a valid marker, for the page.
"""

from __future__ import annotations

import re
from typing import Any

from rag.selectors import contradicted_chunks
from rag.sentences import sentence_spans

MARKER = re.compile(r"\[(\d{1,3})\]")
_LEADING_MARKERS = re.compile(r"^(?:\[\d{1,3}\][\s.,;:]*)+")
_ONLY_MARKERS = re.compile(r"^(?:\s*\[\d{1,3}\][\s.,;:]*)+$")


def _iso(value) -> str | None:
    return value.isoformat() if value else None


def citation_for(result: Any, *, n: int, position: int, relevance: float, sentence_ids: list[str], role: str = "answer") -> dict:
    """A cited source as stored with the message: enough to link, date and label it after a reload."""
    return {
        "n": n,
        "chunk_id": result.chunk_id,
        "document_id": result.document_id,
        "document_title": result.title,
        "path": result.path,
        "doc_date": _iso(result.doc_date),
        "doc_type": result.doc_type,
        "heading_path": result.heading_path,
        "page": getattr(result, "page", None),
        "relevance": round(max(0.0, min(1.0, relevance)), 3),
        "position": position,
        "sentence_ids": sentence_ids,
        "variant_count": getattr(result, "variant_count", 0) or 0,
        "has_contradictions": bool(getattr(result, "has_contradictions", False)),
        "canonical_record_id": getattr(result, "canonical_record_id", None),
        "provenance": _provenance_entries(getattr(result, "provenance", None)),
        "role": role,
        # Kept so that "2.1 · superseded by 3.0" still reads right when the page is reloaded.
        "family_id": getattr(result, "family_id", None),
        "version_label": getattr(result, "version_label", "") or "",
        "is_latest_version": bool(getattr(result, "is_latest_version", True)),
        "lineage": getattr(result, "lineage", "") or "",
        "superseded_by_label": getattr(result, "superseded_by_label", "") or "",
    }


def contradictions_mark(citations: list[dict]) -> list[dict]:
    """A citation says "Documents disagree" only when a pending or decided contradiction sets it against another
    cited passage: not for a merged copy, nor for an older version that simply changed (one read per answer)."""
    disputed = contradicted_chunks(chunk_ids=[c["chunk_id"] for c in citations])
    for citation in citations:
        citation["has_contradictions"] = citation["chunk_id"] in disputed
    return citations


def _provenance_entries(provenance: dict | None) -> list[dict]:
    """Every document of the result's record with its date (canonical first, then newest), JSON-ready."""
    members = (provenance or {}).get("members") or []
    if len(members) < 2:
        return []
    return [
        {
            "document_id": m["document_id"],
            "chunk_id": m["chunk_id"],
            "title": m.get("title", ""),
            "path": m.get("path", ""),
            "doc_date": m["doc_date"] if isinstance(m.get("doc_date"), str) else _iso(m.get("doc_date")),
            "is_canonical": m.get("role") == "canonical",
        }
        for m in members
    ]


def citation_compliance(reply: str, *, sources: int) -> dict[str, Any]:
    """How well a generated reply cites the `sources` numbered sources it was given."""
    statements: list[list[int]] = []  # [start, end] of each sentence that states something
    markers: list[list[int]] = []  # the marker numbers of each such sentence
    for span in sentence_spans(reply):
        leading = _LEADING_MARKERS.match(span.text)
        if leading and statements and not _ONLY_MARKERS.match(span.text):
            # "... per minute. [1] Keys expire ...": the segmenter hands the marker to the next sentence.
            markers[-1].extend(int(number) for number in MARKER.findall(leading.group(0)))
            span = span.__class__(span.index, span.start + leading.end(), span.end, span.text[leading.end():],
                                  span.paragraph, span.kind)
        found = [int(number) for number in MARKER.findall(span.text)]
        if _ONLY_MARKERS.match(span.text) and statements:
            # "... 1200 requests per minute. [1]": the marker belongs to the sentence before it.
            statements[-1][1] = span.end
            markers[-1].extend(found)
            continue
        if len(MARKER.sub("", span.text).split()) < 3 or span.kind == "code":
            continue  # a heading, a "Sources:" line or code: nothing a reader would want backed
        statements.append([span.start, span.end])
        markers.append(found)
    valid = [[n for n in found if 1 <= n <= sources] for found in markers]
    cited = sum(1 for numbers in valid if numbers)
    all_numbers = {n for found in markers for n in found}
    return {
        "sentences": len(statements),
        "cited_sentences": cited,
        "cited_share": round(cited / len(statements), 3) if statements else 1.0,
        "invalid_markers": sorted(n for n in all_numbers if not 1 <= n <= sources),
        "uncited_sources": [n for n in range(1, sources + 1) if n not in all_numbers],
        "uncited_spans": [span for span, numbers in zip(statements, valid) if not numbers],
    }
