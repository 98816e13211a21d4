"""Per-request caching: one answer within a request, the admin's change on the next one."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from bs4 import BeautifulSoup
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.test import Client, RequestFactory

from licensing import features
from licensing.middleware import FeatureCacheMiddleware
from licensing.models import LicenseEvent
from licensing.services import has_feature
from tests.factories import UserFactory, WorkspaceFactory
from tests.licensing.factories import LicenseFactory, seeded_tier

pytestmark = [pytest.mark.django_db, pytest.mark.urls("tests.licensing.urls")]


def admin_form_data(client: Client, url: str) -> dict[str, str]:
    """What a browser would post back from an admin change form, unchanged."""
    page = BeautifulSoup(client.get(url).content, "html.parser")
    form = page.find("form", id=lambda value: value and value.endswith("_form"))
    data: dict[str, str] = {}
    for field in form.find_all(["input", "select", "textarea"]):
        name = field.get("name")
        if not name or field.get("type") in {"submit", "button", "file"}:
            continue
        if field.name == "select":
            chosen = field.find_all("option", selected=True)
            data[name] = chosen[0].get("value", "") if chosen else ""
        elif field.name == "textarea":
            data[name] = field.text.lstrip("\n")
        elif field.get("type") == "checkbox":
            if field.has_attr("checked"):
                data[name] = field.get("value", "on")
        else:
            data[name] = field.get("value", "")
    return data


def test_gate_answers_are_fixed_for_one_request():
    license = LicenseFactory()

    def view(request: HttpRequest) -> HttpResponse:
        before = has_feature(license.workspace_id, features.RETRIEVAL_INTEGRATION)
        license.revoked = True
        license.save()  # another process revoking mid-request
        after = has_feature(license.workspace_id, features.RETRIEVAL_INTEGRATION)
        return JsonResponse({"before": before, "after": after})

    response = FeatureCacheMiddleware(view)(RequestFactory().get("/"))
    assert response.content == b'{"before": true, "after": true}'
    # The next request (and any code outside one) reads afresh.
    response = FeatureCacheMiddleware(view)(RequestFactory().get("/"))
    assert response.content == b'{"before": false, "after": false}'


def test_a_revocation_in_the_admin_shows_on_the_next_request_and_the_tier_cannot_be_edited(
    licensing_wired, admin_client
):
    member = UserFactory()
    workspace = WorkspaceFactory(members=[member])
    license = LicenseFactory(workspace=workspace, tier=seeded_tier("writer-pro"))
    member_client = Client()
    member_client.force_login(member)

    assert member_client.get("/test/gates/").json()[features.RETRIEVAL_INTEGRATION] is True

    url = f"/admin/licensing/license/{license.pk}/change/"
    data = admin_form_data(admin_client, url)
    response = admin_client.post(url, {**data, "tier": str(seeded_tier("enterprise").pk), "revoked": "on"})
    assert response.status_code == 302, response.context["adminform"].form.errors

    assert member_client.get("/test/gates/").json() == {key: False for key in features.REGISTRY}
    license.refresh_from_db()
    assert license.tier.slug == "writer-pro"  # signed by the vendor: read-only here
    event = license.events.get()
    assert (event.action, event.actor.username) == (LicenseEvent.Action.REVOKE, "admin")


def test_a_tier_edited_in_the_admin_changes_no_gate_on_the_next_request(licensing_wired, admin_client):
    """What a tier grants is fixed in code (licensing.features): the tier screen edits its name and rank only."""
    member = UserFactory()
    workspace = WorkspaceFactory(members=[member])
    LicenseFactory(workspace=workspace, tier=seeded_tier("writer-pro"))
    member_client = Client()
    member_client.force_login(member)
    assert member_client.get("/test/gates/").json() == {key: True for key in features.REGISTRY}

    tier = seeded_tier("writer-pro")
    url = f"/admin/licensing/licensetier/{tier.pk}/change/"
    data = admin_form_data(admin_client, url)
    response = admin_client.post(url, {**data, "name": "Writer", "features": []})
    assert response.status_code == 302
    assert member_client.get("/test/gates/").json() == {key: True for key in features.REGISTRY}


def test_members_see_their_workspace_tier_and_expiry(licensing_wired):
    member = UserFactory()
    workspace = WorkspaceFactory(members=[member])
    LicenseFactory(workspace=workspace, tier=seeded_tier("enterprise"), valid_until=datetime(2031, 3, 12, tzinfo=UTC))
    client = Client()
    client.force_login(member)
    text = " ".join(BeautifulSoup(client.get("/test/badge/").content, "html.parser").get_text().split())
    assert text == "Enterprise · until 12 Mar 2031 · development key: not a genuine license"


def test_expiring_license_is_flagged_and_no_license_reads_free(licensing_wired):
    member = UserFactory()
    workspace = WorkspaceFactory(members=[member])
    client = Client()
    client.force_login(member)
    assert "Free" in client.get("/test/badge/").content.decode()
    LicenseFactory(workspace=workspace, valid_until=datetime.now(UTC) + timedelta(days=3))
    page = client.get("/test/badge/").content.decode()
    assert "Writer Pro" in page and "badge warn" in page


def test_a_user_sees_only_the_tier_of_a_workspace_they_belong_to(licensing_wired):
    outsider = UserFactory()
    LicenseFactory(tier=seeded_tier("enterprise"))
    client = Client()
    client.force_login(outsider)
    assert "Enterprise" not in client.get("/test/badge/").content.decode()
