"""JSON API: `GET /api/v1/search`. Session login or a personal token, workspace-scoped, JSON errors
(never a login redirect), at most API_REQUESTS_PER_MINUTE a minute per user (429 with `Retry-After` past it)."""

from __future__ import annotations

import logging
import math
import time

from django.conf import settings
from django.contrib.auth.decorators import login_not_required
from django.core.cache import cache
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


logger = logging.getLogger(__name__)


def _over_rate(caller: str) -> JsonResponse | None:
    """A 429 once `caller` has made API_REQUESTS_PER_MINUTE requests this minute, else None.

    Counted per clock minute in the shared cache (Redis), so the limit holds across web processes
    and machines; a cache that cannot be reached lets the request through (search needs no cache).
    """
    limit, now = settings.API_REQUESTS_PER_MINUTE, time.time()
    if limit <= 0:
        return None
    key = f"docent:api-rate:{caller}:{int(now // 60)}"
    try:
        cache.add(key, 0, timeout=120)
        count = cache.incr(key)
    except Exception:  # noqa: BLE001 - the cache's client raises its own connection errors
        logger.warning("api rate not counted: the cache is unreachable", exc_info=True)
        return None
    if count <= limit:
        return None
    retry_after = max(1, math.ceil(60 - now % 60))
    response = _error(f"more than {limit} requests a minute; try again in {retry_after} s", 429)
    response["Retry-After"] = str(retry_after)
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
    if user is None or not user.is_authenticated:
        # Guessed tokens are counted by address: a stranger's flood must not reach the token table unbounded.
        if refused := _over_rate(f"address:{request.META.get('REMOTE_ADDR', '')}"):
            return refused
        if user is None:
            return _error("the API token is unknown or revoked", 401)
        return _error("authentication required (a session, or Authorization: Bearer <token>)", 401)
    if refused := _over_rate(f"user:{user.pk}"):  # every token of a user and their session together
        return refused
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
