"""Seed the gate keys and the three tiers.

The data is written out here rather than imported from licensing.features, so
that this migration means the same thing forever; the registry test checks
that every key in the registry exists after migrating.
"""

from django.db import migrations

FEATURES = [
    (
        "rag.dedup.retrieval_integration",
        "Canonical-aware retrieval",
        "Search collapses near-duplicate chunks into their canonical record and prefers the newest version.",
    ),
    (
        "rag.dedup.variant_metadata",
        "Variant metadata",
        "Results show how many versions of a passage exist and where they live.",
    ),
    (
        "rag.dedup.provenance",
        "Provenance",
        "Answers trace each canonical passage back to every document version it came from.",
    ),
    (
        "rag.dedup.contradiction_review",
        "Contradiction review",
        "Conflicting near-duplicates are flagged in results and reviewed in the admin.",
    ),
]

# (slug, name, rank, gets every gated feature)
TIERS = [
    ("free", "Free", 0, False),
    ("writer-pro", "Writer Pro", 10, True),
    ("enterprise", "Enterprise", 20, True),
]


def seed(apps, schema_editor):
    Feature = apps.get_model("licensing", "Feature")
    LicenseTier = apps.get_model("licensing", "LicenseTier")
    features = [
        Feature.objects.update_or_create(key=key, defaults={"name": name, "description": description})[0]
        for key, name, description in FEATURES
    ]
    for slug, name, rank, gated in TIERS:
        tier, _ = LicenseTier.objects.update_or_create(slug=slug, defaults={"name": name, "rank": rank})
        if gated:
            tier.features.add(*features)


def unseed(apps, schema_editor):
    Feature = apps.get_model("licensing", "Feature")
    LicenseTier = apps.get_model("licensing", "LicenseTier")
    LicenseTier.objects.filter(slug__in=[slug for slug, *_ in TIERS], licenses__isnull=True).delete()
    Feature.objects.filter(key__in=[key for key, *_ in FEATURES]).delete()


class Migration(migrations.Migration):
    dependencies = [("licensing", "0001_initial")]

    operations = [migrations.RunPython(seed, unseed)]
