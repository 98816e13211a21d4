"""The Sources page, its "Sync now", the admin action, and the schedule that beat runs."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.conf import settings
from django.contrib.auth.models import Permission
from django.utils import timezone

from rag.models import Source
from rag.sources.services import source_add, sources_due
from rag.sources.tasks import sync_due_sources, sync_source
from devkit.source_faults import first_sync_taken
from tests.rag.source_support import GitRepo, sync_here
from tests.factories import UserFactory, WorkspaceFactory


@pytest.fixture
def share(tmp_path):
    folder = tmp_path / "share"
    folder.mkdir()
    (folder / "guide.md").write_text("# Guide\n\nThe gateway listens on port 8443.\n")
    return folder


def test_members_see_their_sources_and_sync_them_now(logged_in_client, workspace, share,
                                                     django_capture_on_commit_callbacks):
    source = source_add(workspace=workspace, name="share", kind="folder", location=str(share))
    other = source_add(workspace=WorkspaceFactory(), name="not-yours", kind="folder", location=str(share))
    page = logged_in_client.get("/documents/sources/")
    assert page.status_code == 200 and b"share" in page.content and b"not-yours" not in page.content
    assert b'<span class="badge">queued</span>' in page.content  # its first sync, queued on adding
    assert b"Staff add sources" in page.content
    assert b'hx-trigger="every 2s"' in page.content  # the table asks again until the sync is done
    assert str(share).encode() not in page.content  # where on the server: for staff
    assert b"already queued" in logged_in_client.post(f"/documents/sources/{source.pk}/sync/", follow=True).content
    first_sync_taken(source.pk)
    page = logged_in_client.get("/documents/sources/")
    assert b"never synced" in page.content and b'hx-trigger="every 2s"' not in page.content

    with django_capture_on_commit_callbacks(execute=False):
        response = logged_in_client.post(f"/documents/sources/{source.pk}/sync/")
    assert response.status_code == 302 and response["Location"] == "/documents/sources/"
    assert logged_in_client.post(f"/documents/sources/{other.pk}/sync/").status_code == 404

    again = logged_in_client.post(f"/documents/sources/{source.pk}/sync/", follow=True)
    assert b"already queued" in again.content  # the first has not run: one sync at a time


def test_only_users_allowed_to_add_sources_add_them_and_bad_input_is_a_400_with_the_reason(client, workspace, share,
                                                                                          user):
    client.force_login(user)
    form = {"name": "share", "kind": "folder", "location": str(share), "every_minutes": "30"}
    client.post("/documents/sources/", form)
    assert not Source.objects.exists()

    staff = UserFactory(is_staff=True)
    workspace.members.add(staff)
    client.force_login(staff)
    refused = client.post("/documents/sources/", form, follow=True)  # staff alone is not enough
    assert not Source.objects.exists() and b"Only staff allowed to add sources" in refused.content
    assert b"Add a source" not in refused.content

    staff.user_permissions.add(Permission.objects.get(codename="add_source"))
    staff = UserFactory._meta.model.objects.get(pk=staff.pk)  # permissions are cached on the instance
    client.force_login(staff)
    bad = client.post("/documents/sources/", {**form, "location": str(share / "missing")})
    assert bad.status_code == 400 and b"no such folder" in bad.content
    good = client.post("/documents/sources/", {**form, "exclude": "drafts/*\n*.tmp"})
    assert good.status_code == 302
    source = Source.objects.get()
    assert (source.every_minutes, source.exclude) == (30, ["drafts/*", "*.tmp"])


def test_the_schedule_syncs_what_is_due_and_beat_runs_it(workspace, share, django_capture_on_commit_callbacks,
                                                        monkeypatch):
    due = source_add(workspace=workspace, name="due", kind="folder", location=str(share), every_minutes=10)
    recent = source_add(workspace=workspace, name="recent", kind="folder", location=str(share), every_minutes=10)
    manual = source_add(workspace=workspace, name="manual", kind="folder", location=str(share), every_minutes=0)
    now = timezone.now()
    Source.objects.filter(pk=due.pk).update(last_sync_at=now - timedelta(minutes=11))
    Source.objects.filter(pk=recent.pk).update(last_sync_at=now - timedelta(minutes=3))
    assert sources_due(now=now) == [due.pk]
    assert manual.pk not in sources_due(now=now + timedelta(days=1))

    sent = []
    monkeypatch.setattr("rag.sources.tasks.task_send", lambda name, *ids: sent.append((name, *ids)))
    assert sync_due_sources() == [due.pk] and sent == [(sync_source.name, due.pk)]
    schedule = settings.CELERY_BEAT_SCHEDULE["sync-due-sources"]
    assert schedule["task"] == sync_due_sources.name == "rag.sources.tasks.sync_due_sources"


def test_admin_lists_sources_and_syncs_them(staff_client, staff_user, workspace, share,
                                            django_capture_on_commit_callbacks, monkeypatch):
    source = source_add(workspace=workspace, name="share", kind="folder", location=str(share))
    first_sync_taken(source.pk)  # its first sync taken by a worker
    assert b"never synced" in staff_client.get("/admin/rag/source/").content
    sent = []
    monkeypatch.setattr("rag.sources.services.task_send", lambda name, *ids: sent.append(ids))
    with django_capture_on_commit_callbacks(execute=True):
        staff_client.post("/admin/rag/source/", {"action": "sync_now", "_selected_action": [source.pk]})
    assert sent == [(source.pk, staff_user.pk)]  # queued for a worker, as the page's button
    assert staff_client.get(f"/admin/rag/source/{source.pk}/change/").status_code == 200


def test_members_read_why_a_sync_failed_but_not_where_staff_read_all(client, workspace, share, user, tmp_path):
    folder = source_add(workspace=workspace, name="share", kind="folder", location=str(share))
    remote = source_add(workspace=workspace, name="remote", kind="git", location="https://git.internal.example/d.git")
    Source.objects.filter(pk=folder.pk).update(paused_reason=f"the folder {share} is gone (deleted or unmounted)")
    Source.objects.filter(pk=remote.pk).update(
        last_error="cannot fetch https://git.internal.example/d.git: Failed to resolve 'git.internal.example'")
    client.force_login(user)
    page = client.get("/documents/sources/").content.decode()
    assert "is gone" in page and "cannot fetch" in page
    assert str(share) not in page and "git.internal.example" not in page and str(tmp_path) not in page

    staff = UserFactory(is_staff=True)
    workspace.members.add(staff)
    client.force_login(staff)
    page = client.get("/documents/sources/").content.decode()
    assert f"the folder {share} is gone" in page and "Failed to resolve &#x27;git.internal.example&#x27;" in page


def test_a_sources_jobs_are_named_for_it_and_a_git_jobs_copies_say_which_tag(staff_client, staff_user, workspace,
                                                                             share, tmp_path):
    workspace.members.add(staff_user)
    added = staff_client.post("/documents/sources/", {"name": "handbook", "kind": "folder", "location": str(share),
                                                      "every_minutes": "0"}, follow=True)
    said = added.content.decode()
    assert "first sync is queued, then when someone presses Sync now" in said
    folder = Source.objects.get(name="handbook")
    job = sync_here(folder.pk)
    assert job.description == "handbook (folder)"  # not the folder's last name ("share")

    repo = GitRepo(tmp_path / "docs-repo")
    repo.commit({"docs/settings.md": "# Settings\n\nThe port is 8080.\n"})
    repo.tag("v1.0")
    repo.commit({"docs/settings.md": "# Settings\n\nThe port is 9090.\n"})
    repo.tag("v2.0")
    repo.commit({"docs/settings.md": "# Settings\n\nThe port is 9443.\n"})
    git = source_add(workspace=workspace, name="docs", kind="git", location=str(repo.path))
    job = sync_here(git.pk)
    rows = [row for row in staff_client.get(f"/jobs/{job.pk}/").content.decode().split("<tr>")
            if "docs/settings.md" in row]
    badges = sorted(re.search(r'<span class="badge" title="[^"]*">([^<]+)</span>', row).group(1) for row in rows)
    assert badges == ["branch head", "v1.0", "v2.0"]  # each copy of the one path says which it is


def test_adding_a_source_queues_its_first_sync_whatever_its_schedule(staff_client, staff_user, workspace, share,
                                                                     django_capture_on_commit_callbacks, monkeypatch):
    workspace.members.add(staff_user)
    sent = []
    monkeypatch.setattr("rag.sources.services.task_send", lambda name, *ids: sent.append((name, *ids)))
    with django_capture_on_commit_callbacks(execute=True):
        staff_client.post("/documents/sources/", {"name": "manual", "kind": "folder", "location": str(share),
                                                  "every_minutes": "0"})
    source = Source.objects.get(name="manual")
    assert sent == [(sync_source.name, source.pk, staff_user.pk)]  # on demand, and read once on adding all the same

    with django_capture_on_commit_callbacks(execute=True):  # the admin's add, the same
        staff_client.post("/admin/rag/source/add/", {
            "workspace": workspace.pk, "name": "by-admin", "kind": "folder", "location": str(share), "branch": "",
            "tags_pattern": "", "include": "", "exclude": "", "every_minutes": "0"})
    assert sent[1:] == [(sync_source.name, Source.objects.get(name="by-admin").pk, staff_user.pk)]


def test_sync_now_and_the_tables_polling_answer_with_the_table_alone(logged_in_client, workspace, share,
                                                                    django_capture_on_commit_callbacks):
    source = source_add(workspace=workspace, name="share", kind="folder", location=str(share))
    first_sync_taken(source.pk)
    htmx = {"HTTP_HX_REQUEST": "true"}
    with django_capture_on_commit_callbacks(execute=False):
        pressed = logged_in_client.post(f"/documents/sources/{source.pk}/sync/", **htmx).content.decode()
    assert pressed.lstrip().startswith('<div id="source-table"') and "<h1>" not in pressed
    assert 'hx-trigger="every 2s"' in pressed and '<span class="badge">queued</span>' in pressed
    again = logged_in_client.post(f"/documents/sources/{source.pk}/sync/", **htmx).content.decode()
    assert 'role="alert"' in again and "already queued" in again
    sync_here(source.pk)  # the worker's sync, done
    polled = logged_in_client.get("/documents/sources/", **htmx).content.decode()
    assert "1 indexed" in polled and "hx-trigger" not in polled  # done: the table stops asking
