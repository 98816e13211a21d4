"""Real worker processes and run snapshots, shared by the fault tests and benchmarks/fault_*.py.

Real processes only: `celery -A config worker` prefork workers (with beat inside, as `make run`), the embedded
PostgreSQL and Redis of the benchmark's own DATA_DIR. A run is compared with a run without
faults through `snapshot()`: documents, chunks per document, canonical records, job item states.
"""

from __future__ import annotations

import os
import random
import shutil
import signal
import subprocess
import sys
import time
import uuid
from collections import Counter
from datetime import timedelta
from pathlib import Path

from devkit.ingest_corpus import generate, write_folder

ROOT = Path(__file__).resolve().parent.parent
QUEUES = "default,ingest,merge"  # what config.launcher starts


def _redis():
    import redis
    from django.conf import settings

    return redis.Redis.from_url(settings.REDIS_URL.replace("redis+socket://", "unix://"))


def memory_kb(pid: int) -> dict[str, int]:
    """Rss, Pss and Uss (private pages) of one process, in kB, from /proc/<pid>/smaps_rollup."""
    fields = {}
    for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines()[1:]:
        name, _, rest = line.partition(":")
        fields[name] = int(rest.split()[0])
    return {"rss": fields["Rss"], "pss": fields["Pss"], "uss": fields["Private_Clean"] + fields["Private_Dirty"]}


def _children(pid: int) -> list[int]:
    try:
        return [int(child) for child in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except FileNotFoundError:
        return []


def _running(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0] != "Z"
    except FileNotFoundError:
        return False


class PoolWorker:
    """One `celery -A <app> worker` (prefork pool unless `pool` says otherwise) on the test or benchmark database."""

    def __init__(self, *, database_url: str, redis_url: str, data_dir: Path, encoder: str, concurrency: int = 2,
                 queues: str = QUEUES, app: str = "config", beat: bool = False, extra_env: dict | None = None,
                 pool: str = "prefork") -> None:
        self.name = f"worker-{uuid.uuid4().hex[:8]}@localhost"
        self.concurrency = concurrency
        env = {**os.environ, "DATABASE_URL": database_url, "REDIS_URL": redis_url, "DATA_DIR": str(data_dir),
               "EMBEDDING_ENCODER": encoder, "OMP_NUM_THREADS": "1", "WORKER_HEARTBEAT_SECONDS": "1",
               "PYTHONPATH": os.pathsep.join([str(ROOT), str(ROOT / "benchmarks")]), **(extra_env or {})}
        self.log_path = data_dir / f"{self.name.split('@')[0]}.log"
        self._log = open(self.log_path, "w")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "celery", "-A", app, "worker", "-n", self.name, "-Q", queues,
             "--pool", pool, "--concurrency", str(concurrency), "--loglevel", "INFO", "--without-gossip", "--without-mingle",
             *(["--beat"] if beat else [])],
            cwd=ROOT, env=env, stdout=self._log, stderr=subprocess.STDOUT,
        )

    def strength(self) -> tuple[int, int]:
        from rag.jobs.broker import worker_pools

        return worker_pools().get(self.name, (0, self.concurrency))

    def wait_full(self, timeout: float = 180, *, after: float = 0.0) -> float:
        """Seconds until the heartbeat (written after `after`, a time.time()) shows every pool process up."""
        started = time.monotonic()
        while True:
            fresh = (_redis().zscore("docent:workers", self.name) or 0) > after
            if fresh and self.strength() == (self.concurrency, self.concurrency):
                return time.monotonic() - started
            if self.proc.poll() is not None or time.monotonic() - started > timeout:
                raise RuntimeError(f"worker {self.name} not at full strength after {timeout:.0f}s "
                                   f"({self.strength()}):\n{self.log_path.read_text()[-3000:]}")
            time.sleep(0.1)

    def pool_pids(self) -> list[int]:
        """The parent's children: the pool processes (and the embedded beat, if started with beat=True)."""
        return [pid for pid in _children(self.proc.pid) if _running(pid)]

    def kill_pool_process(self, rng: random.Random) -> float:
        """SIGKILL one pool process; returns the seconds until the pool was back at full strength."""
        victim = rng.choice(self.pool_pids())
        killed_at, started = time.time(), time.monotonic()
        os.kill(victim, signal.SIGKILL)
        while _running(victim):
            time.sleep(0.01)
        self.wait_full(timeout=60, after=killed_at + 0.01)
        return time.monotonic() - started

    def memory_mb(self) -> dict[str, float]:
        """Sum of Rss, Pss and Uss over the worker's parent and its pool processes, in MB."""
        totals: Counter = Counter()
        for pid in [self.proc.pid, *self.pool_pids()]:
            totals.update(memory_kb(pid))
        return {name: value / 1024 for name, value in totals.items()}

    def stop(self, timeout: float = 60) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self._log.close()


class Beat:
    """`celery -A config beat` on its own, as a deployment runs it: the reaper on a schedule."""

    def __init__(self, *, database_url: str, redis_url: str, data_dir: Path, extra_env: dict | None = None) -> None:
        env = {**os.environ, "DATABASE_URL": database_url, "REDIS_URL": redis_url, "DATA_DIR": str(data_dir),
               "PYTHONPATH": str(ROOT), **(extra_env or {})}
        self.log_path = data_dir / "beat.log"
        self._log = open(self.log_path, "w")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "celery", "-A", "config", "beat", "--loglevel", "INFO",
             "--schedule", str(data_dir / "beat-schedule")],
            cwd=ROOT, env=env, stdout=self._log, stderr=subprocess.STDOUT,
        )

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self._log.close()


def write_corpus(root: Path, *, files: int, seed: int = 13) -> Path:
    """`files` guides under root: generated (devkit/ingest_corpus.py, ~9 one-chunk sections each),
    every fourth of them a copy of another with a line added, so that merging builds canonical records."""
    from django.conf import settings

    shutil.rmtree(root, ignore_errors=True)  # exactly these files, whatever an earlier run left
    copies = files // 4
    folder = generate(files - copies, seed=seed, root=root, max_words=settings.CHUNK_MAX_WORDS)
    written = write_folder(folder)
    dates = {root / generated.relative_path: generated.doc_date for generated in folder.files}
    for number, original in enumerate(sorted(written)[:copies]):
        copy = root / "copies" / f"{number:04d}-{original.name}"
        copy.parent.mkdir(parents=True, exist_ok=True)
        # A year newer: the copy is the canonical of its records whatever order the files are indexed in.
        newer = (dates[original] + timedelta(days=365)).isoformat()
        copy.write_text(original.read_text().replace(dates[original].isoformat(), newer) + "\nReviewed again for the copy.\n")
    return root


def broker_purge() -> None:
    """Nothing waiting, nothing unacknowledged: as a Redis restarted without its data."""
    _redis().delete(*QUEUES.split(","), "unacked", "unacked_index")


def broker_idle() -> bool:
    """No message waiting in a queue and none delivered but unacknowledged: nothing in limbo."""
    client = _redis()
    return all(client.llen(queue) == 0 for queue in QUEUES.split(",")) and client.hlen("unacked") == 0


def wait_job(job_id: int, *, timeout: float, on_tick=None) -> float:
    """Seconds until the job finished and the broker is idle (merges done); database blips are waited out."""
    from django.db import OperationalError, InterfaceError, close_old_connections, connection

    from rag.models import IndexingJob

    started = time.monotonic()
    while time.monotonic() - started < timeout:
        if on_tick:
            on_tick(time.monotonic() - started)
        try:
            if IndexingJob.objects.filter(pk=job_id, finished_at__isnull=False).exists() and broker_idle():
                return time.monotonic() - started
        except (OperationalError, InterfaceError):
            connection.close()
        except Exception as exc:  # Redis restarting
            if "redis" not in type(exc).__module__:
                raise
        close_old_connections()
        time.sleep(0.25)
    raise TimeoutError(f"job {job_id} not final after {timeout:.0f}s: {_stuck(job_id)}")


def _stuck(job_id: int) -> str:
    """What a job that did not end was waiting for: its items by state, what is unmerged, the broker's queues."""
    from rag.models import IndexingJob, IndexingJobItem

    try:
        job = IndexingJob.objects.get(pk=job_id)
        items = Counter(IndexingJobItem.objects.filter(job=job).values_list("status", flat=True))
        unmerged = IndexingJobItem.objects.filter(job=job, status="indexed", merged_at__isnull=True).count()
        client = _redis()
        queues = {queue: client.llen(queue) for queue in QUEUES.split(",")}
        return (f"finished_at {job.finished_at}, items {dict(items)}, unmerged {unmerged}, queues {queues}, "
                f"unacked {client.hlen('unacked')}")
    except Exception as exc:  # noqa: BLE001 - a diagnosis that fails must not hide the timeout
        return f"state unreadable ({type(exc).__name__}: {exc})"


def snapshot(workspace_id: int, job_id: int) -> dict:
    """What a run left behind, keyed by source path, comparable across workspaces."""
    from rag.models import CanonicalRecord, Chunk, ChunkVariant, Document, IndexingJobItem

    documents = Counter(Document.objects.filter(workspace_id=workspace_id).values_list("path", flat=True))
    chunks = Counter(Chunk.objects.filter(workspace_id=workspace_id).values_list("document__path", flat=True))
    where = dict(Chunk.objects.filter(workspace_id=workspace_id).values_list("pk", "document__path"))
    index = dict(Chunk.objects.filter(workspace_id=workspace_id).values_list("pk", "chunk_index"))
    members: dict[int, set] = {}
    for record_id, chunk_id in ChunkVariant.objects.filter(record__workspace_id=workspace_id).values_list("record_id", "chunk_id"):
        members.setdefault(record_id, set()).add((where[chunk_id], index[chunk_id]))
    records = set()
    for record_id, canonical_id in CanonicalRecord.objects.filter(workspace_id=workspace_id).values_list("pk", "canonical_chunk_id"):
        canonical = (where[canonical_id], index[canonical_id]) if canonical_id else None
        records.add((canonical, frozenset(members.get(record_id, set()) | {canonical})))
    items = Counter(IndexingJobItem.objects.filter(job_id=job_id).values_list("status", flat=True))
    return {"documents": documents, "chunks": chunks, "records": records, "items": items}


def compare(reference: dict, run: dict) -> list[str]:
    """What differs from the run without faults; empty when every file is indexed exactly once, as there."""
    problems = []
    duplicated = sorted(path for path, count in run["documents"].items() if count > 1)
    if duplicated:
        problems.append(f"{len(duplicated)} documents indexed twice, e.g. {duplicated[0]}")
    if set(run["documents"]) != set(reference["documents"]):
        problems.append(f"documents differ: {len(set(reference['documents']) - set(run['documents']))} missing, "
                        f"{len(set(run['documents']) - set(reference['documents']))} extra")
    if run["chunks"] != reference["chunks"]:
        problems.append(f"chunks per document differ for {sum(1 for p in reference['chunks'] if run['chunks'].get(p) != reference['chunks'][p])} documents")
    if run["records"] != reference["records"]:
        missing, different = reference["records"] - run["records"], run["records"] - reference["records"]
        def short(record) -> str:
            canonical, members = record
            name = lambda member: f"{Path(member[0]).name}#{member[1]}" if member else "none"  # noqa: E731
            return f"{name(canonical)} of {sorted(name(member) for member in members)}"

        example = (f"; e.g. {short(sorted(missing, key=str)[0])} became {short(sorted(different, key=str)[0])}"
                   if missing and different else "")
        problems.append(f"canonical records differ: {len(missing)} missing, {len(different)} different{example}")
    if set(run["items"]) - {"indexed", "unchanged", "skipped", "failed"}:
        problems.append(f"items not final: {dict(run['items'])}")
    if run["items"] != reference["items"]:
        problems.append(f"item states differ: {dict(run['items'])} vs {dict(reference['items'])}")
    return problems
