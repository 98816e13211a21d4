"""Factories shared by every app's tests."""

from __future__ import annotations

import factory
from django.contrib.auth import get_user_model

from rag.models import Workspace


class UserFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = get_user_model()
        django_get_or_create = ("username",)
        skip_postgeneration_save = True

    username = factory.Sequence(lambda n: f"user{n}")
    password = factory.PostGenerationMethodCall("set_password", "correct horse battery")

    @factory.post_generation
    def _save(obj, create: bool, extracted: object, **kwargs: object) -> None:
        if create:
            obj.save()


class WorkspaceFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Workspace
        django_get_or_create = ("slug",)
        skip_postgeneration_save = True

    slug = factory.Sequence(lambda n: f"ws-{n}")
    name = factory.LazyAttribute(lambda o: o.slug.replace("-", " ").title())

    @factory.post_generation
    def members(obj: Workspace, create: bool, extracted: list | None, **kwargs: object) -> None:
        if create and extracted:
            obj.members.add(*extracted)
