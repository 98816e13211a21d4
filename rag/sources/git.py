"""Reading a Git repository's refs, trees and blobs from its object database (dulwich), never a checkout.

A local repository is read where it is; a clone URL is fetched into a bare mirror under DATA_DIR, whose
branches and tags follow the remote's exactly (a force push moves them back, a deleted tag goes).
Credentials are bound to hosts (GIT_SOURCE_CREDENTIALS, or git's own `git credential fill`, asked per host;
ssh keys), go over HTTPS only, never come from the stored location, and never reach a log line.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import socket
import stat
import subprocess
import tempfile
import threading
import zlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

from django.conf import settings
from dulwich.client import FetchPackResult, GitClient, get_transport_and_path
from dulwich.errors import NotGitRepository
from dulwich.graph import can_fast_forward
from dulwich.object_store import DiskObjectStore
from dulwich.objects import Commit, Tag
from dulwich.refs import check_ref_format
from dulwich.repo import Repo

_SCP_LIKE = re.compile(r"^[\w.-]+@[\w.-]+:")  # git@host:owner/repo.git
_HEADS, _TAGS = b"refs/heads/", b"refs/tags/"
_PACK_SPOOL_BYTES = 16 * 1024 * 1024  # an incoming pack is held in memory up to this size, then on disk


class GitSourceError(Exception):
    """A repository that cannot be read or reached; the message is safe to show and to log."""


@dataclass(frozen=True)
class Refs:
    default_branch: str  # what HEAD names; "" when it names nothing
    branches: dict[str, str]  # name -> commit sha
    tags: dict[str, str]  # name -> the commit it points to (annotated tags peeled)


def is_remote(location: str) -> bool:
    return "://" in location or bool(_SCP_LIKE.match(location))


def location_shown(location: str) -> str:
    """The location without any user or password it carries: what pages and logs may say."""
    if "://" not in location:
        return location
    parts = urlsplit(location)
    host = parts.hostname or ""
    netloc = host + (f":{parts.port}" if parts.port else "")
    return urlunsplit((parts.scheme, netloc, parts.path, "", ""))


def location_check(location: str) -> None:
    """Refuse a URL that carries a password: it would be stored in plain text."""
    if "://" in location and urlsplit(location).password:
        raise GitSourceError("the URL carries a password; give it through GIT_SOURCE_CREDENTIALS or git's "
                             "credential helper instead, never in the source's settings")


def repository_places(repo: Repo) -> list[Path]:
    """Every place, resolved, that reading `repo` may touch: its git directory (after a `.git` file or link), its
    common directory, their objects and every alternate object store (recursively), and the target of every link
    inside any of them (a linked `objects`, `refs/heads/main` or pack file).

    GitSourceError for a FIFO, device or socket inside: reading one would hang or read a device, never a file.
    """
    stores = [repo.controldir(), repo.commondir(), repo.object_store.path]
    places, walked = [], set()
    while stores:
        place = Path(os.path.realpath(stores.pop()))
        if place in walked:
            continue
        walked.add(place)
        places.append(place)
        for folder, folders, files in os.walk(place):  # links are listed, never entered
            for name in [*folders, *files]:
                mode = os.lstat(os.path.join(folder, name)).st_mode
                if stat.S_ISLNK(mode):
                    places.append(Path(os.path.realpath(os.path.join(folder, name))))
                elif not (stat.S_ISDIR(mode) or stat.S_ISREG(mode)):
                    raise GitSourceError(f"{os.path.join(folder, name)} is not a regular file: not read")
        alternates = place / "info" / "alternates"
        if alternates.is_file():  # walked above: a regular file, or a link to a place checked like any other
            for line in alternates.read_text(errors="replace").splitlines():
                if line.strip() and not line.startswith("#"):
                    stores.append(os.path.join(place, line.strip()))  # an absolute line stays as it is
    return places


def local_repository(path: Path) -> Repo | None:
    """The repository at a local path, or None when there is none (the sync says so)."""
    try:
        return Repo(str(path))
    except (NotGitRepository, FileNotFoundError, NotADirectoryError):
        return None


def repository_open(*, location: str, mirror: Path) -> Repo:
    """The repository to read: the local one itself, or the mirror of a remote, fetched now."""
    location_check(location)
    if not is_remote(location):
        try:
            return Repo(str(Path(location).expanduser()))
        except (NotGitRepository, FileNotFoundError, NotADirectoryError) as exc:
            raise GitSourceError(f"no Git repository at {location} ({type(exc).__name__})") from None
    if not (mirror / "objects").is_dir():
        mirror.mkdir(parents=True, exist_ok=True)
        Repo.init_bare(str(mirror))
    repo = Repo(str(mirror))
    _fetch(repo, location)
    return repo


class _PackTooLarge(Exception):
    def __str__(self) -> str:
        return (f"the remote sent more than GIT_SOURCE_MAX_FETCH_BYTES ({settings.GIT_SOURCE_MAX_FETCH_BYTES} bytes); "
                "nothing of it was kept")


class _FetchTimeout(Exception):
    def __str__(self) -> str:
        return f"no complete answer within GIT_SOURCE_FETCH_TIMEOUT_SECONDS ({settings.GIT_SOURCE_FETCH_TIMEOUT_SECONDS} s)"


@contextmanager
def _fetch_deadline(seconds: int) -> Iterator[None]:
    """A remote that stalls or trickles must not hold a worker: every socket read waits at most `seconds`, and in
    the main thread (a worker's task, a command) an alarm ends the whole fetch after `seconds`."""
    previous = socket.getdefaulttimeout()
    socket.setdefaulttimeout(seconds)
    alarmed = threading.current_thread() is threading.main_thread()
    if alarmed:
        def expire(signum, frame):
            raise _FetchTimeout
        handler = signal.signal(signal.SIGALRM, expire)
        signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        if alarmed:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, handler)
        socket.setdefaulttimeout(previous)


def _fetch(repo: Repo, location: str) -> None:
    shown = location_shown(location)
    try:
        username, password = credentials_for(location)
        client, remote_path = get_transport_and_path(location, username=username, password=password)
        with _fetch_deadline(settings.GIT_SOURCE_FETCH_TIMEOUT_SECONDS):
            result = _pack_fetch(client, remote_path, repo)
    except Exception as exc:  # network, protocol, authentication, time: the remote is unusable this time, nothing else
        reason = str(exc).replace(location, shown)[:300] or type(exc).__name__
        raise GitSourceError(f"cannot fetch {shown}: {reason}") from None
    # A name git itself would refuse ("a..b", "x.lock") is left out: a remote cannot break the mirror with one.
    remote = {name: sha for name, sha in result.refs.items()
              if name.startswith((_HEADS, _TAGS)) and not name.endswith(b"^{}") and sha is not None
              and check_ref_format(name)}
    for name in [n for n in repo.refs.allkeys() if n.startswith((_HEADS, _TAGS))]:
        if name not in remote:
            repo.refs.remove_if_equals(name, None)  # gone upstream: gone here
    for name, sha in remote.items():
        repo.refs[name] = sha  # a force push included
    head = (result.symrefs or {}).get(b"HEAD")
    if head:
        repo.refs.set_symbolic_ref(b"HEAD", head)


def _pack_fetch(client: GitClient, remote_path: str, repo: Repo) -> FetchPackResult:
    """What dulwich's `client.fetch` does, with the pack's bytes counted as they arrive: past
    GIT_SOURCE_MAX_FETCH_BYTES the fetch stops and the spooled pack is dropped, so a remote cannot fill DATA_DIR
    for the whole timeout on every sync. The pack is added as a thin one (its deltas may name objects the mirror
    already holds), which takes a whole pack as well."""
    limit, received = settings.GIT_SOURCE_MAX_FETCH_BYTES, 0
    with tempfile.SpooledTemporaryFile(max_size=_PACK_SPOOL_BYTES, prefix="incoming-",
                                       dir=repo.object_store.path) as spool:
        def receive(data: bytes) -> int:
            nonlocal received
            received += len(data)
            if received > limit:
                raise _PackTooLarge
            return spool.write(data)

        result = client.fetch_pack(remote_path, _wants(repo), repo.get_graph_walker(), receive)
        if spool.tell():
            spool.seek(0)
            repo.object_store.add_thin_pack(spool.read, None)
    return result


def credentials_for(location: str) -> tuple[str | None, str | None]:
    """HTTPS credentials for the URL's own host: GIT_SOURCE_CREDENTIALS' entry, else git's credential set-up.

    A credential goes only to the host it is bound to, and never over plain http:// (anyone on the path would
    read it). `git credential fill` runs without a terminal, so a missing credential is a clear failure of the
    fetch, never a prompt; ssh URLs use ssh's own keys and agent.
    """
    parts = urlsplit(location) if "://" in location else None
    if parts is None or parts.scheme != "https":
        return (parts.username if parts else None), None
    host = (parts.hostname or "").lower()
    bound = settings.GIT_SOURCE_CREDENTIALS
    entry = (parts.port and bound.get(f"{host}:{parts.port}")) or bound.get(host)
    if entry:
        return entry.get("username") or parts.username, entry.get("password")
    if shutil.which("git") is None:
        return parts.username, None
    asked = f"protocol=https\nhost={parts.netloc.rsplit('@', 1)[-1]}\n"
    asked += f"username={parts.username}\n" if parts.username else ""
    try:
        answer = subprocess.run(["git", "credential", "fill"], input=asked + "\n", capture_output=True, text=True,
                                timeout=30, env={**os.environ, "GIT_TERMINAL_PROMPT": "0", "GIT_ASKPASS": ""})
    except (OSError, subprocess.TimeoutExpired):
        return parts.username, None
    found = dict(line.split("=", 1) for line in answer.stdout.splitlines() if "=" in line)
    if answer.returncode != 0 or "password" not in found:
        return parts.username, None
    return found.get("username") or parts.username, found["password"]


def _wants(repo: Repo) -> Callable:
    def determine_wants(refs: dict, depth: int | None = None, **_ignored) -> list[bytes]:
        return [sha for name, sha in refs.items()
                if name.startswith((_HEADS, _TAGS)) and sha is not None and sha not in repo.object_store]
    return determine_wants


def refs_read(repo: Repo) -> Refs:
    branches, tags = {}, {}
    for name in repo.refs.allkeys():
        if name.startswith(_HEADS):
            branches[name[len(_HEADS):].decode("utf-8", "replace")] = repo.refs[name].decode()
        elif name.startswith(_TAGS):
            commit = _peeled_commit(repo, repo.refs[name])
            if commit is not None:
                tags[name[len(_TAGS):].decode("utf-8", "replace")] = commit
    default = ""
    target = repo.refs.read_ref(b"HEAD") or b""
    if target.startswith(b"ref: " + _HEADS):
        default = target[len(b"ref: ") + len(_HEADS):].decode("utf-8", "replace")
    return Refs(default_branch=default, branches=branches, tags=tags)


def _peeled_commit(repo: Repo, sha: bytes) -> str | None:
    """The commit a tag names (through annotated tags); None for a tag of a tree or blob."""
    obj = repo[sha]
    while isinstance(obj, Tag):
        obj = repo[obj.object[1]]
    return obj.id.decode() if isinstance(obj, Commit) else None


def commit_date(repo: Repo, commit: str) -> datetime:
    return datetime.fromtimestamp(repo[commit.encode()].commit_time, tz=UTC)


def tree_files(repo: Repo, commit: str, *, select: Callable[[str], bool]) -> dict[str, str]:
    """path -> blob sha of the regular files in the commit's tree that `select` takes (no symlinks, no submodules)."""
    tree = repo[commit.encode()].tree
    files = {}
    limit = settings.GIT_SOURCE_MAX_TREE_ENTRIES
    for number, entry in enumerate(repo.object_store.iter_tree_contents(tree), 1):
        if number > limit:  # counted as the walk goes: a few objects can make a tree of millions of paths
            raise GitSourceError(f"commit {commit[:10]} holds more than {limit} files (GIT_SOURCE_MAX_TREE_ENTRIES): "
                                 "not read")
        if entry.mode is None or not stat.S_ISREG(entry.mode):
            continue
        path = entry.path.decode("utf-8", "replace")
        if select(path):
            files[path] = entry.sha.decode()
    return files


def blob_read(repo: Repo, blob: str) -> bytes:
    return repo[blob.encode()].as_raw_string()


def blob_size(repo: Repo, blob: str) -> int:
    """A blob's size from its object header, nothing inflated past it: a blob over the file limit is refused
    before its bytes fill memory (a 200 MB blob took 400 MB to read whole). KeyError: no such object."""
    stores = [repo.object_store]
    while stores:
        store = stores.pop()
        loose = os.path.join(store.path, blob[:2], blob[2:])
        if os.path.isfile(loose):
            return _loose_size(loose)
        for pack in store.packs:
            if blob.encode() in pack:
                return _packed_size(pack.data.path, pack.index.object_offset(blob.encode()))
        stores.extend(alternate for alternate in store.alternates if isinstance(alternate, DiskObjectStore))
    raise KeyError(blob)


def _loose_size(path: str) -> int:
    """A loose object is `<type> <size>\\0<bytes>`, compressed: inflate only up to the NUL."""
    inflater, header = zlib.decompressobj(), b""
    with open(path, "rb") as stream:
        while b"\0" not in header and len(header) < 64 and (piece := stream.read(256)):
            header += inflater.decompress(piece, 64 - len(header))
    kind_and_size = header.split(b"\0", 1)[0].split(b" ")
    return int(kind_and_size[1])


_OFS_DELTA, _REF_DELTA = 6, 7


def _packed_size(path: str, offset: int) -> int:
    """A pack entry starts with its type and inflated size; a delta's size is its instructions', so the object's
    own size is read from the head of those instructions (the base's size, then the result's)."""
    with open(path, "rb") as stream:
        stream.seek(offset)
        head = stream.read(64)
        kind, size, at = (head[0] >> 4) & 7, head[0] & 15, 1
        shift = 4
        while head[at - 1] & 0x80:
            size |= (head[at] & 0x7F) << shift
            shift, at = shift + 7, at + 1
        if kind not in (_OFS_DELTA, _REF_DELTA):
            return size
        if kind == _REF_DELTA:
            at += 20  # the base's sha
        else:
            while head[at] & 0x80:  # the base's distance back
                at += 1
            at += 1
        stream.seek(offset + at)
        inflater, instructions = zlib.decompressobj(), b""
        while len(instructions) < 20 and (piece := stream.read(256)):
            instructions += inflater.decompress(piece, 20 - len(instructions))
    _, at = _varint(instructions, 0)  # the base's size
    return _varint(instructions, at)[0]


def _varint(data: bytes, at: int) -> tuple[int, int]:
    value, shift = 0, 0
    while True:
        byte = data[at]
        value |= (byte & 0x7F) << shift
        shift, at = shift + 7, at + 1
        if not byte & 0x80:
            return value, at


def fast_forward(repo: Repo, old: str, new: str) -> bool:
    """Whether `new` descends from `old` (a branch that moved on), or was rewritten (a force push)."""
    try:
        return can_fast_forward(repo, old.encode(), new.encode())
    except KeyError:  # the old commit is gone from the mirror: rewritten
        return False
