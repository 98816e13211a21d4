"""has_feature and friends: gates on and off, the validity window, revocation, history."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
import time_machine
from django.db import connection
from django.test.utils import CaptureQueriesContext

from licensing import features
from licensing.models import License, LicenseEvent
from licensing.services import (
    feature_cache,
    has_feature,
    license_revoke,
    license_save,
    tier_for_feature,
    workspace_tier,
)
from tests.factories import UserFactory, WorkspaceFactory
from tests.licensing.factories import FeatureFactory, LicenseFactory, LicenseTierFactory, seeded_tier

pytestmark = pytest.mark.django_db

START = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)
END = datetime(2026, 4, 1, 9, 0, tzinfo=UTC)
GATED = [features.RETRIEVAL_INTEGRATION, features.VARIANT_METADATA, features.PROVENANCE, features.CONTRADICTION_REVIEW]


def test_no_license_means_every_gate_is_off():
    workspace = WorkspaceFactory()
    assert not any(has_feature(workspace.pk, key) for key in GATED)


@pytest.mark.parametrize("tier_slug", ["writer-pro", "enterprise"])
def test_writer_pro_and_above_open_every_gate(tier_slug):
    license = LicenseFactory(tier=seeded_tier(tier_slug))
    assert all(has_feature(license.workspace_id, key) for key in GATED)


def test_free_tier_license_opens_no_gate():
    license = LicenseFactory(tier=seeded_tier("free"))
    assert not any(has_feature(license.workspace_id, key) for key in GATED)


def test_a_license_opens_gates_for_its_own_workspace_only():
    license = LicenseFactory()
    other = WorkspaceFactory()
    assert has_feature(license.workspace_id, features.RETRIEVAL_INTEGRATION)
    assert not has_feature(other.pk, features.RETRIEVAL_INTEGRATION)


def test_a_key_opens_only_the_features_it_carries():
    license = LicenseFactory(tier=LicenseTierFactory(), features=[features.PROVENANCE])
    assert has_feature(license.workspace_id, features.PROVENANCE)
    assert not has_feature(license.workspace_id, features.RETRIEVAL_INTEGRATION)
    narrowed = LicenseFactory(tier=seeded_tier("enterprise"), features=[features.VARIANT_METADATA])
    assert [key for key in GATED if has_feature(narrowed.workspace_id, key)] == [features.VARIANT_METADATA]


def test_a_tier_made_in_the_admin_grants_nothing_a_key_does_not_carry():
    license = LicenseFactory(tier=LicenseTierFactory())
    assert not any(has_feature(license.workspace_id, key) for key in GATED)
    assert workspace_tier(license.workspace_id) is not None  # still shown as the workspace's tier


def test_undeclared_key_is_refused_softly(caplog):
    FeatureFactory(key="rag.not_declared")
    license = LicenseFactory(tier=LicenseTierFactory(), features=["rag.not_declared"])
    assert has_feature(license.workspace_id, "rag.not_declared") is False
    assert "undeclared gate key" in caplog.text


@pytest.mark.parametrize(
    ("moment", "expected"),
    [
        (START - timedelta(microseconds=1), False),
        (START, True),
        (START + timedelta(days=15), True),
        (END - timedelta(microseconds=1), True),
        (END, False),
        (END + timedelta(days=1), False),
    ],
)
def test_validity_window_includes_its_start_and_excludes_its_end(moment, expected):
    license = LicenseFactory(valid_from=START, valid_until=END)
    with time_machine.travel(moment, tick=False):
        assert has_feature(license.workspace_id, features.RETRIEVAL_INTEGRATION) is expected
        assert (workspace_tier(license.workspace_id) is not None) is expected


def test_open_ended_license_never_expires():
    license = LicenseFactory(valid_from=START, valid_until=None)
    with time_machine.travel(datetime(2099, 1, 1, tzinfo=UTC), tick=False):
        assert has_feature(license.workspace_id, features.RETRIEVAL_INTEGRATION)


def test_revocation_closes_the_gate_at_once_and_is_logged_once():
    admin = UserFactory(is_staff=True)
    license = LicenseFactory()
    assert has_feature(license.workspace_id, features.RETRIEVAL_INTEGRATION)
    license_revoke(license=license, actor=admin)
    license_revoke(license=license, actor=admin)
    assert not has_feature(license.workspace_id, features.RETRIEVAL_INTEGRATION)
    license.refresh_from_db()
    assert license.revoked and license.revoked_at is not None
    assert list(license.events.values_list("action", "actor")) == [(LicenseEvent.Action.REVOKE, admin.pk)]


def test_reinstating_reopens_the_gate():
    license = LicenseFactory(revoked=True)
    license.revoked = False
    license_save(license=license)
    assert has_feature(license.workspace_id, features.RETRIEVAL_INTEGRATION)
    assert license.events.get().action == LicenseEvent.Action.REINSTATE
    assert license.revoked_at is None


def test_a_revoked_license_does_not_hide_another_active_one():
    workspace = WorkspaceFactory()
    LicenseFactory(workspace=workspace, revoked=True)
    LicenseFactory(workspace=workspace, tier=seeded_tier("enterprise"))
    assert has_feature(workspace.pk, features.RETRIEVAL_INTEGRATION)


def test_services_write_the_history():
    admin = UserFactory(is_staff=True)
    workspace = WorkspaceFactory()
    license = license_save(license=License(workspace=workspace, tier=seeded_tier("writer-pro")), actor=admin)
    license.tier = seeded_tier("enterprise")
    license_save(license=license, actor=admin)
    license.valid_until = END
    license.valid_from = START
    license_save(license=license, actor=admin)
    events = list(license.events.order_by("pk"))
    assert [event.action for event in events] == ["issue", "tier_change", "update"]
    assert events[1].details == {"from": "writer-pro", "to": "enterprise"}
    assert events[2].details["valid_until"] == {"from": None, "to": END.isoformat()}
    assert not has_feature(workspace.pk, features.RETRIEVAL_INTEGRATION)  # made by hand: a note, not a grant
    assert all(event.actor == admin and event.actor_label == admin.username for event in events)


def test_workspace_tier_names_the_best_active_tier_and_its_expiry():
    workspace = WorkspaceFactory()
    assert workspace_tier(workspace.pk) is None
    LicenseFactory(workspace=workspace, tier=seeded_tier("writer-pro"), valid_until=None)
    ends = datetime.now(UTC) + timedelta(days=90)
    LicenseFactory(workspace=workspace, tier=seeded_tier("enterprise"), valid_until=ends)
    LicenseFactory(workspace=workspace, tier=seeded_tier("enterprise"), revoked=True)
    info = workspace_tier(workspace.pk)
    assert info is not None
    assert (info.name, info.slug, info.valid_until) == ("Enterprise", "enterprise", ends)
    assert not info.expires_soon


def test_expiry_notice_two_weeks_ahead():
    license = LicenseFactory(valid_until=datetime.now(UTC) + timedelta(days=10))
    info = workspace_tier(license.workspace_id)
    assert info is not None and info.expires_soon


def test_tier_for_feature_names_the_lowest_tier():
    assert tier_for_feature(features.RETRIEVAL_INTEGRATION) == "Writer Pro"
    assert tier_for_feature(features.CONTRADICTION_REVIEW) == "Writer Pro"
    assert tier_for_feature("nothing.enables.this") == ""


def test_feature_cache_answers_a_block_from_two_queries_and_forgets_after_it():
    license = LicenseFactory()
    workspace_id = license.workspace_id
    with feature_cache():
        with CaptureQueriesContext(connection) as queries:
            assert all(has_feature(workspace_id, key) for key in GATED)
        # The installation (id and trial), the workspace's licenses (features come from their keys and the
        # code): however many gates.
        assert len(queries) == 2
        license.tier = seeded_tier("free")
        license.save()  # a write behind the services' back: this block keeps its answer
        assert has_feature(workspace_id, features.RETRIEVAL_INTEGRATION)
    assert not has_feature(workspace_id, features.RETRIEVAL_INTEGRATION)


def test_a_block_inside_another_keeps_the_outer_ones_cache():
    license = LicenseFactory()
    workspace_id = license.workspace_id
    with feature_cache():
        assert has_feature(workspace_id, features.RETRIEVAL_INTEGRATION)
        license.tier = seeded_tier("free")
        license.save()
        with feature_cache():  # a search run by a request: the request's answer holds
            assert has_feature(workspace_id, features.RETRIEVAL_INTEGRATION)
        assert has_feature(workspace_id, features.RETRIEVAL_INTEGRATION)  # the inner block's end kept the cache
    assert not has_feature(workspace_id, features.RETRIEVAL_INTEGRATION)


def test_a_write_through_the_services_is_seen_by_the_same_block():
    license = LicenseFactory()
    with feature_cache():
        assert has_feature(license.workspace_id, features.RETRIEVAL_INTEGRATION)
        license_revoke(license=license)
        assert not has_feature(license.workspace_id, features.RETRIEVAL_INTEGRATION)
