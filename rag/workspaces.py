"""Workspace writes for the command line and the first start: create one, add a member."""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.contrib.auth.models import AbstractBaseUser
from django.core.exceptions import ValidationError
from django.core.validators import validate_slug

from rag.models import Workspace


class WorkspaceError(ValueError):
    """A workspace request that cannot be done; the message is for a person."""


def workspace_create(*, slug: str, name: str = "") -> Workspace:
    """A new, empty workspace; its name defaults to the slug, capitalised."""
    try:
        validate_slug(slug)
    except ValidationError:
        raise WorkspaceError(f"{slug!r} is not a slug: use letters, digits, '-' and '_'") from None
    if Workspace.objects.filter(slug=slug).exists():
        raise WorkspaceError(f"a workspace with slug {slug!r} exists already")
    return Workspace.objects.create(slug=slug, name=name or slug.replace("-", " ").replace("_", " ").capitalize())


def workspace_member_add(*, workspace: Workspace, username: str) -> AbstractBaseUser:
    """Give a user access to the workspace (idempotent)."""
    User = get_user_model()
    try:
        user = User.objects.get(**{User.USERNAME_FIELD: username})
    except User.DoesNotExist:
        raise WorkspaceError(f"no user {username!r} (create one with `python manage.py createsuperuser` "
                             "or in the admin)") from None
    workspace.members.add(user)
    return user
