"""Text PostgreSQL cannot store is refused where it comes in: a 400 naming the field, never a 500 (issue 49).

PostgreSQL's text holds no U+0000, and UTF-8 has no lone surrogate (U+D800 to U+DFFF, which a JSON body's
`\\ud800` escape makes): psycopg raises on either, deep in whichever query the value reaches first. One check of
every query parameter, form field, uploaded file's name and JSON body string, before any view or form, covers the
API's routes, the pages' forms and the parameters views read themselves. Form data and query strings arrive
decoded with replacement characters, so in them only U+0000 can occur; JSON bodies may hold both.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from typing import Any

from django.http import HttpRequest, HttpResponse, HttpResponseBadRequest, JsonResponse

API_PREFIX = "/api/"
_UNSTORABLE = re.compile("[\x00\ud800-\udfff]")
_JSON_TYPES = ("application/json", "application/merge-patch+json")


def _unstorable(text: str) -> str | None:
    """The first character of `text` that PostgreSQL cannot store, as U+XXXX, else None."""
    found = _UNSTORABLE.search(text)
    return f"U+{ord(found.group()):04X}" if found else None


def _named(field: str) -> str:
    """A field's name fit to print, even when the name itself is what is wrong."""
    return _UNSTORABLE.sub(lambda found: f"\\u{ord(found.group()):04x}", field) or "(empty name)"


def _json_strings(value: Any, field: str = "") -> Iterator[tuple[str, str]]:
    """(field, text) of every key and string in a JSON value; nested fields as `options.doc_type`, items as `[2]`."""
    if isinstance(value, str):
        yield field or "body", value
    elif isinstance(value, dict):
        for key, inner in value.items():
            name = f"{field}.{key}" if field else str(key)
            yield name, str(key)
            yield from _json_strings(inner, name)
    elif isinstance(value, list):
        for index, inner in enumerate(value):
            yield from _json_strings(inner, f"{field}[{index}]")


def _fields(request: HttpRequest) -> Iterator[tuple[str, str]]:
    """(field, text) of everything a view may store or query with: parameters, form fields, file names, JSON."""
    for field, values in request.GET.lists():
        yield field, field
        for value in values:
            yield field, value
    if request.method in ("GET", "HEAD", "OPTIONS"):
        return
    if request.content_type in _JSON_TYPES:
        try:
            body = json.loads(request.body)
        except ValueError:
            return  # not JSON: the route's own parsing answers 400
        yield from _json_strings(body)
        return
    for field, values in request.POST.lists():
        yield field, field
        for value in values:
            yield field, value
    for field, files in request.FILES.lists():
        for upload in files:
            yield field, upload.name or ""


def unstorable_field(request: HttpRequest) -> tuple[str, str] | None:
    """(field, U+XXXX) of the first field holding text PostgreSQL cannot store, else None."""
    for field, text in _fields(request):
        if (character := _unstorable(text)) is not None:
            return _named(field), character
    return None


class UnstorableTextMiddleware:
    """Refuses a request holding U+0000 or a lone surrogate anywhere a view reads: JSON for the API, text else."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if request.path.startswith(API_PREFIX) and request.method not in ("GET", "HEAD", "OPTIONS"):
            request.body  # noqa: B018 - django-ninja reads the body itself: kept whole, the form parse below spends no stream
        found = unstorable_field(request)
        if found is None:
            return self.get_response(request)
        field, character = found
        error = f"{field}: holds {character}, a character that cannot be stored; remove it"
        if request.path.startswith(API_PREFIX):
            return JsonResponse({"error": error, "field": field}, status=400)
        return HttpResponseBadRequest(error, content_type="text/plain; charset=utf-8")
