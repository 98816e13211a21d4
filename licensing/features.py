"""The one registry of gate keys, and what each tier grants.

Code names a gated capability only through these constants, and every key here
is seeded as a `Feature` row by migration 0002 (a test checks both), so a typo
in a gate key fails the suite instead of silently switching a feature off.

A tier's features are fixed here, in code, not in the database: a signed key
names its tier by slug, so a tier edited in the admin would otherwise widen
what every key of that tier (and the built-in trial) grants. A key may also
carry the features it grants (`LicensePayload.features`), signed with the rest.
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

# What a key naming each tier grants when it carries no `features` of its own. A tier made in the admin is
# not here: it grants only what its keys carry.
TIER_FEATURES: dict[str, frozenset[str]] = {
    "free": frozenset(),
    "writer-pro": frozenset(REGISTRY),
    "enterprise": frozenset(REGISTRY),
}


def license_features(tier: str, signed: tuple[str, ...] | None = None) -> frozenset[str]:
    """What a license grants: the features its key signed, else its tier's here; gate keys only."""
    granted = TIER_FEATURES.get(tier, frozenset()) if signed is None else frozenset(signed)
    return granted & REGISTRY.keys()
