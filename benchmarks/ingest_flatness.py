"""Does indexing slow down as the workspace grows? Time per file per fifth of an indexing job (issue 21).

    python benchmarks/ingest_flatness.py --workspace SLUG [--job ID] [--json]

Reads a job that already ran (`manage.py ingest ... --sync` or with workers; the newest job of the
workspace by default) from the instance DATA_DIR selects, so the ingest is timed exactly as a user runs
it and nothing is wrapped. A file is done when it is indexed and, if indexed, merged (the later of
`finished_at` and `merged_at`). Files are taken in the order they were done; the first is dropped, since
its time holds the model's load. The rest are cut into fifths; a fifth's time per file is the wall time
from the end of the fifth before it to its own end, divided by its files, so with two workers it is the
throughput, not one file's latency. Flatness: last fifth / first fifth (target <= 1.3). A job still running
is measured over the files done so far.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from datetime import datetime

from _setup import django_setup

FIFTHS = 5


def fifths(ends: list[datetime], chunks: list[int]) -> list[dict]:
    """Per fifth of the files after the first: files, seconds per file, chunks per second (ends in done order)."""
    rest = list(range(1, len(ends)))
    if len(rest) < FIFTHS:
        return []
    bounds = [round(len(rest) * part / FIFTHS) for part in range(FIFTHS + 1)]
    rows = []
    for part in range(FIFTHS):
        picked = rest[bounds[part]:bounds[part + 1]]
        started = ends[picked[0] - 1]
        seconds = (ends[picked[-1]] - started).total_seconds()
        rows.append({"files": len(picked), "from_file": picked[0] + 1, "to_file": picked[-1] + 1,
                     "seconds_per_file": seconds / len(picked),
                     "chunks_per_second": sum(chunks[i] for i in picked) / seconds if seconds else None})
    return rows


def job_flatness(*, workspace: str, job_id: int | None) -> dict:
    from rag.models import IndexingJob, IndexingJobItem  # Django is set up in main(), as every benchmark does

    jobs = IndexingJob.objects.filter(workspace__slug=workspace)
    job = jobs.get(pk=job_id) if job_id else jobs.order_by("-pk").first()
    if job is None:
        sys.exit(f"error: workspace {workspace!r} has no indexing job")
    done = []
    for status, finished, merged, chunk_count in job.items.values_list(
            "status", "finished_at", "merged_at", "chunk_count"):
        if finished is None or (status == IndexingJobItem.Status.INDEXED and merged is None):
            continue
        done.append((max(finished, merged or finished), chunk_count or 0))
    done.sort()
    rows = fifths([end for end, _ in done], [count for _, count in done])
    return {
        "job": job.pk, "files": job.items.count(), "done": len(done),
        "fifths": rows,
        "flatness": rows[-1]["seconds_per_file"] / rows[0]["seconds_per_file"] if rows else None,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--workspace", required=True)
    parser.add_argument("--job", type=int, help="job id (default: the workspace's newest)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    if "DATA_DIR" not in os.environ:
        sys.exit("error: set DATA_DIR to the instance the job ran in")
    django_setup()
    figures = job_flatness(workspace=args.workspace, job_id=args.job)
    if args.json:
        print(json.dumps(figures, indent=2))
        return 0
    print(f"job {figures['job']}: {figures['done']} of {figures['files']} files done (the first, with the "
          f"model's load, left out)")
    for index, row in enumerate(figures["fifths"], start=1):
        rate = "-" if row["chunks_per_second"] is None else f"{row['chunks_per_second']:.1f}"
        print(f"  fifth {index}: files {row['from_file']}-{row['to_file']}: {row['seconds_per_file']:.2f} s/file, "
              f"{rate} chunks/s")
    if figures["flatness"] is not None:
        print(f"flatness (last fifth / first fifth): {figures['flatness']:.2f}  (target <= 1.3)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
