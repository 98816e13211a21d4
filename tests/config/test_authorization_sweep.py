"""Every URL pattern and API endpoint, and every admin action, as anonymous, as a member of another workspace,
as a non-staff member, as staff who may only view, and as a superuser: nothing answers 2xx where it must not,
nothing of another workspace leaks, no write goes through without the permission it needs, and nothing that a
role may reach fails.

URLs are enumerated from the resolver, so a new pattern is swept without anyone remembering to add it;
its parameters are filled with ids of the victim workspace's objects (a pattern whose parameter this
file cannot fill fails the test, asking for a fill).
"""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from bs4 import BeautifulSoup
from django.apps import apps
from django.contrib import admin
from django.contrib.auth.models import Permission
from django.contrib.contenttypes.models import ContentType
from django.test import Client
from django.urls import URLPattern, URLResolver, get_resolver, reverse

from chat.models import Conversation, Message
from rag.models import ApiToken, Contradiction, Document, DocumentFamily, IndexingJob, Source, Workspace
from rag.tokens import api_token_create
from tests.factories import UserFactory, WorkspaceFactory
from tests.licensing.factories import LicenseFactory
from tests.rag.factories import ChunkFactory, DocumentFactory

pytestmark = pytest.mark.django_db

MARKER = "Zanzibar-7741"  # in the victim workspace's titles and texts: must never reach another workspace
# Anonymous may read these (the icon shows on the login page; the API's schema and docs describe, never show data).
PUBLIC = {"healthz", "login", "admin:login", "favicon", "api:openapi-json", "api:openapi-view"}


@dataclass
class Victim:
    workspace_slug: str
    ids: dict[str, int]


@dataclass
class Route:
    name: str  # namespaced, e.g. "admin:rag_document_change"; "" for an unnamed pattern
    params: tuple[str, ...]


def _routes() -> list[Route]:
    routes: list[Route] = []

    def walk(resolver: URLResolver, namespace: str) -> None:
        for pattern in resolver.url_patterns:
            if isinstance(pattern, URLResolver):
                walk(pattern, f"{namespace}{pattern.namespace}:" if pattern.namespace else namespace)
            elif isinstance(pattern, URLPattern):
                name = f"{namespace}{pattern.name}" if pattern.name else ""
                routes.append(Route(name, tuple(pattern.pattern.regex.groupindex)))

    walk(get_resolver(), "")
    return routes


@pytest.fixture
def victim() -> Victim:
    owner, colleague = UserFactory(), UserFactory()
    workspace = WorkspaceFactory(name=f"Secret {MARKER}", members=[owner, colleague])
    document = DocumentFactory(workspace=workspace, title=f"Plans {MARKER}", path=f"/secret/{MARKER}.md")
    ChunkFactory(document=document, text=f"The launch code is {MARKER} and nobody else may read it.")
    job = IndexingJob.objects.create(workspace=workspace, source=IndexingJob.Source.UPLOAD, description=MARKER)
    conversation = Conversation.objects.create(workspace=workspace, user=owner, title=f"About {MARKER}")
    message = Message.objects.create(conversation=conversation, role="assistant", content=f"It is {MARKER}.")
    token, _raw = api_token_create(user=owner, name=f"token {MARKER}")
    source = Source.objects.create(workspace=workspace, name="secret", kind=Source.Kind.FOLDER,
                                   location=f"/secret/{MARKER}")
    return Victim(workspace.slug, {"owner": owner.pk, "colleague": colleague.pk, "document": document.pk,
                                   "job": job.pk, "conversation": conversation.pk, "message": message.pk,
                                   "token": token.pk, "source": source.pk})


# Which of the victim's objects a `pk` names, by URL name.
PK_OWNERS = {
    "document-detail": "document", "document-compare": "document", "job-detail": "job",
    "document-retry": "document", "document-remove": "document", "job-retry": "job",
    "conversation-detail": "conversation", "message-create": "conversation", "options-update": "conversation",
    "options-make-default": "conversation",
    "message-detail": "message", "message-stream": "message", "api-token-revoke": "token",
    "source-sync": "source",
}


def _url(route: Route, victim: Victim) -> str:
    if not route.name:
        return "/admin/rag/nothing-here/"  # the admin's catch-all
    kwargs: dict[str, str | int] = {}
    for param in route.params:
        if route.name == "admin:view_on_site" and param == "object_id":
            kwargs[param] = victim.ids["document"]
        elif param == "pk" and route.name in PK_OWNERS:
            kwargs[param] = victim.ids[PK_OWNERS[route.name]]
        elif param == "object_id" and route.name.startswith("admin:"):
            app_label, _, rest = route.name.removeprefix("admin:").partition("_")
            model = apps.get_model(app_label, rest.rsplit("_", 1)[0])
            kwargs[param] = model._default_manager.order_by("pk").values_list("pk", flat=True).first() or 1
        elif param == "conversation_id" and route.name.startswith("api:"):
            kwargs[param] = victim.ids["conversation"]
        elif param == "id" and route.name == "admin:auth_user_password_change":
            kwargs[param] = victim.ids["owner"]
        elif param == "content_type_id":
            kwargs[param] = ContentType.objects.get_for_model(Document).pk
        elif param == "app_label":
            kwargs[param] = "rag"
        else:
            raise AssertionError(f"the sweep cannot fill <{param}> of {route.name}: add it to _url")
    return reverse(route.name, kwargs=kwargs)


def _requests(victim: Victim) -> list[tuple[Route, str]]:
    found = [(route, _url(route, victim)) for route in _routes()]
    assert len(found) > 60 and {"api:search", "api:answers", "metrics", "document-detail", "message-stream"} <= {
        route.name for route, _ in found}
    return found


def _as(user_id: int | None) -> Client:
    client = Client()
    if user_id is not None:
        client.force_login(UserFactory._meta.model.objects.get(pk=user_id))
    return client


def _query(route: Route, victim: Victim) -> dict[str, str]:
    # The API is asked for the victim's workspace by name: naming it must not open it.
    if route.name.startswith("api:"):
        return {"q": MARKER, "workspace": victim.workspace_slug} if route.name == "api:search" else {
            "workspace": victim.workspace_slug}
    return {}


def _snapshot(victim: Victim) -> tuple:
    """The victim workspace's state (the outsider may well write in their own)."""
    slug = victim.workspace_slug
    return (Message.objects.filter(conversation__workspace__slug=slug).count(),
            list(Conversation.objects.filter(workspace__slug=slug).values_list("pk", "search_options", "title")),
            IndexingJob.objects.filter(workspace__slug=slug).count(),
            list(Document.objects.filter(workspace__slug=slug).values_list("archived", "status")),
            list(ApiToken.objects.filter(user_id=victim.ids["owner"]).values_list("revoked_at", flat=True)))


def test_anonymous_reaches_only_the_public_pages(victim):
    client = _as(None)
    for route, url in _requests(victim):
        response = client.get(url, _query(route, victim))
        if route.name in PUBLIC:
            continue
        assert response.status_code >= 300, (url, response.status_code)
        assert MARKER not in response.content.decode(errors="replace"), url


def test_a_member_of_another_workspace_sees_and_changes_nothing_of_the_victims(victim):
    outsider = UserFactory()
    WorkspaceFactory(members=[outsider])
    client = _as(outsider.pk)
    before = _snapshot(victim)
    for route, url in _requests(victim):
        response = client.get(url, _query(route, victim))
        body = b"" if response.streaming else response.content
        guarded = route.params or route.name.startswith("admin:") or route.name == "metrics" \
            or route.name.startswith("api:")
        if guarded and route.name not in PUBLIC:
            assert response.status_code >= 300, (url, response.status_code)
        assert MARKER not in body.decode(errors="replace"), url
        if route.name not in PUBLIC | {"logout", "admin:logout"}:  # logging out would end the sweep's session
            posted = client.post(url, {"question": MARKER, "workspace": victim.workspace_slug, "name": MARKER,
                                       "date": "any", "action": "delete_selected"})
            if route.params or route.name.startswith("admin:"):
                assert posted.status_code >= 300 and posted.status_code != 304, (url, posted.status_code)
                if posted.status_code in (301, 302):
                    assert posted["Location"].startswith("/admin/login/"), (url, posted["Location"])
    assert _snapshot(victim) == before
    assert client.get("/documents/").status_code == 200  # still the outsider, logged in, to the end


def test_a_non_staff_member_gets_no_admin_and_no_colleagues_conversations_or_tokens(victim):
    client = _as(victim.ids["colleague"])
    for route, url in _requests(victim):
        response = client.get(url, _query(route, victim))
        others = PK_OWNERS.get(route.name) in {"conversation", "message", "token"}
        if route.name.startswith("admin:") and route.name != "admin:login" or others or route.name == "metrics":
            assert response.status_code >= 300, (url, response.status_code)
        if others:
            assert response.status_code in (404, 405), (url, response.status_code)


def test_query_parameters_naming_the_victims_objects_open_nothing(victim):
    """The same ids in query strings, on the outsider's own pages."""
    outsider = UserFactory()
    own = DocumentFactory(workspace=WorkspaceFactory(members=[outsider]), title="Mine")
    ChunkFactory(document=own, text="My own text about nothing in particular at all.")
    victim_chunk = Document.objects.get(pk=victim.ids["document"]).chunks.get().pk
    client = _as(outsider.pk)
    assert client.get(f"/documents/{own.pk}/compare/", {"with": victim.ids["document"]}).status_code == 404
    for url, params in [(f"/documents/{own.pk}/", {"chunk": victim_chunk, "s": f"{victim_chunk}.0"}),
                        # Words of the victim's title and text (the marker itself would be echoed back).
                        ("/documents/", {"q": "Plans"}), ("/api/v1/search", {"q": "launch code nobody"}),
                        (f"/jobs/{victim.ids['job']}/", {}), ("/chat/", {"all": "1"})]:
        response = client.get(url, params)
        assert MARKER not in response.content.decode(errors="replace"), url


# --- every role, every admin action --------------------------------------------------------------------------

ROLES = ("anonymous", "member", "non-member", "view-only staff", "superuser")


def _role_user(role: str, victim: Victim) -> int | None:
    if role == "anonymous":
        return None
    if role == "member":
        return victim.ids["colleague"]
    if role == "non-member":
        return UserFactory().pk
    if role == "view-only staff":
        viewer = UserFactory(is_staff=True)
        viewer.user_permissions.add(*Permission.objects.filter(codename__startswith="view_"))
        return viewer.pk
    return UserFactory(is_staff=True, is_superuser=True).pk


@pytest.fixture
def reviewed(victim: Victim) -> Victim:
    """The victim with something for every admin action to act on: a license, a contradiction, two families."""
    workspace = Workspace.objects.get(slug=victim.workspace_slug)
    LicenseFactory(workspace=workspace)
    first = Document.objects.get(pk=victim.ids["document"])
    second = DocumentFactory(workspace=workspace, title=f"Plans v2 {MARKER}")
    other_chunk = ChunkFactory(document=second, text=f"The launch code is {MARKER}-2 now.")
    Contradiction.objects.create(workspace=workspace, chunk_a=first.chunks.get(), chunk_b=other_chunk, similarity=0.9)
    for document in (first, second):
        family = DocumentFamily.objects.create(workspace=workspace, name=document.title)
        Document.objects.filter(pk=document.pk).update(family=family)
    return victim


def _world() -> dict[str, str]:
    """Every row of Docent's own tables and the users: what an action could change."""
    models = [model for model in apps.get_models() if model._meta.app_label in {"rag", "chat", "licensing"}]
    state = {model._meta.label: repr(list(model._default_manager.order_by("pk").values_list())) for model in models}
    state["users"] = repr(list(UserFactory._meta.model.objects.order_by("pk").values_list(
        "pk", "username", "is_staff", "is_superuser", "password")))
    return state


def _admin_actions() -> list[tuple[str, str]]:
    """(changelist URL, action name) for every action of every model admin, the site-wide ones included."""
    found = []
    for model, model_admin in admin.site._registry.items():
        names = [*admin.site._actions, *(name if isinstance(name, str) else name.__name__
                                        for name in model_admin.actions or [])]
        changelist = reverse(f"admin:{model._meta.app_label}_{model._meta.model_name}_changelist")
        found.extend((changelist, name) for name in names)
    assert len(found) > 20 and ("/admin/rag/document/", "reindex") in found
    return found


def _post_action(client: Client, changelist: str, action: str) -> int:
    model = get_resolver().resolve(changelist).func.model_admin.model
    selected = list(model._default_manager.order_by("pk").values_list("pk", flat=True)[:50])
    return client.post(changelist, {"action": action, "_selected_action": selected, "index": 0}).status_code


def _server_error(route: Route, status: int) -> bool:
    return status >= 500 and not (route.name == "healthz" and status == 503)  # no worker runs here: a status


def test_every_admin_action_declares_a_permission_that_writes():
    """Django offers an action without `permissions` to anyone who may view the list; a write needs more."""
    for model, model_admin in admin.site._registry.items():
        for name in model_admin.actions or []:
            function = getattr(model_admin, name) if isinstance(name, str) else name
            needed = set(getattr(function, "allowed_permissions", ()))
            assert needed - {"view"}, f"{model._meta.label} action {name} needs only {needed or 'nothing'}"


@pytest.mark.parametrize("role", [role for role in ROLES if role != "superuser"])
def test_no_admin_action_changes_anything_for_a_role_without_change_permission(reviewed, role):
    client = _as(_role_user(role, reviewed))
    before = _world()
    for changelist, action in _admin_actions():
        status = _post_action(client, changelist, action)
        assert status < 500, (changelist, action, status)
        assert _world() == before, f"{role} changed something with {action} on {changelist}"


def test_view_only_staff_read_every_admin_page_and_write_through_none(reviewed):
    client = _as(_role_user("view-only staff", reviewed))
    before = _world()
    for route, url in _requests(reviewed):
        response = client.get(url, _query(route, reviewed))
        assert not _server_error(route, response.status_code), (url, response.status_code)
        if route.name.startswith("admin:") and route.name not in {"admin:logout", "admin:login"}:
            client.post(url, {"name": MARKER, "workspace": reviewed.workspace_slug, "user": reviewed.ids["owner"],
                              "key": MARKER, "revoked": "on", "action": "delete_selected", "post": "yes"})
    assert _world() == before
    assert client.get("/admin/rag/document/").status_code == 200  # still signed in, to the end


def test_a_superuser_reaches_every_page_and_runs_every_admin_action(reviewed):
    client = _as(_role_user("superuser", reviewed))
    for route, url in _requests(reviewed):
        response = client.get(url, _query(route, reviewed))
        assert not _server_error(route, response.status_code), (url, response.status_code)
    assert client.get("/admin/").status_code == 200
    for changelist, action in _admin_actions():
        status = _post_action(client, changelist, action)
        assert status in (200, 302), (changelist, action, status)


# --- the Content-Security-Policy on every page ------------------------------------------------------------------


def _inline_code(html: str) -> list[str]:
    """What a policy without 'unsafe-inline' would block: inline scripts, event-handler and hx-on attributes,
    style elements and attributes."""
    found = []
    for element in BeautifulSoup(html, "html.parser").find_all(True):
        if element.name == "script" and not element.get("src") and element.get("type") != "application/json":
            found.append(f"<script> {element.get_text()[:60]!r}")
        if element.name == "style":
            found.append(f"<style> {element.get_text()[:60]!r}")
        found.extend(f"<{element.name} {name}=...>" for name in element.attrs
                     if name.startswith(("on", "hx-on")) or name == "style")
    return found


@pytest.mark.parametrize("role", ["member", "superuser"])
def test_every_page_serves_the_policy_and_no_inline_script_handler_or_style(reviewed, role):
    """Issue 37: no Content-Security-Policy was served, and the pages needed inline handlers."""
    client = _as(_role_user(role, reviewed))
    pages = 0
    for route, url in [*_requests(reviewed), (None, "/accounts/login/")]:
        if route is not None and route.name in {"logout", "admin:logout"}:
            continue
        if route is None:
            client = _as(None)  # the login page, as its visitors see it
        response = client.get(url, _query(route, reviewed) if route else {})
        if response.streaming or not response.get("Content-Type", "").startswith("text/html"):
            continue
        pages += 1
        policy = response.get("Content-Security-Policy", "")
        assert "default-src 'self'" in policy and "frame-ancestors 'none'" in policy, (url, policy)
        assert "unsafe-inline" not in policy and "script-src" not in policy, (url, policy)  # scripts: 'self' only
        assert _inline_code(response.content.decode()) == [], url
    assert pages > 40
