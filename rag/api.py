"""JSON API: `GET /api/v1/search`. Session login or a personal token, workspace-scoped, JSON errors
(never a login redirect)."""

from __future__ import annotations

from django.contrib.auth.decorators import login_not_required
from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from django.http import HttpRequest, JsonResponse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET

from rag.retrieval import SearchOptionError, options_from_params, search
from rag.selectors import workspace_list
from rag.tokens import api_token_user


def _error(message: str, status: int) -> JsonResponse:
    response = JsonResponse({"error": message}, status=status)
    if status == 401:
        response["WWW-Authenticate"] = 'Bearer realm="docent"'
    return response


def _api_user(request: HttpRequest) -> AbstractBaseUser | AnonymousUser | None:
    """The caller: a bearer token's user when a token is sent (None if it is no good), else the session's."""
    header = request.headers.get("Authorization", "")
    if not header:
        return request.user
    scheme, _, raw = header.partition(" ")
    if scheme.lower() != "bearer" or not raw.strip():
        return None
    return api_token_user(raw=raw.strip())


@login_not_required  # answered with a JSON 401 below rather than the login page
@never_cache
@require_GET
def search_view(request: HttpRequest) -> JsonResponse:
    """?q=...&workspace=SLUG (else the current one) and the options of rag.retrieval.options_from_params."""
    user = _api_user(request)
    if user is None:
        return _error("the API token is unknown or revoked", 401)
    if not user.is_authenticated:
        return _error("authentication required (a session, or Authorization: Bearer <token>)", 401)
    slug = request.GET.get("workspace", "").strip()
    if slug:
        workspace = workspace_list(user=user).filter(slug=slug).first()
    elif user == request.user:
        workspace = request.workspace
    else:
        workspace = workspace_list(user=user).order_by("pk").first()
    if not workspace:  # request.workspace is a lazy object: test its truth, not its identity
        return _error(f"no workspace {slug!r} among yours" if slug else "you belong to no workspace", 404)
    query = request.GET.get("q", "").strip()
    if not query:
        return _error("q (the query) is required", 400)
    try:
        results = search(query, options_from_params(request.GET, workspace=workspace.pk))
    except SearchOptionError as exc:
        return _error(str(exc), 400)
    base_url = request.build_absolute_uri("/").rstrip("/")  # the address the caller used
    return JsonResponse({"workspace": workspace.slug, **results.to_dict(base_url=base_url)})
