"""JSON API, rag's part: who calls (a personal token or the session), how often, and `GET /api/v1/search`.

Requests and answers are typed (django-ninja, pydantic); the schema and the docs page come from these types
(config/api.py assembles the API). Every route answers JSON, never a login redirect, and counts towards
API_REQUESTS_PER_MINUTE of its user (429 with `Retry-After` past it).
"""

from __future__ import annotations

import logging
import math
import time
from typing import Any

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser
from django.core.cache import cache
from django.http import Http404, HttpRequest
from ninja import Field, Query, Router, Schema
from ninja.errors import AuthenticationError, HttpError, Throttled
from ninja.security import HttpBearer
from ninja.utils import check_csrf

from rag.models import Workspace
from rag.retrieval import SearchParams, search
from rag.selectors import paths_as_seen, sees_server_paths, workspace_list
from rag.tokens import api_token_user

logger = logging.getLogger(__name__)

NO_CREDENTIALS = "authentication required (a session, or Authorization: Bearer <token>)"
UNSAFE_METHODS = ("POST", "PUT", "PATCH", "DELETE")


class ApiError(Schema):
    """Every refusal: 400 names the field, 401, 403, 404, 429 (with Retry-After)."""

    error: str
    field: str | None = None


class BadInput(HttpError):
    """A 400 that names the field at fault."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(400, f"{field}: {message}")
        self.field = field


def _rate_check(caller: str) -> None:
    """Raise Throttled once `caller` has made API_REQUESTS_PER_MINUTE requests this minute.

    Counted per clock minute with one atomic increment in the shared cache (Redis), so the limit holds across
    web processes and machines (ninja's own throttles keep a history list, read and written in two steps); a
    cache that cannot be reached lets the request through.
    """
    limit, now = settings.API_REQUESTS_PER_MINUTE, time.time()
    if limit <= 0:
        return
    key = f"docent:api-rate:{caller}:{int(now // 60)}"
    try:
        cache.add(key, 0, timeout=120)
        count = cache.incr(key)
    except Exception:  # noqa: BLE001 - the cache's client raises its own connection errors
        logger.warning("api rate not counted: the cache is unreachable", exc_info=True)
        return
    if count > limit:
        raise Throttled(wait=max(1, math.ceil(60 - now % 60)))


class TokenOrSession(HttpBearer):
    """`Authorization: Bearer <token>`, else the browser's session (CSRF-checked on writes).

    A token that is sent must be good: a bad one is 401 even beside a session. Callers that are not
    signed in are counted by address, so that guessing tokens cannot reach the token table unbounded.
    """

    def __call__(self, request: HttpRequest) -> AbstractBaseUser:
        header = request.headers.get("Authorization", "")
        if header:
            user = self.authenticate(request, header)
        else:
            user = request.user if request.user.is_authenticated else None
            if user is not None and request.method in UNSAFE_METHODS and check_csrf(request):
                raise HttpError(403, "CSRF check failed: send the csrftoken, or use a token")
        if user is None:
            _rate_check(f"address:{request.META.get('REMOTE_ADDR', '')}")
            raise AuthenticationError(401, "the API token is unknown or revoked" if header else NO_CREDENTIALS)
        _rate_check(f"user:{user.pk}")  # every token of a user and their session together
        return user

    def authenticate(self, request: HttpRequest, token: str) -> AbstractBaseUser | None:
        scheme, _, raw = token.partition(" ")
        if scheme.lower() != "bearer" or not raw.strip():
            return None
        return api_token_user(raw=raw.strip())


def api_workspace(request: HttpRequest, slug: str) -> Workspace:
    """The workspace named (404 unless the caller is a member), else the session's, else the caller's first."""
    user = request.auth
    if slug:
        workspace = workspace_list(user=user).filter(slug=slug).first()
    elif user == request.user:
        workspace = request.workspace
    else:
        workspace = workspace_list(user=user).order_by("pk").first()
    if not workspace:  # request.workspace is a lazy object: test its truth, not its identity
        raise Http404(f"no workspace {slug!r} among yours" if slug else "you belong to no workspace")
    return workspace


def api_base_url(request: HttpRequest) -> str:
    """The address the caller used, so that the `url` of a result or citation opens as it is."""
    return request.build_absolute_uri("/").rstrip("/")


class SearchQuery(SearchParams):
    q: str = Field(..., min_length=1, description="the query")
    workspace: str = Field("", description="a workspace's slug (default: the session's, else your first)")


class SearchResultOut(Schema):
    chunk_id: int
    document_id: int
    path: str = Field(description="inside its source (as the documents page shows it); staff: the server's path")
    url: str = Field(description="the document page at this passage")
    title: str
    doc_date: str | None = Field(description="ISO 8601")
    doc_type: str
    heading_path: str
    page: int | None
    score: float
    similarity: float | None
    canonical_record_id: int | None
    variant_count: int
    has_contradictions: bool
    is_variant: bool
    chunk_index: int
    source_type: str
    ranks: dict[str, int]
    collapsed_chunk_ids: list[int]
    family_id: int | None
    version_label: str
    is_latest_version: bool
    lineage: str = Field(description='"" current, "superseded" (asked for an older version) or "retired"')
    superseded_by: int | None
    superseded_by_label: str
    replaced_chunk_id: int | None
    subject: str
    text: str
    variants: list[dict[str, Any]] | None = Field(None, description="with variant_metadata")
    provenance: dict[str, Any] | None = Field(None, description="with provenance")


class SearchOut(Schema):
    workspace: str
    query: str
    count: int
    canonical_filtering: str = Field(description="applied, off (not asked) or unlicensed (searched as if off)")
    options: dict[str, Any]
    filters: dict[str, Any]
    stats: dict[str, Any]
    results: list[SearchResultOut]


router = Router(tags=["search"])


@router.get("/search", response={200: SearchOut, 400: ApiError, 401: ApiError, 404: ApiError, 429: ApiError},
            url_name="search")
def search_view(request: HttpRequest, params: Query[SearchQuery]) -> dict[str, Any]:
    """Ranked passages of one workspace: hybrid, newest version first, duplicates hidden (the CLI's options)."""
    if unknown := sorted(set(request.GET) - set(SearchQuery.model_fields)):
        raise BadInput(unknown[0], "unknown parameter")  # ninja reads only the fields it knows
    workspace = api_workspace(request, params.workspace.strip())
    options = params.search_options(workspace=workspace.pk)
    results = search(params.q, options)
    found = paths_as_seen(results.to_dict(base_url=api_base_url(request)), full=sees_server_paths(request.auth))
    return {"workspace": workspace.slug, **found}
