"""Faults during an ingest: pool processes killed, Redis restarted, PostgreSQL restarted. Nothing lost or doubled.

    python benchmarks/fault_ingest.py [--files 500] [--encoder hashing|minilm] [--only kill,redis,postgres]

One real `celery -A config worker --concurrency 2` on this benchmark's own DATA_DIR
(var/bench/fault; BENCH_FAULT_DATA_DIR moves it) with its embedded PostgreSQL and Redis,
and --files generated guides (devkit/ingest_corpus.py, ~9 chunks each). First a run
without faults, then one run per fault, each into a fresh workspace with an empty
embedding cache, each compared with the first (devkit/faults.py: documents, chunks per
document, canonical records and item states identical, every file indexed exactly once,
the broker idle at the end: no task left in limbo):

- kill: SIGKILL one pool process 3 times at random moments of the run; seconds until
  the pool is back at full strength each time (target <= 30 s);
- redis: the embedded Redis shut down and started again (it keeps no data: every queued
  message is lost, and the reaper, run by a `celery beat` every 5 s here, sends them again);
- postgres: the embedded PostgreSQL restarted (`pg_ctl restart -m fast`: sessions cut).

Faults fall between 10% and 80% of the run without faults. The default tiny encoder
keeps the runs short; `--encoder minilm` makes each document take longer (more kills
land inside a task). Lost runs (items whose process died under them) are printed.
A run that does not finish within --timeout is reported as MISSED with its item states.
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import time
from collections import Counter
from pathlib import Path

from _setup import ROOT, SMOKE, django_setup, target

DATA_DIR = Path(os.environ.get("BENCH_FAULT_DATA_DIR", ROOT / "var" / "bench" / "fault")).resolve()
REAPER_SECONDS = 5


def start_run(slug: str, folder: Path):
    from rag.models import EmbeddingCache, IndexingJob, Workspace
    from rag.uploads import indexing_job_create

    EmbeddingCache.objects.all().delete()
    Workspace.objects.filter(slug=slug).delete()
    workspace = Workspace.objects.create(slug=slug, name=slug)
    return workspace, indexing_job_create(workspace=workspace, paths=[folder], source=IndexingJob.Source.CLI)


def finish_run(label: str, workspace, job, started: float, timeout: float, on_tick=None) -> dict | None:
    from django.db.models import Sum

    from rag.models import IndexingJobItem
    from devkit.faults import snapshot, wait_job

    try:
        wait_job(job.pk, timeout=timeout, on_tick=on_tick)
    except TimeoutError:
        states = Counter(IndexingJobItem.objects.filter(job=job).values_list("status", flat=True))
        print(f"{label}: not final after {timeout:.0f}s: items {dict(states)}", flush=True)
        return None
    seconds = time.monotonic() - started
    result = snapshot(workspace.pk, job.pk)
    result["seconds"] = seconds
    result["lost_runs"] = IndexingJobItem.objects.filter(job=job).aggregate(n=Sum("lost_runs"))["n"] or 0
    return result


def fault_at(moments: list[float], fault) -> callable:
    """on_tick: run `fault` once at each of the moments (seconds into the run)."""
    pending = sorted(moments)

    def tick(elapsed: float) -> None:
        while pending and elapsed >= pending[0]:
            pending.pop(0)
            fault()

    return tick


def restart_redis() -> float:
    from config.embedded import embedded_redis_start, stop_embedded

    started = time.monotonic()
    stop_embedded(DATA_DIR, database=False, redis_server=True)
    embedded_redis_start(DATA_DIR)
    return time.monotonic() - started


def restart_postgres() -> float:
    from django.db import connection

    from config.embedded import _pg_ctl

    started = time.monotonic()
    connection.close()
    pgdata = DATA_DIR / "pg"
    _pg_ctl(pgdata, ["-m", "fast", "-w", "-l", str(pgdata / "log"), "restart"])
    return time.monotonic() - started


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--files", type=int, default=12 if SMOKE else 500)
    parser.add_argument("--encoder", default="hashing")
    parser.add_argument("--only", default="kill" if SMOKE else "kill,redis,postgres")
    parser.add_argument("--timeout", type=float, default=1800)
    args = parser.parse_args()
    django_setup(encoder=args.encoder, data_dir=DATA_DIR)
    from django.conf import settings

    from devkit.faults import Beat, PoolWorker, compare, write_corpus

    folder = write_corpus(DATA_DIR / "corpus", files=args.files)
    # The reaper every 5 s instead of 60: a lost message comes back within seconds, not a minute.
    reaper_env = {"JOB_REAPER_INTERVAL_SECONDS": str(REAPER_SECONDS)}
    worker = PoolWorker(database_url=settings.DATABASE_URL, redis_url=settings.REDIS_URL, data_dir=DATA_DIR,
                        encoder=args.encoder, extra_env=reaper_env)
    beat = Beat(database_url=settings.DATABASE_URL, redis_url=settings.REDIS_URL, data_dir=DATA_DIR, extra_env=reaper_env)
    try:
        worker.wait_full(timeout=600)
        started = time.monotonic()
        workspace, job = start_run("fault-reference", folder)
        reference = finish_run("no faults", workspace, job, started, args.timeout)
        if reference is None:
            target("", "the run without faults finishes", f"not final after {args.timeout:.0f}s", False)
            return 1
        span = reference["seconds"]
        print(f"no faults: {args.files} files, {sum(reference['chunks'].values())} chunks, "
              f"{len(reference['records'])} canonical records, {dict(reference['items'])}, {span:.1f}s "
              f"(encoder {args.encoder}, 2 pool processes, load {os.getloadavg()[0]:.1f})", flush=True)
        rng = random.Random(int(os.environ.get("FAULT_SEED", "11")))
        for fault in args.only.split(","):
            recoveries: list[float] = []
            actions = {
                "kill": (3, lambda: recoveries.append(worker.kill_pool_process(rng))),
                "redis": (1, lambda: recoveries.append(restart_redis())),
                "postgres": (1, lambda: recoveries.append(restart_postgres())),
            }
            count, action = actions[fault]
            moments = [rng.uniform(0.1 * span, 0.8 * span) for _ in range(count)]
            started = time.monotonic()
            workspace, job = start_run(f"fault-{fault}", folder)
            result = finish_run(fault, workspace, job, started, args.timeout, on_tick=fault_at(moments, action))
            if result is None:
                target("", f"{fault}: the run finishes as the run without faults", f"not final after {args.timeout:.0f}s",
                       False)
                continue
            problems = compare(reference, result)
            label = {"kill": "pool back to full strength after", "redis": "Redis down and up in",
                     "postgres": "PostgreSQL restarted in"}[fault]
            print(f"{fault}: faults at {', '.join(f'{m:.1f}s' for m in sorted(moments))}; {label} "
                  f"{', '.join(f'{s:.2f}s' for s in recoveries)}; finished in {result['seconds']:.1f}s "
                  f"({result['seconds'] / span:.2f}x the run without faults); lost runs {result['lost_runs']}; "
                  f"items {dict(result['items'])}", flush=True)
            target("", f"{fault}: every file indexed once, no task in limbo, as the run without faults",
                   f"{len(recoveries)} of {count} faults made; " + ("identical" if not problems else "; ".join(problems)),
                   not problems and len(recoveries) == count)
            if fault == "kill":
                target("", "pool back to full strength within 30 s of each kill",
                       ", ".join(f"{seconds:.2f}s" for seconds in recoveries) or "no kill made",
                       bool(recoveries) and all(seconds <= 30 for seconds in recoveries))
    finally:
        worker.stop()
        beat.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
