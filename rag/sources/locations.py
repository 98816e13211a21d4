"""Where on this machine a source may read: never in DATA_DIR, and only inside SOURCE_FOLDER_ROOTS (by default a
`sources/` folder beside DATA_DIR; none when it is set empty).

DATA_DIR holds the secret key, every workspace's uploads and every Git source's mirror: a folder or a local
repository there (or one holding DATA_DIR) would hand them to whoever may add or edit a source. The check runs
when a source is added or edited (rag.sources.services.source_check) and again before each sync.

A local repository is checked further: every place dulwich would read for it (rag.sources.git.repository_places).
Its path alone says little: a `.git` file or link, `commondir`, `objects/info/alternates` or a linked `objects`
folder can send the reads into another workspace's mirror. Checking those places was chosen over reading local
repositories only through a fetch into the source's own mirror, because dulwich fetches from a local path by
opening it with the same `Repo()`, which follows the same pointers: the mirror would copy the other workspace's
objects. The check runs on every sync, since anyone who can write into the repository can add a pointer later.
"""

from __future__ import annotations

from pathlib import Path
from urllib.parse import unquote, urlsplit

from django.conf import settings

from rag.models import Source
from rag.sources.git import GitSourceError, is_remote, local_repository, repository_places


class LocationRefused(Exception):
    """A place no source may read; the message says why (and names the place: for staff)."""


def local_folder(*, kind: str, location: str) -> Path | None:
    """The folder on this machine a source reads (a folder, a local repository, a file:// URL), resolved; None for
    a remote reached over the network."""
    if kind == Source.Kind.GIT and location.startswith("file://"):
        location = unquote(urlsplit(location).path)
    elif kind == Source.Kind.GIT and is_remote(location):
        return None
    return Path(location).expanduser().resolve()


def place_check(*, kind: str, location: str) -> None:
    """LocationRefused for a place under DATA_DIR or holding it, or outside every SOURCE_FOLDER_ROOTS folder; for a
    local repository, for any place its reads would reach."""
    folder = local_folder(kind=kind, location=location)
    if folder is None:
        return
    _place_allowed(folder)
    repo = local_repository(folder) if kind == Source.Kind.GIT else None
    if repo is not None:
        with repo:
            try:
                places = repository_places(repo)
            except GitSourceError as exc:
                raise LocationRefused(str(exc)) from None
            for place in places:
                _place_allowed(place, reader=f"the repository at {folder} reads elsewhere: ")


def _place_allowed(place: Path, *, reader: str = "") -> None:
    """LocationRefused for a resolved place under DATA_DIR or holding it, or outside every SOURCE_FOLDER_ROOTS
    folder (all places when it names none)."""
    data_dir = Path(settings.DATA_DIR).resolve()
    if place.is_relative_to(data_dir) or data_dir.is_relative_to(place):
        raise LocationRefused(f"{reader}{place} lies in Docent's own data folder ({data_dir}) or holds it: its "
                              "secret key, uploads and every workspace's mirrors are no source's to read")
    roots = [Path(root).expanduser().resolve() for root in settings.SOURCE_FOLDER_ROOTS]
    if not roots:
        raise LocationRefused(f"{reader}{place} is on this machine, and SOURCE_FOLDER_ROOTS names no folder sources "
                              "may read: only remote Git repositories may be added")
    if not any(place.is_relative_to(root) for root in roots):
        raise LocationRefused(f"{reader}{place} is outside the folders sources may read "
                              f"(SOURCE_FOLDER_ROOTS: {', '.join(map(str, roots))})")
