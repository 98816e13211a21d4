"""The one registry of gate keys.

Code names a gated capability only through these constants, and every key here
is seeded as a `Feature` row by migration 0002 (a test checks both), so a typo
in a gate key fails the suite instead of silently switching a feature off.
"""

from __future__ import annotations

RETRIEVAL_INTEGRATION = "rag.dedup.retrieval_integration"
VARIANT_METADATA = "rag.dedup.variant_metadata"
PROVENANCE = "rag.dedup.provenance"
CONTRADICTION_REVIEW = "rag.dedup.contradiction_review"

REGISTRY: dict[str, str] = {
    RETRIEVAL_INTEGRATION: "Canonical-aware retrieval",
    VARIANT_METADATA: "Variant metadata",
    PROVENANCE: "Provenance",
    CONTRADICTION_REVIEW: "Contradiction review",
}
