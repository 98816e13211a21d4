"""Tasks that give up: transient errors on every try, the soft and the hard time limit. Every item ends.

    python benchmarks/fault_limits.py [--good 100] [--each 5]

A real worker of 2 pool processes running `devkit.fault_app` (the real app and tasks;
files named transient*/slow*/stuck* fail on cue, limits cut to 2 s soft / 4 s hard and
2 retries so that the run takes a minute, not hours) indexes --good ordinary files with
--each files of every faulty kind mixed in. Printed: seconds until the job is final, the
item states, and the reasons the failed items carry. Its own DATA_DIR (var/bench/fault).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections import Counter
from pathlib import Path

from _setup import ROOT, SMOKE, django_setup, target

DATA_DIR = Path(os.environ.get("BENCH_FAULT_DATA_DIR", ROOT / "var" / "bench" / "fault")).resolve()
KINDS = ("transient", "slow", "stuck")


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--good", type=int, default=3 if SMOKE else 100)
    parser.add_argument("--each", type=int, default=1 if SMOKE else 5)
    args = parser.parse_args()
    django_setup(encoder="hashing", data_dir=DATA_DIR)
    from django.conf import settings

    from rag.jobs.tasks import index_document
    from rag.models import IndexingJob, IndexingJobItem, Workspace
    from rag.uploads import indexing_job_create
    from devkit.faults import PoolWorker, wait_job, write_corpus
    from devkit.fault_app import TIME_LIMITS

    index_document.soft_time_limit, index_document.time_limit = TIME_LIMITS  # they travel in the message
    index_document._exec_options = None  # Celery caches a task's send options at its first send
    folder = write_corpus(DATA_DIR / "limits-corpus", files=args.good, seed=3)
    for kind in KINDS:
        for number in range(args.each):
            (folder / f"{kind}-{number}.md").write_text(f"# {kind} {number}\n\nA file that fails on cue.\n")
    worker = PoolWorker(database_url=settings.DATABASE_URL, redis_url=settings.REDIS_URL, data_dir=DATA_DIR,
                        encoder="hashing", app="devkit.fault_app")
    try:
        worker.wait_full(timeout=300)
        Workspace.objects.filter(slug="fault-limits").delete()
        workspace = Workspace.objects.create(slug="fault-limits", name="fault-limits")
        started = time.monotonic()
        job = indexing_job_create(workspace=workspace, paths=[folder], source=IndexingJob.Source.CLI)
        try:
            seconds = wait_job(job.pk, timeout=900)
        except TimeoutError as exc:
            target("", "every item final with its reason (transient, slow, stuck files)", str(exc), False)
            return 0
        items = IndexingJobItem.objects.filter(job=job)
        states = Counter(items.values_list("status", flat=True))
        reasons = Counter((Path(path).name.split("-")[0], error.split(":")[0]) for path, error in
                          items.filter(status="failed").values_list("path", "error"))
        wanted = {kind: args.each for kind in KINDS}
        failed_right = {kind: sum(n for (k, _), n in reasons.items() if k == kind) for kind in KINDS}
        print(f"{args.good} good + {args.each} x {', '.join(KINDS)}: job final in {seconds:.1f}s "
              f"({time.monotonic() - started:.1f}s wall); items {dict(states)}", flush=True)
        for (kind, reason), count in sorted(reasons.items()):
            print(f"  {kind}: {count} x '{reason}'")
        ok = failed_right == wanted and states.get("indexed") == args.good
        target("", "every item final with its reason (transient, slow, stuck files)",
               f"items {dict(states)}; failed by kind {failed_right} of {wanted}", ok)
    finally:
        worker.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
