"""Personal API tokens: made and revoked in the UI and the admin, hashed at rest, `Authorization: Bearer`."""

from __future__ import annotations

import re

import pytest
from django.contrib.auth.models import Permission
from django.core.exceptions import PermissionDenied
from django.test import Client

from rag.models import ApiToken
from rag.tokens import api_token_create, api_token_issue
from tests.factories import UserFactory, WorkspaceFactory
from tests.rag.retrieval_helpers import add_document
from tests.rag.retrieval_helpers import retrieval_isolation  # noqa: F401 (an autouse fixture)

pytestmark = pytest.mark.django_db
URL = "/api/v1/search"


@pytest.fixture
def indexed(workspace):
    add_document(workspace, "/w/tls.md", ["The gateway terminates TLS on port 8443."])
    return workspace


def _bearer(raw: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {raw}"}


def test_a_token_made_in_the_ui_is_shown_once_stored_hashed_and_opens_the_api(logged_in_client, user, indexed):
    page = logged_in_client.post("/account/tokens/", {"name": "CI docs check"}, follow=True).content.decode()
    raw = re.search(r'id="new-token">(docent_[\w-]+)<', page).group(1)
    token = ApiToken.objects.get(user=user)
    assert token.name == "CI docs check" and raw.startswith(token.prefix) and token.key_hash != raw
    assert raw not in str(list(ApiToken.objects.values_list()))  # only its hash is kept
    assert raw not in logged_in_client.get("/account/tokens/").content.decode()  # shown once
    assert "Name the token" in logged_in_client.post("/account/tokens/", {"name": ""}, follow=True).content.decode()
    assert ApiToken.objects.count() == 1

    response = Client().get(URL, {"q": "which port terminates TLS"}, headers=_bearer(raw))
    assert response.status_code == 200
    assert response.json()["workspace"] == indexed.slug and response.json()["results"][0]["path"] == "tls.md"
    token.refresh_from_db()
    assert token.last_used_at is not None


def test_a_revoked_or_unknown_token_is_401(logged_in_client, user, indexed):
    token, raw = api_token_create(user=user, name="old")
    response = logged_in_client.post(f"/account/tokens/{token.pk}/revoke/", follow=True)
    assert "Revoked old" in response.content.decode()
    anonymous = Client()
    for header in (_bearer(raw), _bearer(raw + "x"), _bearer("docent_nothing"), {"Authorization": f"Token {raw}"}):
        response = anonymous.get(URL, {"q": "tls"}, headers=header)
        assert response.status_code == 401 and "error" in response.json(), header
    # A session does not rescue a bad token: the token sent is the one judged.
    assert logged_in_client.get(URL, {"q": "tls"}, headers=_bearer(raw)).status_code == 401


def test_a_token_sees_only_its_users_workspaces(indexed):
    outsider = UserFactory()
    WorkspaceFactory(slug="elsewhere", members=[outsider])
    _, raw = api_token_create(user=outsider, name="theirs")
    response = Client().get(URL, {"q": "tls", "workspace": indexed.slug}, headers=_bearer(raw))
    assert response.status_code == 404 and indexed.slug in response.json()["error"]
    assert Client().get(URL, {"q": "tls"}, headers=_bearer(raw)).json()["workspace"] == "elsewhere"


def test_users_cannot_revoke_each_others_tokens(client, user):
    token, raw = api_token_create(user=user, name="mine")
    client.force_login(UserFactory())
    assert client.post(f"/account/tokens/{token.pk}/revoke/").status_code == 404
    assert client.get("/account/tokens/").content.decode().count("mine") == 0
    token.refresh_from_db()
    assert token.revoked_at is None


def test_staff_make_and_revoke_tokens_in_the_admin(staff_client, user, indexed):
    response = staff_client.post("/admin/rag/apitoken/add/", {"user": user.pk, "name": "made by staff"}, follow=True)
    raw = re.search(r"(docent_[\w-]+) \(copy it now", response.content.decode()).group(1)
    token = ApiToken.objects.get(name="made by staff")
    assert token.user == user and Client().get(URL, {"q": "tls"}, headers=_bearer(raw)).status_code == 200
    listing = staff_client.get("/admin/rag/apitoken/").content.decode()
    assert token.prefix in listing and token.key_hash not in listing
    staff_client.post("/admin/rag/apitoken/", {"action": "revoke", "_selected_action": [token.pk]})
    assert Client().get(URL, {"q": "tls"}, headers=_bearer(raw)).status_code == 401


def _token_staff():
    """Staff allowed to add and change tokens, but not a superuser."""
    staff = UserFactory(is_staff=True)
    staff.user_permissions.add(*Permission.objects.filter(codename__in=["add_apitoken", "change_apitoken",
                                                                       "view_apitoken"]))
    return staff


@pytest.mark.parametrize("owner_kind", ["superuser", "other user"])
def test_staff_cannot_mint_a_token_for_someone_else(client, owner_kind):
    staff = _token_staff()
    owner = UserFactory(is_staff=True, is_superuser=True) if owner_kind == "superuser" else UserFactory()
    client.force_login(staff)
    response = client.post("/admin/rag/apitoken/add/", {"user": owner.pk, "name": "stolen"})
    assert response.status_code == 200 and "Select a valid choice" in response.content.decode()
    assert not ApiToken.objects.exists()
    with pytest.raises(PermissionDenied, match="or a superuser can make a token"):
        api_token_issue(token=ApiToken(user=owner, name="stolen"), issued_by=staff)
    assert not ApiToken.objects.exists()


def test_staff_mint_their_own_tokens_and_superusers_anyones(client):
    staff, someone = _token_staff(), UserFactory()
    client.force_login(staff)
    response = client.post("/admin/rag/apitoken/add/", {"user": staff.pk, "name": "mine"}, follow=True)
    assert "copy it now" in response.content.decode()
    superuser = UserFactory(is_staff=True, is_superuser=True)
    client.force_login(superuser)
    client.post("/admin/rag/apitoken/add/", {"user": someone.pk, "name": "for them"})
    assert sorted(ApiToken.objects.values_list("user_id", "name")) == sorted([(staff.pk, "mine"),
                                                                               (someone.pk, "for them")])
