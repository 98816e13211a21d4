"""The JSON API under /api/v1/: rag's and chat's routers in one django-ninja API, its errors, schema and docs.

django-ninja builds the OpenAPI schema (`/api/v1/openapi.json`) and the docs page (`/api/v1/docs`) from the
routes' typed parameters and answers. Its Swagger UI is served from the package's own static files (`ninja`
is an installed app), so the page loads with no network and under the site's Content-Security-Policy. The
schema and docs are readable without signing in: they describe the API, never anyone's documents.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.contrib.auth.decorators import login_not_required
from django.http import Http404, HttpRequest, HttpResponse
from ninja import NinjaAPI
from ninja.errors import AuthenticationError, HttpError, Throttled, ValidationError

from chat.api import router as chat_router
from rag.api import TokenOrSession, router as search_router
from rag.retrieval import SearchOptionError, validation_message

api = NinjaAPI(
    title="Docent API",
    version="1",
    description="Search a workspace's documents and ask questions with citations. Send "
                "`Authorization: Bearer <token>` (a personal token from the API tokens page); a signed-in browser "
                "session works too.",
    auth=TokenOrSession(),
    urls_namespace="api",
    docs_decorator=login_not_required,
)
api.add_router("/", search_router)
api.add_router("/", chat_router)


def _error(request: HttpRequest, message: str, status: int, field: str | None = None) -> HttpResponse:
    body = {"error": message, **({"field": field} if field else {})}
    return api.create_response(request, body, status=status)


# The names the routes give their schema parameters (`params: Query[...]`, `payload: Body`): ninja's error
# locations start with where a value was read, then often that name, then the field.
SCHEMA_PARAMETERS = ("params", "payload")


@api.exception_handler(ValidationError)
def _invalid(request: HttpRequest, exc: ValidationError) -> HttpResponse:
    """400 naming the field."""
    errors = []
    for error in exc.errors:
        loc = list(error.get("loc", ()))[1:]
        if len(loc) > 1 and loc[0] in SCHEMA_PARAMETERS:
            loc = loc[1:]
        errors.append({**error, "loc": loc or ["request"]})
    field, message = validation_message(errors)
    return _error(request, message, 400, field)


@api.exception_handler(HttpError)
def _refused(request: HttpRequest, exc: HttpError) -> HttpResponse:
    if isinstance(exc, Throttled):
        limit = settings.API_REQUESTS_PER_MINUTE
        response = _error(request, f"more than {limit} requests a minute; try again in {exc.wait} s", 429)
        response["Retry-After"] = str(exc.wait)
        return response
    response = _error(request, exc.message, exc.status_code, getattr(exc, "field", None))
    if isinstance(exc, AuthenticationError):
        response["WWW-Authenticate"] = 'Bearer realm="docent"'
    return response


@api.exception_handler(Http404)
def _not_found(request: HttpRequest, exc: Http404) -> HttpResponse:
    return _error(request, str(exc) or "not found", 404)


@api.exception_handler(SearchOptionError)
def _bad_option(request: HttpRequest, exc: SearchOptionError) -> HttpResponse:
    return _error(request, str(exc), 400)


def api_urls() -> tuple[list[Any], str, str]:
    """The API's URL patterns, each answering for itself: a JSON 401, never the login page's redirect."""
    patterns, app_name, namespace = api.urls
    for pattern in patterns:
        login_not_required(pattern.callback)
    return patterns, app_name, namespace
