"""`request.workspace`: the member workspace the user last chose, else their first."""

from __future__ import annotations

from collections.abc import Callable

from django.http import HttpRequest, HttpResponse

from rag.models import Workspace
from rag.selectors import workspace_list

SESSION_KEY = "workspace_id"


def _current_workspace(request: HttpRequest) -> Workspace | None:
    workspaces = workspace_list(user=request.user)
    chosen = request.session.get(SESSION_KEY)
    if chosen is not None:
        workspace = workspaces.filter(pk=chosen).first()
        if workspace is not None:
            return workspace
    return workspaces.first()


class CurrentWorkspaceMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        # Eager, not lazy: views test `request.workspace is None`, which a lazy proxy would defeat.
        request.workspace = _current_workspace(request) if request.user.is_authenticated else None  # type: ignore[attr-defined]
        return self.get_response(request)
