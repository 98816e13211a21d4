"""Uploads meant to fill the disk, against the web server as `make run` runs it: each refused or bounded, with a reason.

    python benchmarks/bench_upload_abuse.py [--uploads 1000] [--zips 200]

gunicorn (2 processes x 4 threads) on loopback, no worker (items stay queued: what
staging stores is what is measured), the default limits (INGEST_MAX_FILE_BYTES 50 MB,
UPLOAD_MAX_BYTES 1 GB) and a workspace quota of 64 MB (WORKSPACE_STORAGE_QUOTA_BYTES,
set low so that the run writes little). Each part has its own user and workspace:

1. a 2 GB upload, streamed from memory as it is sent (no 2 GB file anywhere): when the
   server answers, and how much it wrote;
2. a 400 MB file, under the limit per upload but over the one per file;
3. 200 zips of zeros in one upload, each 1 MB unpacked from about 1 KB;
4. 1,000 uploads by one user, 100 KB each, four at a time.

Disk is sampled (uploads folder and the server's temporary folder) every 0.1 s. Its own
DATA_DIR (var/bench/abuse).
"""

from __future__ import annotations

import argparse
import io
import os
import re
import select
import shutil
import socket
import subprocess
import sys
import threading
import time
import uuid
import zipfile
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from _setup import ROOT, SMOKE, django_setup, target
from bench_chat import PASSWORD, Client, _free_port, server_wait

DATA_DIR = Path(os.environ.get("BENCH_ABUSE_DATA_DIR", ROOT / "var" / "bench" / "abuse")).resolve()
QUOTA_BYTES = 64 * 1024 * 1024
_MB = 1024 * 1024


def _folder_bytes(folder: Path) -> int:
    total = 0
    for path in folder.rglob("*"):
        try:
            total += path.stat().st_size if path.is_file() else 0
        except OSError:
            pass  # deleted while we looked
    return total


class DiskWatch:
    """The most bytes the folders held at once while a part ran (sampled every 0.1 s)."""

    def __init__(self, *folders: Path) -> None:
        self.folders, self.peak, self._stop = folders, 0, threading.Event()
        self._thread = threading.Thread(target=self._run)

    def _run(self) -> None:
        while not self._stop.is_set():
            self.peak = max(self.peak, sum(_folder_bytes(folder) for folder in self.folders))
            self._stop.wait(0.1)

    def __enter__(self) -> DiskWatch:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()


def _multipart(files: list[tuple[str, bytes]], token: str, boundary: str) -> bytes:
    parts = [f'--{boundary}\r\nContent-Disposition: form-data; name="csrfmiddlewaretoken"\r\n\r\n{token}\r\n'.encode()]
    for name, data in files:
        parts.append(f'--{boundary}\r\nContent-Disposition: form-data; name="files"; filename="{name}"\r\n'
                     f"Content-Type: application/octet-stream\r\n\r\n".encode() + data + b"\r\n")
    parts.append(f"--{boundary}--\r\n".encode())
    return b"".join(parts)


def _reason(html: str) -> str:
    found = re.search(r'<div class="error" role="alert">([^<]*)</div>', html)
    return found.group(1).strip() if found else ""


def _streamed_upload(client: Client, port: int, name: str, size: int) -> tuple[str, int, float, str]:
    """POST one file of `size` zero bytes, generated while sending; stop sending once the server answers.

    Returns (status line, bytes sent, seconds, the reason the page gives).
    """
    boundary = uuid.uuid4().hex
    token = client.csrf()
    head = (f'--{boundary}\r\nContent-Disposition: form-data; name="csrfmiddlewaretoken"\r\n\r\n{token}\r\n'
            f'--{boundary}\r\nContent-Disposition: form-data; name="files"; filename="{name}"\r\n'
            "Content-Type: text/plain\r\n\r\n").encode()
    tail = f"\r\n--{boundary}--\r\n".encode()
    cookies = "; ".join(f"{cookie.name}={cookie.value}" for cookie in client.jar)
    request = (f"POST /documents/upload/ HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nCookie: {cookies}\r\n"
               f"Referer: http://127.0.0.1:{port}/documents/upload/\r\n"
               f"Content-Type: multipart/form-data; boundary={boundary}\r\n"
               f"Content-Length: {len(head) + size + len(tail)}\r\nConnection: close\r\n\r\n").encode()
    chunk = bytes(_MB)
    started, sent = time.monotonic(), 0
    with socket.create_connection(("127.0.0.1", port), timeout=300) as sock:
        sock.sendall(request + head)
        try:
            while sent < size:
                if select.select([sock], [], [], 0)[0]:
                    break  # the server has answered: a client that sees a refusal stops sending
                piece = chunk[:min(_MB, size - sent)]
                sock.sendall(piece)
                sent += len(piece)
            else:
                sock.sendall(tail)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the server closed the connection: it will read no more
        answer = b""
        try:
            while len(answer) < 200_000:
                piece = sock.recv(65536)
                if not piece:
                    break
                answer += piece
        except (ConnectionResetError, TimeoutError):
            pass
    seconds = time.monotonic() - started
    text = answer.decode("utf-8", "replace")
    return text.split("\r\n", 1)[0], sent, seconds, _reason(text)


def _post_files(client: Client, files: list[tuple[str, bytes]]) -> int:
    """POST files as the upload form does; the status (302 to the job's page when taken)."""
    import urllib.error
    import urllib.request

    boundary = uuid.uuid4().hex
    request = urllib.request.Request(
        client.base + "/documents/upload/", data=_multipart(files, client.csrf(), boundary),
        headers={"Content-Type": f"multipart/form-data; boundary={boundary}", "Referer": client.base + "/"},
    )
    try:
        with client.opener.open(request, timeout=300) as response:
            response.read()
            return response.status
    except urllib.error.HTTPError as error:
        return error.code


def _zeros_zip(number: int) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as bundle:
        bundle.writestr(f"zeros-{number}.txt", f"{number}\n" + "0" * _MB)  # each its own bytes: no duplicates
    return buffer.getvalue()


def _items_by_reason(workspace_slug: str) -> Counter:
    from rag.models import IndexingJobItem

    reasons: Counter = Counter()
    for status, error in IndexingJobItem.objects.filter(job__workspace__slug=workspace_slug).values_list(
            "status", "error"):
        reasons[(status, re.sub(r"[\d.]+ (KB|MB|GB)", "N \\1", error.split(":")[0] if "quota" not in error
                                else error.split("(")[0]))] += 1
    return reasons


def _setup_users(parts: list[str]) -> None:
    from django.contrib.auth import get_user_model

    from rag.models import IndexingJob, Workspace

    for part in parts:
        user, made = get_user_model().objects.get_or_create(username=f"abuse-{part}")
        if made:
            user.set_password(PASSWORD)
            user.save()
        workspace, _ = Workspace.objects.get_or_create(slug=f"abuse-{part}", defaults={"name": f"abuse {part}"})
        workspace.members.add(user)
        IndexingJob.objects.filter(workspace=workspace).delete()  # a rerun starts with an empty workspace


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--uploads", type=int, default=8 if SMOKE else 1000)
    parser.add_argument("--zips", type=int, default=5 if SMOKE else 200)
    args = parser.parse_args()
    django_setup(encoder="hashing", data_dir=DATA_DIR)
    from django.conf import settings
    from django.core.management import call_command

    from config.launcher import web_command

    uploads, temporary = Path(settings.MEDIA_ROOT) / "uploads", DATA_DIR / "tmp"
    shutil.rmtree(uploads, ignore_errors=True)
    shutil.rmtree(temporary, ignore_errors=True)
    temporary.mkdir(parents=True)
    parts = ["stream", "file", "zips", "many"]
    _setup_users(parts)
    call_command("collectstatic", interactive=False, verbosity=0)
    logs = DATA_DIR / "logs"
    logs.mkdir(exist_ok=True)
    port = _free_port()
    env = {**os.environ, "DATABASE_URL": settings.DATABASE_URL, "REDIS_URL": settings.REDIS_URL, "TMPDIR": str(temporary),
           "EMBEDDING_ENCODER": "hashing", "LOG_LEVEL": "ERROR", "WORKSPACE_STORAGE_QUOTA_BYTES": str(QUOTA_BYTES)}
    web = subprocess.Popen(web_command("127.0.0.1", str(port), logs), cwd=ROOT, env=env)
    base = f"http://127.0.0.1:{port}"
    clients = {}
    try:
        server_wait(base)
        for part in parts:
            clients[part] = Client(base)
            clients[part].login(f"abuse-{part}")
            clients[part].get("/documents/upload/")
        print(f"limits: {settings.INGEST_MAX_FILE_BYTES / _MB:.0f} MB a file, {settings.UPLOAD_MAX_BYTES / _MB:.0f} MB "
              f"an upload, workspace quota {QUOTA_BYTES / _MB:.0f} MB (set for this run)")

        with DiskWatch(uploads, temporary) as disk:
            status, sent, seconds, reason = _streamed_upload(clients["stream"], port, "huge.txt", 2048 * _MB)
        print(f"1. 2 GB upload: '{status}' after {sent / _MB:.0f} MB sent, {seconds:.2f}s; "
              f"disk peak {disk.peak / _MB:.1f} MB; reason: {reason}")
        target("", "a 2 GB upload is refused before it is all sent, with a reason, writing <= the upload limit",
               f"'{status}' after {sent / _MB:.0f} MB, disk peak {disk.peak / _MB:.1f} MB; reason: {reason or 'none'}",
               sent < 2048 * _MB and bool(reason) and disk.peak <= settings.UPLOAD_MAX_BYTES)

        with DiskWatch(uploads, temporary) as disk:
            status, sent, seconds, reason = _streamed_upload(clients["file"], port, "big.txt", 400 * _MB)
        print(f"2. 400 MB file: '{status}' after {sent / _MB:.0f} MB sent, {seconds:.1f}s; "
              f"disk peak {disk.peak / _MB:.1f} MB; items {dict(_items_by_reason('abuse-file'))}")
        target("", "a 400 MB file writes <= the per-file limit", f"disk peak {disk.peak / _MB:.1f} MB",
               disk.peak <= settings.INGEST_MAX_FILE_BYTES)

        zips = [(f"zeros-{number}.zip", _zeros_zip(number)) for number in range(args.zips)]
        with DiskWatch(uploads, temporary) as disk:
            started = time.monotonic()
            status = _post_files(clients["zips"], zips)
            seconds = time.monotonic() - started
        print(f"3. {args.zips} zips of zeros ({sum(len(data) for _, data in zips) / 1024:.0f} KB sent, "
              f"{args.zips} MB unpacked): HTTP {status} in {seconds:.1f}s; disk peak {disk.peak / _MB:.1f} MB, "
              f"stored {_folder_bytes(uploads) / _MB:.1f} MB")
        for (state, why), count in sorted(_items_by_reason("abuse-zips").items()):
            print(f"     {count:4d} {state}{': ' + why if why else ''}")
        target("", f"{args.zips} zips of zeros store <= the workspace quota",
               f"stored {_folder_bytes(uploads) / _MB:.1f} MB, disk peak {disk.peak / _MB:.1f} MB",
               _folder_bytes(uploads) <= QUOTA_BYTES)

        shutil.rmtree(uploads, ignore_errors=True)
        statuses: Counter = Counter()

        def one_upload(number: int) -> None:
            statuses[_post_files(clients["many"], [(f"note-{number}.txt", os.urandom(50 * 1024).hex().encode())])] += 1

        with DiskWatch(uploads, temporary) as disk:
            started = time.monotonic()
            with ThreadPoolExecutor(4) as pool:
                list(pool.map(one_upload, range(args.uploads)))
            seconds = time.monotonic() - started
        print(f"4. {args.uploads} uploads of 100 KB by one user: {dict(statuses)} in {seconds:.1f}s; "
              f"disk peak {disk.peak / _MB:.1f} MB, stored {_folder_bytes(uploads) / _MB:.1f} MB")
        for (state, why), count in sorted(_items_by_reason("abuse-many").items()):
            print(f"     {count:4d} {state}{': ' + why if why else ''}")
        target("", f"{args.uploads} uploads of 100 KB by one user store <= the workspace quota",
               f"stored {_folder_bytes(uploads) / _MB:.1f} MB; {dict(statuses)}", _folder_bytes(uploads) <= QUOTA_BYTES)
    finally:
        web.terminate()
        web.wait(timeout=30)
    return 0


if __name__ == "__main__":
    sys.exit(main())
