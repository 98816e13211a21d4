"""Worker memory and start-up: the encoder loaded in the worker's parent before the pool forks, or in each process.

    python benchmarks/bench_worker_memory.py [--files 40]

For each way (WORKER_PRELOAD_ENCODER false, then true) one real `celery -A config worker
--concurrency 2` with all-MiniLM-L6-v2 (OMP_NUM_THREADS=1, as `make run` sets it on 2 cores):
seconds from start to both pool processes up, a small job indexed (both processes encode),
then Rss / Pss / Uss summed over the parent and its 2 pool processes (/proc/<pid>/smaps_rollup;
Pss shares each shared page among its users, so its sum is the real footprint), then one pool
process SIGKILLed and the seconds until the pool is back at full strength. Its own DATA_DIR
(var/bench/fault, BENCH_FAULT_DATA_DIR moves it). The machine may be shared: load is printed.
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import time
from pathlib import Path

from _setup import ROOT, SMOKE, django_setup, target

DATA_DIR = Path(os.environ.get("BENCH_FAULT_DATA_DIR", ROOT / "var" / "bench" / "fault")).resolve()
ENCODER = "hashing" if SMOKE else "minilm"  # the model's memory is what is measured; a smoke run only runs


def one_way(preload: bool, folder: Path, rng: random.Random) -> dict:
    from django.conf import settings

    from rag.models import EmbeddingCache, IndexingJob, Workspace
    from rag.uploads import indexing_job_create
    from devkit.faults import PoolWorker, wait_job

    worker = PoolWorker(database_url=settings.DATABASE_URL, redis_url=settings.REDIS_URL, data_dir=DATA_DIR,
                        encoder=ENCODER, extra_env={"WORKER_PRELOAD_ENCODER": str(preload).lower()})
    try:
        started = time.monotonic()
        worker.wait_full(timeout=300)
        start_seconds = time.monotonic() - started
        EmbeddingCache.objects.all().delete()
        Workspace.objects.filter(slug="bench-memory").delete()
        workspace = Workspace.objects.create(slug="bench-memory", name="bench-memory")
        job = indexing_job_create(workspace=workspace, paths=[folder], source=IndexingJob.Source.CLI)
        wait_job(job.pk, timeout=900)
        memory = worker.memory_mb()
        recovery = worker.kill_pool_process(rng)
        return {"start": start_seconds, "memory": memory, "recovery": recovery}
    finally:
        worker.stop()


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--files", type=int, default=4 if SMOKE else 40)
    args = parser.parse_args()
    django_setup(encoder=ENCODER, data_dir=DATA_DIR)
    from devkit.faults import write_corpus

    folder = write_corpus(DATA_DIR / "memory-corpus", files=args.files, seed=7)
    rng = random.Random(5)
    results = {}
    for preload in (False, True):
        load = os.getloadavg()[0]
        results[preload] = result = one_way(preload, folder, rng)
        memory = result["memory"]
        print(f"preload={str(preload).lower():5}  start to 2/2 processes {result['start']:5.1f}s  "
              f"after a {args.files}-file job: Rss {memory['rss']:6.0f} MB  Pss {memory['pss']:6.0f} MB  "
              f"Uss {memory['uss']:6.0f} MB  (parent + 2 pool processes)  "
              f"a killed pool process replaced in {result['recovery']:4.1f}s  (load {load:.1f})", flush=True)
    before, after = results[False]["memory"], results[True]["memory"]
    print(f"preload / per-process load: Pss {after['pss'] / before['pss']:.2f}x, Rss {after['rss'] / before['rss']:.2f}x, "
          f"replacement {results[True]['recovery'] / results[False]['recovery']:.2f}x the time")
    recovery = results[True]["recovery"]
    target("", "pool back to full strength within 30 s of a killed pool process (preloaded encoder)",
           f"{recovery:.1f}s", recovery <= 30)
    return 0


if __name__ == "__main__":
    sys.exit(main())
