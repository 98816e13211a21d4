"""Document pages. Views check input, call one selector or service, render."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse, HttpResponseBadRequest
from django.shortcuts import redirect, render
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.http import require_GET, require_POST

from rag.middleware import SESSION_KEY
from rag.selectors import workspace_get


@require_GET
def home(request: HttpRequest) -> HttpResponse:
    return render(request, "rag/home.html", {"workspace": request.workspace})


@require_POST
def workspace_switch(request: HttpRequest) -> HttpResponse:
    slug = request.POST.get("workspace", "")
    if not slug:
        return HttpResponseBadRequest("Choose a workspace.")
    workspace = workspace_get(user=request.user, slug=slug)
    request.session[SESSION_KEY] = workspace.pk
    target = request.POST.get("next", "")
    if not url_has_allowed_host_and_scheme(target, allowed_hosts={request.get_host()}, require_https=request.is_secure()):
        target = "home"
    return redirect(target)
