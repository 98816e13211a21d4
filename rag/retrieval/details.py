"""What a result carries besides its place: its record's variant count and contradictions (licensed), its
variants and provenance (when asked and licensed).

Read once per search for the results it returns, after every scope is searched: a change question's two
sides and the newest release's own search rank more results than they return.
"""

from __future__ import annotations

from licensing.features import PROVENANCE, RETRIEVAL_INTEGRATION, VARIANT_METADATA
from licensing.services import has_feature
from rag.retrieval import vectors
from rag.retrieval.canonical import record_details
from rag.retrieval.options import SearchOptions
from rag.retrieval.results import APPLIED, OFF, UNLICENSED, SearchResult


def option_gate(workspace_id: int, key: str, wanted: bool) -> str:
    """Whether an option the caller asked for (`wanted`) applies: off, applied, or unlicensed (searched as if off)."""
    if not wanted:
        return OFF
    return APPLIED if has_feature(workspace_id, key) else UNLICENSED


def attach_details(results: list[SearchResult], options: SearchOptions) -> None:
    """Variant counts and contradiction flags (licensed), variants and provenance (when asked and licensed), for
    the results returned only: a change question's sides and the newest release's own search rank more."""
    workspace_id = options.workspace_id
    if not results or not has_feature(workspace_id, RETRIEVAL_INTEGRATION):
        return
    variant_gate = option_gate(workspace_id, VARIANT_METADATA, options.include_variant_metadata)
    provenance_gate = option_gate(workspace_id, PROVENANCE, options.include_provenance)
    if provenance_gate != APPLIED:  # else the counts and flags follow from the members and contradictions read
        by_chunk = vectors.record_stats([(r.chunk_id, r.canonical_record_id) for r in results])
        for result in results:
            result.variant_count, result.has_contradictions = by_chunk.get(result.chunk_id, (0, False))
    if APPLIED in (variant_gate, provenance_gate):
        _attach_record_details(results, workspace_id=workspace_id, variants=variant_gate == APPLIED,
                               provenance=provenance_gate == APPLIED)


def _attach_record_details(results: list[SearchResult], *, workspace_id: int, variants: bool, provenance: bool) -> None:
    record_ids = sorted({r.canonical_record_id for r in results if r.canonical_record_id is not None})
    # A lone result's contradictions come in the same query as its records' members' (provenance only).
    lone = [r.chunk_id for r in results if r.canonical_record_id is None] if provenance else None
    members, contradictions = record_details(record_ids, workspace_id=workspace_id, contradictions_of=lone)
    for result in results:
        record_members = members.get(result.canonical_record_id, []) if result.canonical_record_id else []
        if variants:
            result.variants = [dict(m) for m in record_members if m["chunk_id"] != result.chunk_id]
        if provenance:
            chunk_ids = {m["chunk_id"] for m in record_members} or {result.chunk_id}
            # What vectors.record_stats would say: the record's variants, a pending contradiction of any member.
            result.variant_count = sum(m["role"] == "variant" for m in record_members)
            result.provenance = {
                "record_id": result.canonical_record_id,
                "shown_chunk_id": result.chunk_id,
                "members": [dict(m) for m in record_members] or [{
                    "role": "chunk", "chunk_id": result.chunk_id, "document_id": result.document_id,
                    "path": result.path, "title": result.title, "doc_date": result.doc_date, "similarity": 1.0,
                }],
                "contradictions": [
                    c for c in contradictions if c["chunk_a_id"] in chunk_ids or c["chunk_b_id"] in chunk_ids
                ],
            }
            result.has_contradictions = bool(result.provenance["contradictions"])
