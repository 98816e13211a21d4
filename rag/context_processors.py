from __future__ import annotations

from django.http import HttpRequest

from rag.selectors import workspace_list


def workspaces(request: HttpRequest) -> dict:
    if not getattr(request, "user", None) or not request.user.is_authenticated:
        return {}
    return {
        "workspaces": workspace_list(user=request.user),
        "current_workspace": getattr(request, "workspace", None),
    }
