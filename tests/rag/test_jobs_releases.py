"""A calendar edit in the admin places the workspace's documents again in a worker, never in the web request, and
the calendar's page shows how far that is (issue 52 item 5; rag.jobs.releases)."""

from __future__ import annotations

import pytest
from django.urls import reverse

from config.celery import app
from rag.models import Release

pytestmark = pytest.mark.django_db


def _messages(response) -> list[str]:
    return [str(message) for message in response.context["messages"]]


def test_a_calendar_edit_queues_the_placing_and_its_state_shows(staff_client, workspace,
                                                                 django_capture_on_commit_callbacks):
    form = {"workspace": workspace.pk, "series": "Harbor", "version": "2.0", "date": "2024-05-01"}
    with django_capture_on_commit_callbacks() as queued:
        response = staff_client.post(reverse("admin:rag_release_add"), form)
        assert response.status_code == 302
        again = staff_client.post(reverse("admin:rag_release_add"), {**form, "version": "2.1"})
        assert again.status_code == 302
    assert len(queued) == 1  # the second edit rides on the queued settle
    listing = staff_client.get(reverse("admin:rag_release_changelist"))
    assert any(f"{workspace.name}: placing documents by the calendar: queued" in said for said in _messages(listing))

    app.conf.task_always_eager = True  # the one place this test runs the queued task in-process
    try:
        queued[0]()
    finally:
        app.conf.task_always_eager = False
    listing = staff_client.get(reverse("admin:rag_release_changelist"))
    assert any(f"{workspace.name}: documents placed by the calendar at" in said for said in _messages(listing))
    assert Release.objects.filter(workspace=workspace, source=Release.Source.STAFF).count() == 2
    with django_capture_on_commit_callbacks() as queued_again:  # settled: the next edit queues its own
        staff_client.post(reverse("admin:rag_release_add"), {**form, "version": "2.2"})
    assert len(queued_again) == 1
