"""First-start set-up of a fresh instance: the demo workspace and its corpus."""

from __future__ import annotations

from collections.abc import Iterator

from django.contrib.auth import get_user_model
from django.db import transaction

from rag.models import Workspace

DEMO_SLUG = "demo"


def demo_workspace_bootstrap() -> Iterator[str]:
    """Create the demo workspace once, with every superuser as a member."""
    with transaction.atomic():
        workspace, created = Workspace.objects.get_or_create(slug=DEMO_SLUG, defaults={"name": "Demo"})
        if created:
            workspace.members.add(*get_user_model().objects.filter(is_superuser=True))
    if created:
        yield "created the demo workspace"
