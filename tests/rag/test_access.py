"""Login everywhere but login, /healthz and /favicon.ico; workspaces are invisible to non-members."""

from __future__ import annotations

import pytest
from django.urls import URLPattern, URLResolver, get_resolver

from rag.middleware import SESSION_KEY
from tests.factories import UserFactory, WorkspaceFactory

PUBLIC = {"login", "healthz", "favicon",  # the icon: browsers fetch it on the login page too
          "openapi-json", "openapi-view",  # the API's schema and docs page describe it, and show no one's data
          "api-root"}  # django-ninja's root of the API: it serves nothing (404 to everyone)
# Machine endpoints answer 401 in JSON instead of redirecting to a login page.
MACHINE = {"metrics", "mcp"}  # machine clients: a 401 with WWW-Authenticate, no login page


def _named_routes(resolver: URLResolver, prefix: str = "") -> list[tuple[str, str]]:
    routes = []
    for entry in resolver.url_patterns:
        if isinstance(entry, URLResolver):
            if getattr(entry, "app_name", None) == "admin":
                continue  # the admin has its own login gate, tested below
            routes += _named_routes(entry, prefix + str(entry.pattern))
        elif isinstance(entry, URLPattern) and entry.name and "<" not in str(entry.pattern):
            routes.append((entry.name, "/" + prefix + str(entry.pattern)))
    return routes


@pytest.mark.django_db
def test_every_page_but_login_and_healthz_requires_login(client):
    routes = _named_routes(get_resolver())
    assert len(routes) >= 3
    for name, url in routes:
        if name in PUBLIC:
            continue
        response = client.get(url)
        if response.status_code == 405:  # a route that only takes POST (an API's answers): asked as it is meant
            response = client.post(url, {})
        if name in MACHINE or url.startswith("/api/"):
            assert response.status_code == 401, url
            continue
        assert response.status_code == 302, url
        assert response["Location"].startswith("/accounts/login/"), url
    assert client.get("/admin/").status_code == 302


@pytest.mark.django_db
def test_login_page_and_login_flow(client):
    UserFactory(username="ada")
    assert client.get("/accounts/login/").status_code == 200
    response = client.post("/accounts/login/", {"username": "ada", "password": "correct horse battery"})
    assert response.status_code == 302
    assert client.get("/").status_code == 200


@pytest.mark.django_db
def test_user_cannot_switch_to_a_workspace_they_are_not_in(client):
    alice, bob = UserFactory(), UserFactory()
    WorkspaceFactory(slug="alpha", members=[alice])
    beta = WorkspaceFactory(slug="beta", members=[bob])
    client.force_login(alice)
    response = client.post("/workspaces/switch/", {"workspace": "beta"})
    assert response.status_code == 404
    assert client.session.get(SESSION_KEY) != beta.pk
    page = client.get("/").content.decode()
    assert "Alpha" in page and "Beta" not in page


@pytest.mark.django_db
def test_stale_session_workspace_is_ignored(client):
    alice, bob = UserFactory(), UserFactory()
    WorkspaceFactory(slug="alpha", members=[alice])
    beta = WorkspaceFactory(slug="beta", members=[bob])
    client.force_login(alice)
    session = client.session
    session[SESSION_KEY] = beta.pk
    session.save()
    page = client.get("/").content.decode()
    assert '<option value="alpha" selected>Alpha</option>' in page and "Beta" not in page
