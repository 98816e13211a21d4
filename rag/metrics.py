"""The `/metrics` view (staff session or bearer token): every Prometheus figure of this process or, in
multiprocess mode, of all of them: search's (rag/retrieval/metrics.py) and django-prometheus's HTTP and database
ones (its middleware and database engine in settings), all in prometheus_client's default registry.

Under gunicorn with several workers, set PROMETHEUS_MULTIPROC_DIR to an empty
folder (prometheus_client's multiprocess mode) so that /metrics adds up every
worker's figures instead of showing whichever process answered.
"""

from __future__ import annotations

import hmac
import os

from django.conf import settings
from django.contrib.auth.decorators import login_not_required
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET
from prometheus_client import CONTENT_TYPE_LATEST, REGISTRY, CollectorRegistry, generate_latest


def _registry() -> CollectorRegistry:
    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        from prometheus_client import multiprocess

        registry = CollectorRegistry()
        multiprocess.MultiProcessCollector(registry)
        return registry
    return REGISTRY


def metrics_token_ok(request: HttpRequest) -> bool:
    """The monitoring token (METRICS_TOKEN) as a bearer: a scraper's way to /metrics and /healthz's detail."""
    expected = settings.METRICS_TOKEN
    header = request.headers.get("Authorization", "")
    if not expected or not header.startswith("Bearer "):
        return False
    return hmac.compare_digest(header.removeprefix("Bearer ").strip().encode(), expected.encode())


@login_not_required  # a scraper has no session; it sends the token instead
@never_cache
@require_GET
def metrics_view(request: HttpRequest) -> HttpResponse:
    if not (request.user.is_authenticated and request.user.is_staff) and not metrics_token_ok(request):
        status = 403 if request.user.is_authenticated else 401
        response = JsonResponse({"error": "staff login or a metrics bearer token required"}, status=status)
        if status == 401:
            response["WWW-Authenticate"] = 'Bearer realm="metrics"'
        return response
    return HttpResponse(generate_latest(_registry()), content_type=CONTENT_TYPE_LATEST)
