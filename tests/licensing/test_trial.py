"""The demo workspace's built-in Writer Pro trial: given by code, to the demo workspace, once per installation."""

from __future__ import annotations

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
    workspace, other = WorkspaceFactory(), WorkspaceFactory()
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
    first, second = WorkspaceFactory(), WorkspaceFactory()
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
    assert "Writer Pro trial · until" in page
