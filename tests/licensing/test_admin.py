"""License management in the admin: staff only, filters, history, revocation, key installs."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta

import pytest
from django.contrib.auth.models import Permission
from django.test import Client

from licensing import features
from licensing.keys import LicensePayload, sign_license
from licensing.models import Feature, License
from licensing.services import has_feature, installation_id, license_save
from tests.factories import UserFactory, WorkspaceFactory
from tests.licensing.factories import LicenseFactory, seeded_tier, signed_key_for

pytestmark = pytest.mark.django_db

ADMIN_URLS = [
    "/admin/licensing/",
    "/admin/licensing/license/",
    "/admin/licensing/license/add/",
    "/admin/licensing/license/install/",
    "/admin/licensing/licensetier/",
    "/admin/licensing/feature/",
]


@pytest.fixture
def signed_key(vendor_key) -> str:
    payload = LicensePayload(
        license_id=uuid.uuid4(), installation=installation_id(), workspace="acme", tier="enterprise",
        valid_from=datetime.now(UTC) - timedelta(days=1), valid_until=None, issued_to="ACME",
    )
    return sign_license(payload, vendor_key)


@pytest.mark.parametrize("url", ADMIN_URLS)
def test_non_staff_users_are_sent_to_the_admin_login(client: Client, url: str):
    client.force_login(UserFactory())
    response = client.get(url)
    assert response.status_code == 302
    assert response["Location"].startswith("/admin/login/")


def test_non_staff_users_cannot_install_a_key(client: Client, signed_key: str):
    WorkspaceFactory(slug="acme")
    client.force_login(UserFactory())
    response = client.post("/admin/licensing/license/install/", {"workspace": "acme", "key": signed_key})
    assert response.status_code == 302 and response["Location"].startswith("/admin/login/")
    assert not License.objects.exists()


def test_staff_without_license_permissions_are_refused(client: Client, signed_key: str):
    WorkspaceFactory(slug="acme")
    client.force_login(UserFactory(is_staff=True))
    assert client.get("/admin/licensing/license/").status_code == 403
    response = client.post("/admin/licensing/license/install/", {"workspace": "acme", "key": signed_key})
    assert response.status_code == 403
    assert not License.objects.exists()


def test_staff_with_view_permission_only_cannot_install(client: Client, signed_key: str):
    WorkspaceFactory(slug="acme")
    viewer = UserFactory(is_staff=True)
    viewer.user_permissions.add(Permission.objects.get(codename="view_license"))
    client.force_login(viewer)
    assert client.get("/admin/licensing/license/").status_code == 200
    assert client.get("/admin/licensing/license/install/").status_code == 403


def test_license_list_filters_by_status(admin_client: Client):
    now = datetime.now(UTC)
    active = LicenseFactory(issued_to="active-one")
    LicenseFactory(issued_to="expired-one", valid_from=now - timedelta(days=60), valid_until=now - timedelta(days=1))
    LicenseFactory(issued_to="revoked-one", revoked=True)
    LicenseFactory(issued_to="future-one", valid_from=now + timedelta(days=3))
    for status in ("active", "expired", "revoked", "scheduled"):
        response = admin_client.get(f"/admin/licensing/license/?status={status}")
        shown = {license.issued_to for license in response.context["cl"].result_list}
        assert shown == {f"{'future' if status == 'scheduled' else status}-one"}, status
    page = admin_client.get("/admin/licensing/license/").content.decode()
    assert "Install a license key" in page
    assert str(active.workspace) in page


def test_adding_a_license_in_the_admin_means_installing_a_key(admin_client: Client):
    workspace = WorkspaceFactory()
    response = admin_client.post("/admin/licensing/license/add/", {
        "workspace": workspace.pk, "tier": seeded_tier("enterprise").pk,
        "valid_from_0": "2026-01-01", "valid_from_1": "00:00:00", "issued_to": "Docs team",
    })
    assert response.status_code == 302 and response["Location"] == "/admin/licensing/license/install/"
    assert not License.objects.exists()
    page = admin_client.get("/admin/licensing/license/install/").content.decode()
    assert installation_id() in page


def test_rows_without_a_valid_key_are_shown_granting_nothing(admin_client: Client, vendor_key):
    signed = LicenseFactory(issued_to="signed-one")
    License.objects.filter(pk=signed.pk).update(signed_key=signed_key_for(signed, private_key=vendor_key))
    by_hand = license_save(license=License(workspace=WorkspaceFactory(), tier=seeded_tier("enterprise"),
                                           issued_to="by-hand"))
    page = admin_client.get("/admin/licensing/license/").content.decode()
    assert installation_id() in page
    assert "grants nothing (unsigned: made without a license key)" in page
    assert admin_client.get(f"/admin/licensing/license/{signed.pk}/change/").content.decode().count(
        "valid: this license grants its tier") == 1
    assert "unsigned" in admin_client.get(f"/admin/licensing/license/{by_hand.pk}/change/").content.decode()


def test_the_installation_is_shown_read_only(admin_client: Client):
    page = admin_client.get("/admin/licensing/installation/").content.decode()
    assert installation_id() in page
    assert admin_client.get("/admin/licensing/installation/add/").status_code == 403


def test_revoke_action_and_history_inline(admin_client: Client):
    license = LicenseFactory()
    response = admin_client.post(
        "/admin/licensing/license/", {"action": "revoke_selected", "_selected_action": [license.pk]}, follow=True
    )
    assert "Revoked 1 license(s)." in response.content.decode()
    license.refresh_from_db()
    assert license.revoked
    page = admin_client.get(f"/admin/licensing/license/{license.pk}/change/").content.decode()
    assert "Revoked" in page and "history" in page.lower()
    # Licenses are revoked, never deleted: deleting would erase their history.
    assert admin_client.get(f"/admin/licensing/license/{license.pk}/delete/").status_code == 403


def test_install_form_installs_a_good_key(admin_client: Client, signed_key: str):
    workspace = WorkspaceFactory(slug="acme")
    assert admin_client.get("/admin/licensing/license/install/").status_code == 200
    response = admin_client.post("/admin/licensing/license/install/", {"workspace": "acme", "key": signed_key})
    license = License.objects.get()
    assert response.status_code == 302
    assert response["Location"] == f"/admin/licensing/license/{license.pk}/change/"
    assert (license.workspace, license.tier.slug) == (workspace, "enterprise")
    assert license.events.get().actor.username == "admin"
    again = admin_client.post("/admin/licensing/license/install/", {"workspace": "acme", "key": signed_key}, follow=True)
    assert "already installed" in again.content.decode()
    assert License.objects.count() == 1


def test_install_form_refuses_a_bad_key_with_its_reason(admin_client: Client, signed_key: str):
    WorkspaceFactory(slug="acme")
    WorkspaceFactory(slug="globex")
    response = admin_client.post("/admin/licensing/license/install/", {"workspace": "globex", "key": signed_key})
    assert response.status_code == 400
    assert "this license key is for workspace &#x27;acme&#x27;, not &#x27;globex&#x27;" in response.content.decode()
    tampered = signed_key[:-3] + ("AAA" if not signed_key.endswith("AAA") else "BBB")
    response = admin_client.post("/admin/licensing/license/install/", {"workspace": "acme", "key": tampered})
    assert response.status_code == 400 and "signature is not valid" in response.content.decode()
    assert not License.objects.exists()


def test_tier_admin_lists_features_per_tier(admin_client: Client):
    page = admin_client.get("/admin/licensing/licensetier/").content.decode()
    assert "Writer Pro" in page and "Enterprise" in page and "Free" in page
    tier = seeded_tier("writer-pro")
    page = admin_client.get(f"/admin/licensing/licensetier/{tier.pk}/change/").content.decode()
    assert "Canonical-aware retrieval" in page
    assert 'name="features"' not in page and 'name="slug"' not in page  # shown, not editable


@pytest.mark.parametrize("tier_slug", ["free", "writer-pro"])
def test_editing_a_tier_in_the_admin_cannot_widen_what_a_signed_key_grants(admin_client: Client, tier_slug: str):
    """Issue 37: a Free key, and a Writer Pro key signed with one feature, stay what they were signed for
    whatever a superuser adds to their tier."""
    signed = None if tier_slug == "free" else [features.PROVENANCE]
    license = LicenseFactory(tier=seeded_tier(tier_slug), features=signed)
    before = {key for key in features.REGISTRY if has_feature(license.workspace_id, key)}
    tier = seeded_tier(tier_slug)
    every_feature = list(Feature.objects.values_list("pk", flat=True))
    response = admin_client.post(f"/admin/licensing/licensetier/{tier.pk}/change/", {
        "name": f"{tier.name} widened", "slug": tier.slug, "rank": tier.rank, "features": every_feature})
    assert response.status_code == 302
    assert seeded_tier(tier_slug).name == f"{tier.name} widened"  # the edit itself went through
    assert {key for key in features.REGISTRY if has_feature(license.workspace_id, key)} == before
    assert before == ({features.PROVENANCE} if signed else set())
