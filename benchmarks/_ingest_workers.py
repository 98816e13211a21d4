"""bench_ingest.py's machinery: its own instance, the real Celery workers it starts (`celery -A
_ingest_workers worker` loads this module and times the encoder, indexing and merging inside them), the
jobs it queues to them, the tiny encoder and the step timer (bench_lineage.py times its steps with it)."""

from __future__ import annotations

import hashlib
import os
import signal
import subprocess
import sys
import time
import uuid
from collections import defaultdict
from pathlib import Path

from _setup import ROOT, SMOKE

ENCODER = "hashing" if SMOKE else "minilm"  # the workers' and the bare run's: the model, but in a smoke run

# Its own instance, so that emptying tables and queues touches nobody else's figures.
DATA_DIR = Path(os.environ.get("BENCH_INGEST_DATA_DIR", ROOT / "var" / "bench" / "ingest")).resolve()
CORPUS = DATA_DIR / "corpus"
EDITED_SHARE = 0.3
QUEUES = "default,ingest,merge"  # what config.launcher starts
WORKER_FLAG = "BENCH_INGEST_WORKER"
WORKER_TIMES_KEY = "bench-ingest:worker-seconds"
_started = time.monotonic()


def log(message: str) -> None:
    print(f"[{time.monotonic() - _started:6.0f}s load {os.getloadavg()[0]:.1f}] {message}", flush=True)


def _redis():
    import redis
    from django.conf import settings

    return redis.Redis.from_url(settings.REDIS_URL.replace("redis+socket://", "unix://"))


# --- inside the worker processes ----------------------------------------------------------------------------


def instrument_worker(**_signal) -> None:
    """Pool process start: add up the time spent encoding, indexing and merging in Redis for the parent.

    Wrappers only, around the functions the tasks call; the pipeline itself is untouched.
    """
    from rag import embeddings
    from rag.dedup import merge as dedup
    from rag.jobs import merging, tasks

    client = _redis()

    def timed(owner, attribute: str, label: str, counted: bool = False) -> None:
        original = getattr(owner, attribute)

        def wrapper(*args, **kwargs):
            started = time.perf_counter()
            try:
                return original(*args, **kwargs)
            finally:
                client.hincrbyfloat(WORKER_TIMES_KEY, label, time.perf_counter() - started)
                if counted:  # encode(self, texts)
                    client.hincrby(WORKER_TIMES_KEY, "texts", len(args[1]))

        setattr(owner, attribute, wrapper)

    from rag.encoders.onnx_runtime import OnnxEncoder

    timed(embeddings.SentenceTransformerEncoder, "encode", "encode", counted=True)
    timed(OnnxEncoder, "encode", "encode", counted=True)
    timed(tasks, "job_item_run", "index")  # the name the index task calls
    timed(merging, "documents_merge", "merge")  # the name the merge tasks' service calls
    timed(dedup, "documents_lineage_update", "lineage")  # inside the merge; merge.py calls it by this name


if os.environ.get(WORKER_FLAG) == "1":  # imported by `celery -A _ingest_workers worker`
    from celery.signals import worker_process_init
    from config.celery import app  # noqa: F401  (the app `celery -A` looks for: the real one)

    worker_process_init.connect(instrument_worker, weak=False)


# --- encoders and step timing -------------------------------------------------------------------------


class TinyEncoder:
    """Deterministic and nearly free: a vector from the text's SHAKE-256 digest."""

    def __init__(self, dim: int = 384) -> None:
        self.dim, self.name = dim, f"bench-shake-{dim}"
        self.calls = self.texts_encoded = 0
        self.seconds = 0.0

    def encode(self, texts):
        import numpy

        started = time.perf_counter()
        self.calls += 1
        self.texts_encoded += len(texts)
        raw = numpy.frombuffer(b"".join(hashlib.shake_256(t.encode()).digest(self.dim) for t in texts), numpy.uint8)
        vectors = raw.reshape(len(texts), self.dim).astype(numpy.float32) - 127.5
        vectors /= numpy.linalg.norm(vectors, axis=1, keepdims=True)
        self.seconds += time.perf_counter() - started
        return vectors.tolist()


class StepTimer:
    """Wraps functions to add up their wall time; the benchmark's own instrumentation."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = defaultdict(float)
        self._undo: list[tuple[object, str, object | None]] = []

    def wrap(self, owner, attribute: str, label: str) -> None:
        original = getattr(owner, attribute)
        owned = attribute in vars(owner)  # a manager's method lives on its class: undo by deleting ours

        def timed(*args, **kwargs):
            started = time.perf_counter()
            try:
                return original(*args, **kwargs)
            finally:
                self.seconds[label] += time.perf_counter() - started

        setattr(owner, attribute, timed)
        self._undo.append((owner, attribute, original if owned else None))

    def restore(self) -> None:
        for owner, attribute, original in reversed(self._undo):
            if original is None:
                delattr(owner, attribute)
            else:
                setattr(owner, attribute, original)
        self._undo.clear()


# --- workers --------------------------------------------------------------------------------------------


class Worker:
    """One real Celery worker process (prefork, concurrency 1) on this benchmark's DATA_DIR."""

    def __init__(self, *, threads: int) -> None:
        from django.conf import settings

        self.name = f"bench-ingest-{uuid.uuid4().hex[:6]}@localhost"
        env = {**os.environ, "DATA_DIR": str(DATA_DIR), "DATABASE_URL": settings.DATABASE_URL,
               "REDIS_URL": settings.REDIS_URL, "EMBEDDING_ENCODER": ENCODER, "LOG_LEVEL": "INFO",
               "OMP_NUM_THREADS": str(threads), "MKL_NUM_THREADS": str(threads), WORKER_FLAG: "1",
               "PYTHONPATH": os.pathsep.join([str(ROOT / "benchmarks"), str(ROOT)])}
        self.log_path = DATA_DIR / f"{self.name.split('@')[0]}.log"
        self._log = open(self.log_path, "w")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "celery", "-A", "_ingest_workers", "worker", "-n", self.name, "-Q", QUEUES,
             "--concurrency", "1", "--loglevel", "INFO", "--without-gossip", "--without-mingle"],
            cwd=ROOT, env=env, stdout=self._log, stderr=subprocess.STDOUT,
        )

    def wait_ready(self, timeout: float = 120) -> None:
        from rag.jobs.broker import live_workers

        deadline = time.monotonic() + timeout
        while self.name not in live_workers():
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"worker {self.name} did not start:\n{self.log_path.read_text()[-3000:]}")
            time.sleep(0.2)

    def processes(self):
        import psutil

        main = psutil.Process(self.proc.pid)
        return [main, *main.children(recursive=True)]

    def pool_rss_mb(self) -> float:
        pool = self.processes()[1:]
        return max(p.memory_info().rss for p in pool) / 2**20 if pool else 0.0

    def peak_rss_mb(self) -> dict[str, float]:
        """VmHWM (the kernel's peak resident set) of the worker's main process and of its pool process."""
        peaks = {}
        for role, process in zip(["main", "pool"], self.processes()):
            for line in Path(f"/proc/{process.pid}/status").read_text().splitlines():
                if line.startswith("VmHWM:"):
                    peaks[role] = int(line.split()[1]) / 1024
        return peaks

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self._log.close()


def queues_drained() -> bool:
    """No message waiting in a queue and none delivered but not yet acknowledged (acks_late)."""
    client = _redis()
    return all(client.llen(queue) == 0 for queue in QUEUES.split(",")) and client.hlen("unacked") == 0


def queues_purge() -> None:
    _redis().delete(*QUEUES.split(","), "unacked", "unacked_index")


def wait_drained(timeout: float = 1800) -> float:
    started = time.perf_counter()
    while not queues_drained():
        if time.perf_counter() - started > timeout:
            raise RuntimeError("the queues did not drain")
        time.sleep(0.1)
    return time.perf_counter()


def start_workers(count: int, threads: int) -> tuple[list[Worker], float]:
    """Workers that are ready and hold the model, and how long the first warm-up job took."""
    workers = [Worker(threads=threads) for _ in range(count)]
    try:
        for worker in workers:
            worker.wait_ready()
    except BaseException:
        stop_workers(workers)  # one that did start would otherwise serve the next run too
        raise
    # Pool processes load the model at start (worker_process_init) or, failing that, in their first
    # task: small jobs until every pool process holds it, so the timed runs measure steady state.
    first_job, warm = 0.0, {"files": 0}
    for attempt in range(6):
        # The hashing encoder (a smoke run) has no model to load: one job warms the pool.
        if attempt and (ENCODER == "hashing" or all(worker.pool_rss_mb() > 250 for worker in workers)):
            break
        warm = run_job(workspace_slug="bench-ingest-warm", folder=CORPUS / "warm", fresh=True)
        first_job = first_job or warm["seconds"]
        wait_drained()
    else:
        log("warning: a worker did not load the model during warm-up")
    log(f"{count} worker(s) ready; the first warm-up job ({warm['files']} small files) took {first_job:.1f}s")
    return workers, first_job


def stop_workers(workers: list[Worker]) -> None:
    for worker in workers:
        worker.stop()
    workers.clear()


# --- jobs --------------------------------------------------------------------------------------------------


def fresh_workspace(slug: str):
    from rag.models import Workspace

    Workspace.objects.filter(slug=slug).delete()
    return Workspace.objects.create(slug=slug, name=slug)


def job_totals(job) -> dict:
    from django.db.models import Max, Sum

    totals = job.items.aggregate(chunks=Sum("chunk_count"), encoded=Sum("encoded_count"), last=Max("finished_at"))
    statuses: dict[str, int] = defaultdict(int)
    for status in job.items.values_list("status", flat=True):
        statuses[status] += 1
    return {"job": job.pk, "files": job.items.count(), "chunks": totals["chunks"] or 0,
            "encoded": totals["encoded"] or 0, "statuses": dict(statuses),
            "seconds": (totals["last"] - job.created_at).total_seconds() if totals["last"] else 0.0}


def run_job(*, workspace_slug: str, folder: Path, fresh: bool) -> dict:
    """Queue the folder to the workers and wait until every item finished; timings from the rows."""
    from rag.models import IndexingJob, Workspace
    from rag.uploads import indexing_job_create

    workspace = fresh_workspace(workspace_slug) if fresh else Workspace.objects.get(slug=workspace_slug)
    client = _redis()
    client.delete(WORKER_TIMES_KEY)
    load = os.getloadavg()[0]
    started = time.perf_counter()
    job = indexing_job_create(workspace=workspace, paths=[folder], source=IndexingJob.Source.CLI)
    while not IndexingJob.objects.filter(pk=job.pk, finished_at__isnull=False).exists():
        time.sleep(0.05)
    wall = time.perf_counter() - started  # includes the job's creation: the unchanged files are hashed there
    result = job_totals(job)
    result["wall_seconds"] = wall
    result["drained_seconds"] = wait_drained() - started
    result["worker_seconds"] = {k.decode(): float(v) for k, v in client.hgetall(WORKER_TIMES_KEY).items()}
    result["load"] = (load, os.getloadavg()[0])
    return result

