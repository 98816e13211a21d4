"""A local Git repository reads only where a source may read: never another workspace's mirror under DATA_DIR,
whichever way the repository points there (a `.git` file or link, `commondir`, alternates, a linked `objects`)."""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from rag.models import Chunk, Source
from rag.sources.git_sync import git_mirror_dir
from rag.sources.locations import LocationRefused, place_check
from rag.sources.services import SourceError, source_add
from tests.factories import WorkspaceFactory
from tests.rag.source_support import GitRepo, sync_here

SECRET = "# Payroll\n\nThe SECRET-7731 bonus pool is private to workspace B.\n"


@pytest.fixture
def other_mirror(db, tmp_path) -> Iterator[tuple[Path, str]]:
    """Workspace B's mirror under DATA_DIR (as a fetch of its remote leaves it) and the commit holding its text."""
    other = Source.objects.create(workspace=WorkspaceFactory(), name="payroll", kind=Source.Kind.GIT,
                                  location="https://git.example.com/payroll.git")
    private = GitRepo(tmp_path / "payroll")
    commit = private.commit({"docs/payroll.md": SECRET})
    mirror = git_mirror_dir(other)
    mirror.parent.mkdir(parents=True, exist_ok=True)
    private.git("clone", "-q", "--bare", str(private.path), str(mirror))
    yield mirror, commit
    shutil.rmtree(mirror, ignore_errors=True)


@pytest.fixture
def own_repo(tmp_path) -> GitRepo:
    repo = GitRepo(tmp_path / "handbook")
    repo.commit({"docs/welcome.md": "# Welcome\n\nThe office opens at nine.\n"})
    return repo


def _point_git_file(repo: GitRepo, mirror: Path, commit: str) -> None:
    shutil.rmtree(repo.path / ".git")
    (repo.path / ".git").write_text(f"gitdir: {mirror}\n")


def _point_git_link(repo: GitRepo, mirror: Path, commit: str) -> None:
    shutil.rmtree(repo.path / ".git")
    (repo.path / ".git").symlink_to(mirror)


def _point_alternates(repo: GitRepo, mirror: Path, commit: str) -> None:
    (repo.path / ".git" / "objects" / "info" / "alternates").write_text(f"{mirror / 'objects'}\n")
    (repo.path / ".git" / "refs" / "heads" / "main").write_text(commit + "\n")


def _point_objects_link(repo: GitRepo, mirror: Path, commit: str) -> None:
    shutil.rmtree(repo.path / ".git" / "objects")
    (repo.path / ".git" / "objects").symlink_to(mirror / "objects")
    (repo.path / ".git" / "refs" / "heads" / "main").write_text(commit + "\n")


def _point_commondir(repo: GitRepo, mirror: Path, commit: str) -> None:
    (repo.path / ".git" / "commondir").write_text(f"{mirror}\n")


POINTERS: dict[str, Callable[[GitRepo, Path, str], None]] = {
    "a .git file": _point_git_file, "a .git link": _point_git_link, "alternates": _point_alternates,
    "a linked objects folder": _point_objects_link, "commondir": _point_commondir,
}


@pytest.mark.parametrize("pointer", POINTERS)
def test_a_repository_pointing_into_another_mirror_is_refused_at_every_sync(pointer, workspace, own_repo,
                                                                           other_mirror):
    mirror, commit = other_mirror
    source = source_add(workspace=workspace, name="handbook", kind=Source.Kind.GIT, location=str(own_repo.path))
    POINTERS[pointer](own_repo, mirror, commit)  # after it was added: anyone who can write into the folder

    with pytest.raises(SourceError, match="data folder"):
        sync_here(source.pk)
    source.refresh_from_db()
    assert "data folder" in source.last_error
    assert not Chunk.objects.filter(document__workspace=workspace, text__contains="SECRET-7731").exists()


@pytest.mark.parametrize("pointer", ["a .git file", "commondir"])
def test_a_repository_pointing_into_another_mirror_cannot_be_added(pointer, workspace, own_repo, other_mirror):
    mirror, commit = other_mirror
    POINTERS[pointer](own_repo, mirror, commit)
    with pytest.raises(SourceError, match="data folder"):
        source_add(workspace=workspace, name="handbook", kind=Source.Kind.GIT, location=str(own_repo.path))
    assert not Source.objects.filter(workspace=workspace).exists()


def test_a_repository_pointing_outside_the_roots_is_refused(workspace, own_repo, tmp_path, settings):
    settings.SOURCE_FOLDER_ROOTS = [str(tmp_path / "roots")]
    inside = GitRepo(tmp_path / "roots" / "handbook")
    inside.commit({"docs/welcome.md": "# Welcome\n"})
    source = source_add(workspace=workspace, name="handbook", kind=Source.Kind.GIT, location=str(inside.path))
    (inside.path / ".git" / "objects" / "info" / "alternates").write_text(f"{own_repo.path / '.git' / 'objects'}\n")
    with pytest.raises(SourceError, match="outside the folders"):
        sync_here(source.pk)


def test_a_clean_repository_with_its_own_links_inside_still_syncs(workspace, own_repo):
    (own_repo.path / ".git" / "objects" / "info" / "alternates").write_text("# no alternates\n")
    source = source_add(workspace=workspace, name="handbook", kind=Source.Kind.GIT, location=str(own_repo.path))
    job = sync_here(source.pk)
    assert job.items.count() == 1


def test_a_fifo_inside_a_repository_is_refused_not_waited_on(own_repo):
    os.mkfifo(own_repo.path / ".git" / "objects" / "info" / "alternates")  # dulwich would wait on it for ever
    with pytest.raises(LocationRefused, match="not a regular file"):
        place_check(kind=Source.Kind.GIT, location=str(own_repo.path))
