"""Factories for licensing; tiers and features come from the seed migration unless a test needs its own."""

from __future__ import annotations

from datetime import timedelta

import factory
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from django.utils import timezone

from licensing.keys import LicensePayload, generate_keypair, load_private_key, sign_license
from licensing.models import Feature, License, LicenseTier
from licensing.services import installation_id
from tests.factories import WorkspaceFactory

# The suite's development keypair, made per run: tests/conftest.py sets LICENSE_DEVELOPMENT_KEY to it for
# every test. The vendor's private key is not in the repository, so no test signs a genuine license.
_TEST_PRIVATE_PEM, TEST_DEVELOPMENT_KEY = generate_keypair()
TEST_PRIVATE_KEY = load_private_key(_TEST_PRIVATE_PEM)


def signed_key_for(license: License, *, private_key: Ed25519PrivateKey = TEST_PRIVATE_KEY, **changes: object) -> str:
    """The key issued for this row (with `changes` to the payload), for this installation; signed by the
    suite's development key unless another is given."""
    fields = dict(license_id=license.license_id, installation=installation_id(), workspace=license.workspace.slug,
                  tier=license.tier.slug, valid_from=license.valid_from, valid_until=license.valid_until,
                  issued_to=license.issued_to)
    return sign_license(LicensePayload(**{**fields, **changes}), private_key)


class FeatureFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Feature
        django_get_or_create = ("key",)

    key = factory.Sequence(lambda n: f"test.feature_{n}")
    name = factory.LazyAttribute(lambda o: o.key.rsplit(".", 1)[-1].replace("_", " ").title())


class LicenseTierFactory(factory.django.DjangoModelFactory):
    """A tier made in the admin: code fixes no features for it, so it grants only what a key carries."""

    class Meta:
        model = LicenseTier
        django_get_or_create = ("slug",)

    slug = factory.Sequence(lambda n: f"tier-{n}")
    name = factory.LazyAttribute(lambda o: o.slug.replace("-", " ").title())
    rank = factory.Sequence(lambda n: 100 + n)


def seeded_tier(slug: str) -> LicenseTier:
    return LicenseTier.objects.get(slug=slug)


class LicenseFactory(factory.django.DjangoModelFactory):
    """An open-ended Writer Pro license that started an hour ago, installed from a key the suite's development
    key signed; `features=[...]` signs those gate keys into the key (none: the tier's, as fixed in code)."""

    class Meta:
        model = License

    @classmethod
    def _create(cls, model_class: type[License], *args: object, **kwargs: object) -> License:
        features = kwargs.pop("features", None)
        license = model_class(*args, **kwargs)
        signed = {} if features is None else {"features": tuple(features)}
        license.signed_key = signed_key_for(license, **signed)
        license.save()
        return license

    workspace = factory.SubFactory(WorkspaceFactory)
    tier = factory.LazyFunction(lambda: seeded_tier("writer-pro"))
    valid_from = factory.LazyFunction(lambda: timezone.now() - timedelta(hours=1))
    valid_until = None
    issued_to = "Test Customer"
