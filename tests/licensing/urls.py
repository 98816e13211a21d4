"""The site's URLs plus one page that shows gate decisions, for request-level tests.

A stand-in for the retrieval page that will call has_feature once the chat UI exists.
"""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse, JsonResponse
from django.template import RequestContext, Template
from django.urls import path

from config.urls import urlpatterns as site_urlpatterns
from licensing import features
from licensing.services import has_feature


def gates(request: HttpRequest) -> HttpResponse:
    workspace_id = request.workspace.pk  # type: ignore[attr-defined]
    return JsonResponse({key: has_feature(workspace_id, key) for key in features.REGISTRY})


def badge(request: HttpRequest) -> HttpResponse:
    return HttpResponse(Template('{% include "licensing/partials/_tier_badge.html" %}').render(RequestContext(request)))


urlpatterns = [
    path("test/gates/", gates),
    path("test/badge/", badge),
    *site_urlpatterns,
]
