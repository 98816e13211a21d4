"""Reads scoped by workspace membership, so that no view can forget the scope."""

from __future__ import annotations

from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from django.db.models import QuerySet
from django.http import Http404

from rag.models import Workspace


def workspace_list(*, user: AbstractBaseUser | AnonymousUser) -> QuerySet[Workspace]:
    if not user.is_authenticated:
        return Workspace.objects.none()
    return Workspace.objects.filter(members=user)


def workspace_get(*, user: AbstractBaseUser | AnonymousUser, slug: str) -> Workspace:
    """404 (not 403) for a workspace the user is not in: existence is not leaked."""
    try:
        return workspace_list(user=user).get(slug=slug)
    except Workspace.DoesNotExist:
        raise Http404("No such workspace") from None
