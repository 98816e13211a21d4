"""The demo workspace's built-in Writer Pro trial: given by code, to the demo workspace, once per installation."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
import time_machine
from django.utils import timezone

from licensing import features
from licensing.models import Installation, License
from licensing.services import has_feature, trial_start, workspace_tier
from rag.bootstrap import DEMO_SLUG, demo_workspace_bootstrap
from rag.models import Workspace
from tests.factories import UserFactory, WorkspaceFactory

pytestmark = pytest.mark.django_db
GATED = list(features.REGISTRY)


def test_the_trial_opens_every_writer_pro_gate_for_its_days_then_closes(settings):
    settings.DEMO_TRIAL_DAYS = 30
    workspace, other = WorkspaceFactory(builtin_demo=True), WorkspaceFactory()
    assert trial_start(workspace_id=workspace.pk)
    assert all(has_feature(workspace.pk, key) for key in GATED)
    assert not any(has_feature(other.pk, key) for key in GATED)
    info = workspace_tier(workspace.pk)
    assert info is not None and info.trial and info.slug == "writer-pro"
    assert info.valid_until - timezone.now() > timedelta(days=29)
    assert not License.objects.exists()  # not a row anyone could copy or edit
    with time_machine.travel(timezone.now() + timedelta(days=31), tick=False):
        assert not any(has_feature(workspace.pk, key) for key in GATED)
        assert workspace_tier(workspace.pk) is None
        assert not trial_start(workspace_id=workspace.pk)  # expired is over: no second trial


def test_one_trial_per_installation_whatever_the_workspace():
    first, second = WorkspaceFactory(builtin_demo=True), WorkspaceFactory(builtin_demo=True)
    assert trial_start(workspace_id=first.pk)
    assert not trial_start(workspace_id=second.pk)
    assert not has_feature(second.pk, features.PROVENANCE)
    first.delete()  # a deleted demo workspace does not free the trial for another one
    assert Installation.objects.get().trial_workspace_id is None
    assert not trial_start(workspace_id=second.pk)


def test_a_fresh_install_gives_the_demo_workspace_the_trial_and_shows_it(client):
    admin = UserFactory(is_superuser=True, is_staff=True)
    lines = list(demo_workspace_bootstrap())
    assert any("Writer Pro trial" in line for line in lines)
    demo = Workspace.objects.get(slug=DEMO_SLUG)
    assert has_feature(demo.pk, features.RETRIEVAL_INTEGRATION)
    assert not any("trial" in line for line in demo_workspace_bootstrap())  # a restart starts nothing new
    client.force_login(admin)
    page = client.get("/documents/").content.decode()
    assert "Writer Pro trial · until" in re.sub(r"<[^>]+>", "", page)  # the date in a span a phone leaves out


def test_the_trial_lasts_30_days_at_most_whatever_is_configured(settings):
    settings.DEMO_TRIAL_DAYS = 100000
    workspace = WorkspaceFactory(builtin_demo=True)
    assert trial_start(workspace_id=workspace.pk)
    assert workspace_tier(workspace.pk).valid_until - timezone.now() <= timedelta(days=30)
    with time_machine.travel(timezone.now() + timedelta(days=30, minutes=1), tick=False):
        assert not has_feature(workspace.pk, features.PROVENANCE)


def test_an_installation_whose_trial_was_stored_longer_is_capped_when_read():
    workspace = WorkspaceFactory(builtin_demo=True)
    assert trial_start(workspace_id=workspace.pk)
    Installation.objects.update(trial_ends_at=timezone.now() + timedelta(days=100000))  # made before the cap
    assert workspace_tier(workspace.pk).valid_until - timezone.now() <= timedelta(days=30)


def test_a_demo_workspace_made_by_hand_before_the_first_start_gets_no_trial():
    WorkspaceFactory(slug=DEMO_SLUG, name="Production docs")
    assert not any("trial" in line for line in demo_workspace_bootstrap())
    demo = Workspace.objects.get(slug=DEMO_SLUG)
    assert not demo.builtin_demo and not has_feature(demo.pk, features.PROVENANCE)
    assert Installation.objects.get().trial_started_at is None


@pytest.mark.parametrize("change", [{"slug": "production"}, {"builtin_demo": False}], ids=["renamed", "unmarked"])
def test_the_trial_ends_when_the_demo_workspace_stops_being_the_demo(change):
    list(demo_workspace_bootstrap())
    demo = Workspace.objects.get(slug=DEMO_SLUG)
    assert demo.builtin_demo and has_feature(demo.pk, features.PROVENANCE)
    Workspace.objects.filter(pk=demo.pk).update(**change)
    assert not has_feature(demo.pk, features.PROVENANCE)
    assert workspace_tier(demo.pk) is None
