"""Factories for licensing; tiers and features come from the seed migration unless a test needs its own."""

from __future__ import annotations

from datetime import timedelta

import factory
from django.utils import timezone

from licensing.models import Feature, License, LicenseTier
from tests.factories import WorkspaceFactory


class FeatureFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Feature
        django_get_or_create = ("key",)

    key = factory.Sequence(lambda n: f"test.feature_{n}")
    name = factory.LazyAttribute(lambda o: o.key.rsplit(".", 1)[-1].replace("_", " ").title())


class LicenseTierFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = LicenseTier
        django_get_or_create = ("slug",)
        skip_postgeneration_save = True

    slug = factory.Sequence(lambda n: f"tier-{n}")
    name = factory.LazyAttribute(lambda o: o.slug.replace("-", " ").title())
    rank = factory.Sequence(lambda n: 100 + n)

    @factory.post_generation
    def features(obj: LicenseTier, create: bool, extracted: list[Feature] | None, **kwargs: object) -> None:
        if create and extracted:
            obj.features.add(*extracted)


def seeded_tier(slug: str) -> LicenseTier:
    return LicenseTier.objects.get(slug=slug)


class LicenseFactory(factory.django.DjangoModelFactory):
    """An open-ended Writer Pro license that started an hour ago."""

    class Meta:
        model = License

    workspace = factory.SubFactory(WorkspaceFactory)
    tier = factory.LazyFunction(lambda: seeded_tier("writer-pro"))
    valid_from = factory.LazyFunction(lambda: timezone.now() - timedelta(hours=1))
    valid_until = None
    issued_to = "Test Customer"
