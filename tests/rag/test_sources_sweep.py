"""Who may point a source where, swept: every source kind x every role (anonymous, member, staff without
permissions, staff with add_source, superuser) x every path (the Sources page, the admin's add and edit, `source
add`), with places behind links and `..`, under DATA_DIR, holding it, and outside SOURCE_FOLDER_ROOTS.

Nothing anywhere may end with a source reading DATA_DIR or outside the roots; a role that may add or edit does
so for a place that is allowed (so the sweep is not vacuously passing on a broken form).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from itertools import count
from pathlib import Path

import pytest
from django.contrib.auth.models import Permission
from django.core.management import CommandError, call_command
from django.test import Client

from rag.models import Source
from rag.sources import source_add
from rag.sources.locations import LocationRefused, place_check
from tests.factories import UserFactory
from tests.rag.source_support import GitRepo

pytestmark = pytest.mark.django_db

ROLES = ("anonymous", "member", "staff", "staff_add", "superuser")
ADDS = {"web": {"staff_add", "superuser"}, "admin_add": {"staff_add", "superuser"}, "admin_edit": {"superuser"},
        "cli": {"cli"}}


@dataclass(frozen=True)
class Place:
    label: str
    kind: str
    location: str
    allowed: bool


@pytest.fixture
def places(tmp_path, settings) -> list[Place]:
    roots = tmp_path / "roots"
    share = roots / "share"
    share.mkdir(parents=True)
    (share / "guide.md").write_text("# Guide\n\nPort 8443.\n")
    repo = GitRepo(roots / "repo")
    repo.commit({"guide.md": "# Guide\n"})
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    settings.SOURCE_FOLDER_ROOTS = [str(roots)]
    data_dir = Path(settings.DATA_DIR).resolve()
    uploads = data_dir / "uploads"
    uploads.mkdir(parents=True, exist_ok=True)
    mirror = data_dir / "sources" / "mirrors" / "1-1.git"
    (share / "to-uploads").symlink_to(uploads)
    (roots / "to-data").symlink_to(data_dir)
    dotted = share / os.path.relpath(uploads, share)  # share/../../.../var/test/uploads
    return [
        Place("folder", "folder", str(share), True),
        Place("folder through ..", "folder", f"{share}/../share", True),
        Place("folder: DATA_DIR/uploads", "folder", str(uploads), False),
        Place("folder: DATA_DIR by ..", "folder", str(dotted), False),
        Place("folder: a link to DATA_DIR/uploads", "folder", str(share / "to-uploads"), False),
        Place("folder: a link to DATA_DIR inside the roots", "folder", str(roots / "to-data"), False),
        Place("folder: holding DATA_DIR", "folder", str(data_dir.parent), False),
        Place("folder: outside the roots", "folder", str(elsewhere), False),
        Place("git: local", "git", str(roots / "repo"), True),
        Place("git: a mirror under DATA_DIR", "git", str(mirror), False),
        Place("git: file:// to a mirror", "git", f"file://{mirror}", False),
        Place("git: file:// by .. to DATA_DIR", "git", f"file://{roots}/../{os.path.relpath(mirror, tmp_path)}", False),
        Place("git: https", "git", "https://git.example.com/docs.git", True),
        Place("git: password in the URL", "git", "https://bot:pw@git.example.com/docs.git", False),
    ]


def _client(role: str, workspace) -> Client:
    client = Client()
    if role == "anonymous":
        return client
    user = UserFactory(is_staff=role != "member", is_superuser=role == "superuser")
    if role == "staff_add":
        user.user_permissions.add(Permission.objects.get(codename="add_source"))
    workspace.members.add(user)
    client.force_login(user)
    return client


def _form(name: str, place: Place, workspace) -> dict:
    return {"workspace": workspace.pk, "name": name, "kind": place.kind, "location": place.location, "branch": "",
            "tags_pattern": "", "include": "", "exclude": "", "every_minutes": "0"}


def _attempt(path: str, role: str, place: Place, workspace, name: str, existing: Source) -> None:
    if path == "cli":
        where = ["--folder" if place.kind == "folder" else "--git", place.location]
        try:
            call_command("source", "add", name, "--workspace", workspace.slug, *where, "--every", "0", verbosity=0)
        except CommandError:
            pass
        return
    client = _client(role, workspace)
    if path == "web":
        client.post("/documents/sources/", _form(name, place, workspace))
    elif path == "admin_add":
        client.post("/admin/rag/source/add/", _form(name, place, workspace))
    else:
        client.post(f"/admin/rag/source/{existing.pk}/change/", _form(existing.name, place, workspace))


def _outcome(path: str, name: str, existing: Source, start: Path) -> bool:
    """Whether the attempt took: a new source, or the edited one moved from where it started."""
    if path != "admin_edit":
        return Source.objects.filter(name=name).exists()
    existing.refresh_from_db()
    return existing.location != str(start)


def test_sources_sweep(places, workspace, tmp_path):
    start = tmp_path / "roots" / "start"  # where edited sources start: every allowed place is elsewhere
    start.mkdir()
    names = count()
    wrong = []
    for path, allowed_roles in ADDS.items():
        for role in (("cli",) if path == "cli" else ROLES):
            for place in places:
                existing = source_add(workspace=workspace, name=f"edit{next(names)}", kind="folder",
                                      location=str(start))
                name = f"s{next(names)}"
                _attempt(path, role, place, workspace, name, existing)
                took = _outcome(path, name, existing, start)
                expected = role in allowed_roles and place.allowed
                if took != expected:
                    wrong.append(f"{path} as {role}, {place.label}: {'took' if took else 'refused'}")
    for source in Source.objects.all():  # whatever happened, no source reads DATA_DIR or outside the roots
        try:
            place_check(kind=source.kind, location=source.location)
        except LocationRefused as exc:
            wrong.append(f"source {source.name} kept: {exc}")
    assert not wrong, "\n".join(wrong)


def test_a_source_moved_under_data_dir_later_fails_its_sync_with_the_reason(places, workspace, settings):
    from rag.sources import SourceError, source_sync

    source = source_add(workspace=workspace, name="share", kind="folder", location=places[0].location)
    Source.objects.filter(pk=source.pk).update(location=str(Path(settings.DATA_DIR) / "uploads"))
    with pytest.raises(SourceError, match="data folder"):
        source_sync(source_id=source.pk, enqueue=False)
    source.refresh_from_db()
    assert "data folder" in source.last_error and source.last_job is None


def test_with_no_roots_named_no_source_reads_this_machine(tmp_path, settings):
    folder = tmp_path / "share"
    folder.mkdir()
    repo = GitRepo(tmp_path / "repo")
    repo.commit({"guide.md": "# Guide\n"})
    settings.SOURCE_FOLDER_ROOTS = []
    for kind, location in (("folder", str(folder)), ("git", str(repo.path)), ("git", f"file://{repo.path}")):
        with pytest.raises(LocationRefused, match="SOURCE_FOLDER_ROOTS names no folder"):
            place_check(kind=kind, location=location)
    place_check(kind="git", location="https://git.example.com/docs.git")  # a remote reads nothing here
