"""Scopes the gate cache to one request: a change in the admin shows on the next request."""

from __future__ import annotations

from collections.abc import Callable

from django.http import HttpRequest, HttpResponse

from licensing.services import feature_cache


class FeatureCacheMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        with feature_cache():
            return self.get_response(request)
