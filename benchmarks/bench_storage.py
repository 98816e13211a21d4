"""Files through S3-compatible storage vs the local DATA_DIR (issue 27), with web and workers as separate processes.

    python benchmarks/bench_storage.py [--files 1000] [--round-files 40] [--rounds 2] [--encoder hashing]

1. Upload-to-indexed time: a gunicorn web process and one worker (1 pool process); the web POSTs
   `--round-files` new files in uploads of 10 and the clock stops when the last job has finished. Local
   storage (web and worker share one DATA_DIR, as on one machine) and S3 (moto's server mode on loopback;
   web and worker in different DATA_DIRs, as on two machines) alternate, `--rounds` each, fresh processes
   every round; the median of each and their ratio (target <= 1.2x).
2. `--files` uploaded files through S3 with 2 workers in separate DATA_DIRs (and the web in a third): every
   file indexed once (items indexed, documents, "document indexed" lines in the workers' logs), none lost
   (one bucket object per file). `--files 0` skips it.

The hashing encoder by default: the storage path is under test, and the model's time would hide it (it only
adds the same seconds to both sides). Its own DATA_DIR (var/bench/storage): embedded PostgreSQL and Redis.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

from _setup import ROOT, SMOKE, django_setup, target

DATA_DIR = Path(os.environ.get("BENCH_STORAGE_DATA_DIR", ROOT / "var" / "bench" / "storage")).resolve()
PASSWORD = "bench-password-123"
UPLOAD_BATCH = 10


def _files(tag: str, count: int) -> list[tuple[str, bytes]]:
    """Small Markdown runbooks, each different (a repeat would be "unchanged", not indexed)."""
    return [(f"{tag}-{n}.md", (f"# Runbook {tag} {n}\n\n" + "".join(
        f"Step {step}: on host {tag}-{n} restart service {step * n} after its cache warms.\n" for step in range(30))
    ).encode()) for n in range(count)]


def _wait_jobs(job_ids: list[int], timeout: float = 1800) -> float:
    """Until every job has finished; returns when (time.monotonic())."""
    from rag.models import IndexingJob

    deadline = time.monotonic() + timeout
    while IndexingJob.objects.filter(pk__in=job_ids, finished_at__isnull=True).exists():
        if time.monotonic() > deadline:
            raise RuntimeError(f"jobs {job_ids} not finished after {timeout:.0f} s")
        time.sleep(0.1)
    return time.monotonic()


class Machines:
    """A web process and workers for one storage set-up; `shared` puts them all in one DATA_DIR."""

    def __init__(self, *, name: str, storage_env: dict[str, str], workers: int, shared: bool, encoder: str,
                 username: str, concurrency: int = 1, root: Path = DATA_DIR, upload_batch: int = UPLOAD_BATCH) -> None:
        from django.conf import settings

        from devkit.faults import PoolWorker
        from devkit.machines import WebProcess

        self.username, self.upload_batch = username, upload_batch
        base = root / "machines" / name
        dirs = [base] * (workers + 1) if shared else [base / "web", *(base / f"worker-{n}" for n in range(workers))]
        for data_dir in dirs:
            data_dir.mkdir(parents=True, exist_ok=True)
        env = {**storage_env, "LOG_LEVEL": "INFO", "DEBUG": "true", "EMBEDDING_ENCODER": encoder}
        self.web = WebProcess(database_url=settings.DATABASE_URL, redis_url=settings.REDIS_URL, data_dir=dirs[0],
                              extra_env=env)
        self.workers: list[PoolWorker] = []
        try:
            for data_dir in dirs[1:]:
                self.workers.append(PoolWorker(database_url=settings.DATABASE_URL, redis_url=settings.REDIS_URL,
                                               data_dir=data_dir, encoder=encoder, concurrency=concurrency,
                                               extra_env=env))
        except BaseException:
            self.__exit__()
            raise

    def __enter__(self) -> Machines:
        try:
            self.web.wait_ready()
            for worker in self.workers:
                worker.wait_full(timeout=300)
            self.web.login(self.username, PASSWORD)
        except BaseException:
            self.__exit__()  # started in __init__: stopped even when they never came up
            raise
        return self

    def __exit__(self, *exc) -> None:
        try:
            for worker in self.workers:
                worker.stop()
        finally:
            self.web.stop()

    def upload(self, files: list[tuple[str, bytes]]) -> list[int]:
        step = self.upload_batch
        return [self.web.upload(files[start:start + step]) for start in range(0, len(files), step)]


def _round(*, name: str, storage_env: dict[str, str], shared: bool, files: int, encoder: str, username: str) -> float:
    with Machines(name=name, storage_env=storage_env, workers=1, shared=shared, encoder=encoder,
                  username=username) as machines:
        started = time.monotonic()
        job_ids = machines.upload(_files(name, files))
        return _wait_jobs(job_ids) - started


def _many(*, s3, files: int, encoder: str, username: str) -> dict:
    from django.db.models import Count

    from rag.models import Document, IndexingJobItem

    with Machines(name="many", storage_env=s3.environ(), workers=2, shared=False, encoder=encoder,
                  username=username) as machines:
        started = time.monotonic()
        job_ids = machines.upload(_files("many", files))
        seconds = _wait_jobs(job_ids) - started
        logs = [worker.log_path.read_text() for worker in machines.workers]
    statuses = dict(IndexingJobItem.objects.filter(job_id__in=job_ids).values_list("status").annotate(n=Count("id")))
    paths = Document.objects.filter(workspace__members__username=username, path__startswith="uploads/many-",
                                    status=Document.Status.INDEXED)
    # Fresh workers: only this run's files. The log line is `time level logger message key=value`.
    indexed_lines = [log.count(" rag.ingest.pipeline document indexed ") for log in logs]
    return {"seconds": seconds, "statuses": statuses, "documents": paths.count(),
            "indexed_lines": indexed_lines, "objects": len([key for key in s3.keys() if "-many-" in key])}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--files", type=int, default=8 if SMOKE else 1000, help="files for the 2-worker run; 0 skips it")
    parser.add_argument("--round-files", type=int, default=4 if SMOKE else 40)
    parser.add_argument("--rounds", type=int, default=1 if SMOKE else 2, help="rounds of each storage; 0 skips the comparison")
    parser.add_argument("--encoder", default="hashing")
    options = parser.parse_args()
    os.environ["DATA_DIR"] = str(DATA_DIR)
    django_setup(encoder=options.encoder)
    from django.contrib.auth import get_user_model

    from rag.models import Workspace
    from devkit.machines import S3Server

    # A fresh user and workspace per run: earlier runs' documents would make this run's files "unchanged", and a
    # user of several workspaces would upload into the one the web picks for it.
    stamp = int(time.time())
    user = get_user_model().objects.create_user(username=f"bench-storage-{stamp}", password=PASSWORD)
    workspace = Workspace.objects.create(slug=f"storage-{stamp}", name="bench storage")
    workspace.members.add(user)
    s3 = S3Server(prefix=f"bench-{workspace.slug}")
    s3.start()
    try:
        times: dict[str, list[float]] = {"local": [], "s3": []}
        for number in range(options.rounds):
            for kind in ("local", "s3"):
                env = {"STORAGE_URL": ""} if kind == "local" else s3.environ()
                seconds = _round(name=f"{kind}{number}", storage_env=env, shared=kind == "local",
                                 files=options.round_files, encoder=options.encoder, username=user.username)
                times[kind].append(seconds)
                print(f"round {number + 1} {kind:5}: {options.round_files} files uploaded to indexed in {seconds:6.2f} s "
                      f"({seconds / options.round_files * 1000:.0f} ms/file)", flush=True)
        if options.rounds:
            local, remote = statistics.median(times["local"]), statistics.median(times["s3"])
            ratio = remote / local
            print(f"upload-to-indexed, median of {options.rounds}: local {local:.2f} s, S3 {remote:.2f} s", flush=True)
            target("27", "upload-to-indexed through S3 <= 1.2x local", f"{ratio:.2f}x ({remote:.2f} / {local:.2f} s, "
                   f"{options.round_files} files, median of {options.rounds})", ratio <= 1.2)
        if options.files:
            many = _many(s3=s3, files=options.files, encoder=options.encoder, username=user.username)
            once = (many["statuses"] == {"indexed": options.files} and many["documents"] == options.files
                    and sum(many["indexed_lines"]) == options.files and many["objects"] == options.files)
            print(f"{options.files} files through S3, 2 workers in separate DATA_DIRs: {many['seconds']:.1f} s "
                  f"({options.files / many['seconds']:.1f} files/s); items {many['statuses']}; documents "
                  f"{many['documents']}; indexed by worker {many['indexed_lines']}; bucket objects {many['objects']}: "
                  f"{'every file indexed once, none lost' if once else 'NOT every file indexed once'}", flush=True)
            target("27", f"{options.files} files through S3, 2 workers: every file indexed once, none lost",
                   f"{many['statuses']}, {many['documents']} documents, {many['objects']} bucket objects", once)
    finally:
        s3.stop()
    return 0  # it ran: a missed target is its MISSED TARGET line


if __name__ == "__main__":
    sys.exit(main())
