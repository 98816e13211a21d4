"""`workspace_tier` for templates: the current workspace's tier and expiry, shown to its members."""

from __future__ import annotations

from django.http import HttpRequest
from django.utils.functional import SimpleLazyObject

from licensing.services import TierInfo, workspace_tier as tier_of


def _current_tier(request: HttpRequest) -> TierInfo | None:
    # request.workspace is set (membership-scoped) by the workspace middleware; duck-typed so we import nothing.
    workspace = getattr(request, "workspace", None)
    workspace_id = getattr(workspace, "pk", None) if workspace is not None else None
    return tier_of(workspace_id) if workspace_id is not None else None


def workspace_tier(request: HttpRequest) -> dict[str, object]:
    if not getattr(request, "user", None) or not request.user.is_authenticated:
        return {}
    # Lazy: pages that do not show the badge do not pay for the query.
    return {"workspace_tier": SimpleLazyObject(lambda: _current_tier(request))}
