"""What a hostile or broken source does to a sync, at any size: a Git bomb, a huge blob, a remote that never
answers, a flood of "Sync now" presses while pages must keep answering (issue 37, "Measure").

tests/rag/test_sources_faults.py runs them small; benchmarks/fault_sources.py at the issue's sizes.
"""

from __future__ import annotations

import os
import socket
import subprocess
import threading
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from unittest import mock

from django.core.cache import cache
from django.db import connection
from django.test import Client

from rag.models import IndexingJobItem
from rag.sources import SourceError, source_sync
from rag.sources.selectors import sync_queued_key

_GIT_ENV = {"GIT_AUTHOR_NAME": "Docs", "GIT_AUTHOR_EMAIL": "docs@example.com", "GIT_COMMITTER_NAME": "Docs",
            "GIT_COMMITTER_EMAIL": "docs@example.com", "GIT_AUTHOR_DATE": "1704110400 +0000",
            "GIT_COMMITTER_DATE": "1704110400 +0000", "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1"}


def _git(repo: Path, *args: str, data: bytes | None = None) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, input=data,
                          env={**os.environ, **_GIT_ENV}).stdout.decode().strip()


def _tagged_commit(repo: Path, tree: str) -> None:
    commit = _git(repo, "commit-tree", tree, "-m", "docs")
    _git(repo, "update-ref", "refs/heads/main", commit)
    _git(repo, "tag", "v1.0", commit)


def git_bomb(path: Path, *, width: int = 16, depth: int = 4) -> int:
    """A repository whose tagged commit holds width**depth files made of depth + 2 objects: one blob, one tree
    per level naming the level below `width` times, one commit. Returns the number of files."""
    path.mkdir(parents=True, exist_ok=True)
    _git(path, "init", "-q", "-b", "main")
    sha = _git(path, "hash-object", "-w", "--stdin", data=b"# Bomb\n\nOne page, many paths.\n")
    mode, kind, suffix = "100644", "blob", ".md"
    for _ in range(depth):
        listing = "".join(f"{mode} {kind} {sha}\tp{index:02x}{suffix}\n" for index in range(width))
        sha = _git(path, "mktree", data=listing.encode())
        mode, kind, suffix = "040000", "tree", ""
    _tagged_commit(path, sha)
    return width**depth


def big_blob_repo(path: Path, *, size: int) -> None:
    """A repository whose tagged commit holds big.md, `size` zero bytes (cheap: a sparse file, compressed to
    almost nothing in the object database), beside one ordinary page."""
    path.mkdir(parents=True, exist_ok=True)
    _git(path, "init", "-q", "-b", "main")
    sparse = path.parent / f"{path.name}-big.md"
    with sparse.open("wb") as stream:
        stream.truncate(size)
    big = _git(path, "hash-object", "-w", str(sparse))
    sparse.unlink()
    small = _git(path, "hash-object", "-w", "--stdin", data=b"# Guide\n\nThe gateway listens on 8443.\n")
    listing = f"100644 blob {big}\tbig.md\n100644 blob {small}\tguide.md\n"
    _tagged_commit(path, _git(path, "mktree", data=listing.encode()))


@contextmanager
def stalled_remote() -> Iterator[str]:
    """A git:// URL on a loopback port that accepts every connection and never says a word."""
    listener = socket.create_server(("127.0.0.1", 0))
    held: list[socket.socket] = []

    def accept() -> None:
        while True:
            try:
                held.append(listener.accept()[0])
            except OSError:
                return  # closed

    threading.Thread(target=accept, daemon=True).start()
    try:
        yield f"git://127.0.0.1:{listener.getsockname()[1]}/docs.git"
    finally:
        listener.close()
        for connection_held in held:
            connection_held.close()


def sync_outcome(source_id: int) -> dict:
    """One sync as a worker runs it (items left queued): "failed" with the reason, or "job" with its items."""
    started = time.monotonic()
    try:
        job = source_sync(source_id=source_id, enqueue=False)
    except SourceError as exc:
        return {"outcome": "failed", "reason": str(exc), "seconds": time.monotonic() - started}
    items = Counter(IndexingJobItem.objects.filter(job=job).values_list("status", flat=True))
    return {"outcome": "job", "job_id": job.pk, "items": dict(items), "seconds": time.monotonic() - started,
            "errors": sorted(set(job.items.exclude(error="").values_list("error", flat=True)))[:3]}


def _percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(share * (len(ordered) - 1)))] if ordered else float("nan")


def first_sync_taken(source_id: int) -> None:
    """As a worker does when it starts the sync queued on adding a source (rag.sources.services.source_add): the
    queued mark gone, so the next "Sync now" queues one again."""
    cache.delete(sync_queued_key(source_id))


def _said(content: bytes) -> str:
    for words in (b"sync queued", b"already queued", b"still syncing"):
        if words in content:
            return words.decode()
    return "other"


def press_flood(*, source_id: int, members: list, presses: int, probe_user, probes: list[str],
                forward=None) -> dict:
    """`presses` "Sync now" presses shared among `members`, one thread each, all let go at once, while one more
    thread GETs `probes` in turn as `probe_user` until the presses end. The task sent is counted, and passed
    to `forward` (rag.jobs.task_send to send it for real; None to send nothing).

    Rows must be committed (threads read through their own connections).
    """
    sent: list[tuple] = []
    lock = threading.Lock()
    said: Counter = Counter()
    statuses: Counter = Counter()
    press_seconds: list[float] = []
    probe_seconds: dict[str, list[float]] = {path: [] for path in probes}
    probe_statuses: dict[str, Counter] = {path: Counter() for path in probes}
    start = threading.Barrier(len(members) + 1)
    done = threading.Event()

    def count_send(name: str, *ids) -> None:
        with lock:
            sent.append((name, *ids))
        if forward is not None:
            forward(name, *ids)

    def press(member, count: int) -> None:
        client = Client(HTTP_HOST="localhost", raise_request_exception=False)  # a 500 is counted, not raised
        client.force_login(member)
        start.wait()
        try:
            for _ in range(count):
                began = time.monotonic()
                response = client.post(f"/documents/sources/{source_id}/sync/", follow=True)
                with lock:
                    press_seconds.append(time.monotonic() - began)
                    statuses[response.status_code] += 1
                    said[_said(response.content)] += 1
        finally:
            connection.close()

    def probe() -> None:
        client = Client(HTTP_HOST="localhost", raise_request_exception=False)
        client.force_login(probe_user)
        start.wait()
        try:
            while not done.is_set() or not all(probe_seconds.values()):
                for path in probes:
                    began = time.monotonic()
                    response = client.get(path)
                    probe_seconds[path].append(time.monotonic() - began)
                    probe_statuses[path][response.status_code] += 1
        finally:
            connection.close()

    shares = [presses // len(members) + (index < presses % len(members)) for index in range(len(members))]
    threads = [threading.Thread(target=press, args=(member, share)) for member, share in zip(members, shares)]
    prober = threading.Thread(target=probe)
    began = time.monotonic()
    with mock.patch("rag.sources.services.task_send", count_send):
        for thread in [*threads, prober]:
            thread.start()
        for thread in threads:
            thread.join()
        done.set()
        prober.join()
    return {
        "presses": sum(statuses.values()), "seconds": time.monotonic() - began, "statuses": dict(statuses),
        "said": dict(said), "sent": len(sent), "press_p95": _percentile(press_seconds, 0.95),
        "probes": {path: {"count": len(seconds), "p95": _percentile(seconds, 0.95), "max": max(seconds, default=float("nan")),
                          "statuses": dict(probe_statuses[path])} for path, seconds in probe_seconds.items()},
    }
