"""JSON API: `GET /api/v1/search`. Session login, workspace-scoped, JSON errors (never a login redirect)."""

from __future__ import annotations

from django.contrib.auth.decorators import login_not_required
from django.http import HttpRequest, JsonResponse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET

from rag.retrieval import SearchOptionError, options_from_params, search
from rag.selectors import workspace_list


def _error(message: str, status: int) -> JsonResponse:
    return JsonResponse({"error": message}, status=status)


@login_not_required  # answered with a JSON 401 below rather than the login page
@never_cache
@require_GET
def search_view(request: HttpRequest) -> JsonResponse:
    """?q=...&workspace=SLUG (else the current one) and the options of rag.retrieval.options_from_params."""
    if not request.user.is_authenticated:
        return _error("authentication required", 401)
    slug = request.GET.get("workspace", "").strip()
    workspace = workspace_list(user=request.user).filter(slug=slug).first() if slug else request.workspace
    if not workspace:  # request.workspace is a lazy object: test its truth, not its identity
        return _error(f"no workspace {slug!r} among yours" if slug else "you belong to no workspace", 404)
    query = request.GET.get("q", "").strip()
    if not query:
        return _error("q (the query) is required", 400)
    try:
        results = search(query, options_from_params(request.GET, workspace=workspace.pk))
    except SearchOptionError as exc:
        return _error(str(exc), 400)
    return JsonResponse({"workspace": workspace.slug, **results.to_dict()})
