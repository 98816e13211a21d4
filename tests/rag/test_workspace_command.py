"""`manage.py workspace` and `ingest --create-workspace`: the command-line contract for workspaces."""

from __future__ import annotations

import io

import pytest
from django.core.management import CommandError, call_command

from rag.models import Workspace
from tests.factories import UserFactory, WorkspaceFactory


def _run(*args: str) -> str:
    out = io.StringIO()
    call_command(*args, stdout=out, stderr=io.StringIO())
    return out.getvalue()


@pytest.mark.django_db
def test_create_list_and_add_member():
    assert "no workspaces" in _run("workspace", "list")
    assert _run("workspace", "create", "handbook", "--name", "Staff handbook") == \
        "created workspace handbook (Staff handbook)\n"
    assert Workspace.objects.get(slug="handbook").name == "Staff handbook"
    _run("workspace", "create", "release-notes")
    assert Workspace.objects.get(slug="release-notes").name == "Release notes"

    UserFactory(username="ana")
    assert _run("workspace", "add-member", "handbook", "ana") == "ana is a member of handbook\n"
    _run("workspace", "add-member", "handbook", "ana")  # twice is once
    assert list(Workspace.objects.get(slug="handbook").members.values_list("username", flat=True)) == ["ana"]

    lines = _run("workspace", "list").splitlines()
    assert lines[0].split() == ["slug", "members", "documents", "name"]
    assert lines[1].split() == ["handbook", "1", "0", "Staff", "handbook"]
    assert lines[2].split()[:3] == ["release-notes", "0", "0"]


@pytest.mark.django_db
@pytest.mark.parametrize(("args", "message"), [
    (("workspace", "create", "taken"), "a workspace with slug 'taken' exists already"),
    (("workspace", "create", "not a slug"), "'not a slug' is not a slug"),
    (("workspace", "add-member", "nowhere", "ana"), "no workspace with slug 'nowhere'"),
    (("workspace", "add-member", "taken", "nobody"), "no user 'nobody'"),
])
def test_mistakes_are_one_clear_line(args, message):
    WorkspaceFactory(slug="taken")
    with pytest.raises(CommandError, match=message):
        _run(*args)
    assert Workspace.objects.count() == 1


@pytest.mark.django_db
def test_ingest_creates_the_workspace_only_when_asked(tmp_path):
    (tmp_path / "note.md").write_text("# Rotation\n\nKeys rotate every ninety days on the first Monday.\n")
    with pytest.raises(CommandError, match="no workspace with slug 'fresh'; add --create-workspace"):
        _run("ingest", str(tmp_path), "--workspace", "fresh", "--sync")
    assert not Workspace.objects.filter(slug="fresh").exists()

    summary = _run("ingest", str(tmp_path), "--workspace", "fresh", "--sync", "--create-workspace")
    workspace = Workspace.objects.get(slug="fresh")
    assert workspace.documents.count() == 1
    assert summary.startswith(f"job {workspace.jobs.get().pk}: 1 file(s): 1 indexed in ")
