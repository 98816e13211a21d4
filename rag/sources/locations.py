"""Where on this machine a source may read: never in DATA_DIR, and inside SOURCE_FOLDER_ROOTS when it is set.

DATA_DIR holds the secret key, every workspace's uploads and every Git source's mirror: a folder or a local
repository there (or one holding DATA_DIR) would hand them to whoever may add or edit a source. The check runs
when a source is added or edited (rag.sources.services.source_check) and again before each sync.
"""

from __future__ import annotations

from pathlib import Path
from urllib.parse import unquote, urlsplit

from django.conf import settings

from rag.models import Source
from rag.sources.git import is_remote


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
    """LocationRefused for a place under DATA_DIR or holding it, or outside every SOURCE_FOLDER_ROOTS folder."""
    folder = local_folder(kind=kind, location=location)
    if folder is None:
        return
    data_dir = Path(settings.DATA_DIR).resolve()
    if folder.is_relative_to(data_dir) or data_dir.is_relative_to(folder):
        raise LocationRefused(f"{folder} is Docent's own data folder ({data_dir}) or holds it: its secret key, "
                              "uploads and mirrors are no source's to read")
    roots = [Path(root).expanduser().resolve() for root in settings.SOURCE_FOLDER_ROOTS]
    if roots and not any(folder.is_relative_to(root) for root in roots):
        raise LocationRefused(f"{folder} is outside the folders sources may read (SOURCE_FOLDER_ROOTS: "
                              f"{', '.join(map(str, roots))})")
