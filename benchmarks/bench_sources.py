"""Folder source re-syncs: what an unchanged, a touched and an edited 1,000-file folder cost.

    python benchmarks/bench_sources.py [--files 1000] [--encoder hashing|minilm]

Writes FILES Markdown pages (two sections each) under var/bench/sources/folder, adds
them as a folder source of a fresh workspace and syncs it the way `source sync --sync`
does (the job made by rag.sources, each queued file run here). Then, each a sync of
its own, timed from the start of the sync to its last file:

- nothing changed: target <= 5 s and no chunk encoded;
- the mtime of 10 files touched: target nothing queued, nothing encoded;
- the content of 10 other files edited: target exactly those 10 re-indexed;
- 10 more files renamed: target nothing encoded, the documents kept.

The encoder is the hashing one by default (what is measured is the sync, not the
model: an unchanged file never reaches an encoder); --encoder minilm uses the model.
Own DATA_DIR: var/bench/sources. A missed target is a MISSED TARGET line; the exit status says it ran.
"""

from __future__ import annotations

import argparse
import functools
import os
import random
import shutil
import sys
import time

from _setup import ROOT, SMOKE, django_setup, target

DATA_DIR = ROOT / "var" / "bench" / "sources"
SLUG = "bench-sources"
RESYNC_TARGET_SECONDS = 5.0


def _words(seed: int, count: int) -> str:
    """Pseudo-words drawn from a fixed vocabulary: pages about different things, as a real share holds
    (one template with other numbers would make a thousand versions of one page)."""
    return " ".join(random.Random(seed).choices(_vocabulary(), k=count))


@functools.cache
def _vocabulary() -> list[str]:
    syllables = ["ka", "lo", "mi", "nu", "pe", "ra", "si", "to", "ve", "zu", "an", "el", "or", "ub", "ix"]
    rng = random.Random(0)
    return ["".join(rng.choices(syllables, k=4)) for _ in range(3000)]


def page(number: int, revision: int = 0) -> str:
    return (f"# Service {number} handbook\n\n## Deploying service {number}\n\n{_words(number, 80)}.\n\n"
            f"## Limits of service {number}\n\n{_words(number * 7919 + revision, 80)}; revision {revision}.\n")


def timed_sync(source_id: int, *, merge_inline: bool = True) -> tuple[float, dict]:
    from rag.models import IndexingJobItem
    from rag.jobs.run import job_item_run
    from rag.sources.services import source_sync

    started = time.perf_counter()
    job = source_sync(source_id=source_id, enqueue=False)
    for item_id in job.items.filter(status=IndexingJobItem.Status.QUEUED).values_list("pk", flat=True):
        job_item_run(item_id=item_id, merge_inline=merge_inline)
    seconds = time.perf_counter() - started
    statuses = list(job.items.values_list("status", "encoded_count"))
    return seconds, {
        "files": len(statuses),
        "queued": sum(status != IndexingJobItem.Status.UNCHANGED for status, _ in statuses),
        "indexed": sum(status == IndexingJobItem.Status.INDEXED for status, _ in statuses),
        "encoded": sum(encoded for _, encoded in statuses),
        "files_encoded": sum(encoded > 0 for _, encoded in statuses),
    }


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--files", type=int, default=40 if SMOKE else 1000)
    parser.add_argument("--encoder", default="hashing", choices=["hashing", "minilm"])
    args = parser.parse_args()
    os.environ.setdefault("DATA_DIR", str(DATA_DIR))
    os.environ.setdefault("SOURCE_FOLDER_ROOTS", str(DATA_DIR.parent / "sources-folder"))  # the folder it syncs
    django_setup(encoder=args.encoder)
    from config.celery import app
    from rag.embeddings import get_encoder
    from rag.models import Document, EmbeddingCache, Workspace
    from rag.sources.services import source_add

    folder = DATA_DIR.parent / "sources-folder"  # beside DATA_DIR: a source may not read Docent's own data folder
    shutil.rmtree(folder, ignore_errors=True)
    for number in range(args.files):
        written = folder / f"team-{number % 20:02d}" / f"service-{number:04d}.md"
        written.parent.mkdir(parents=True, exist_ok=True)
        written.write_text(page(number))
    Workspace.objects.filter(slug=SLUG).delete()
    EmbeddingCache.objects.filter(model_name=get_encoder().name).delete()  # what is encoded is counted, not cached
    workspace = Workspace.objects.create(slug=SLUG, name="Sources benchmark")
    source = source_add(workspace=workspace, name="folder", kind="folder", location=str(folder), every_minutes=0)

    # The first sync's merges are not what is measured: they are queued, then dropped with the queues.
    seconds, first = timed_sync(source.pk, merge_inline=False)
    app.control.purge()
    print(f"first sync: {first['indexed']} files indexed, {first['encoded']} chunks encoded in {seconds:.1f} s "
          "(merges left out)", flush=True)

    seconds, unchanged = timed_sync(source.pk)
    ok = seconds <= RESYNC_TARGET_SECONDS and unchanged["encoded"] == 0 and unchanged["queued"] == 0
    target("", f"re-sync, nothing changed: <= {RESYNC_TARGET_SECONDS:.0f} s, nothing queued or encoded",
           f"{seconds:.2f} s, {unchanged['queued']} queued, {unchanged['encoded']} encoded", ok)

    files = sorted(folder.rglob("*.md"))
    for path in files[:10]:
        os.utime(path, (time.time() + 60, time.time() + 60))
    seconds, touched = timed_sync(source.pk)
    ok = touched["queued"] == 0 and touched["encoded"] == 0
    target("", "re-sync, 10 mtimes touched: nothing queued or encoded",
           f"{seconds:.2f} s, {touched['queued']} queued, {touched['encoded']} encoded", ok)

    for offset, path in enumerate(files[10:20]):
        path.write_text(page(10 + offset, revision=1))
    seconds, edited = timed_sync(source.pk)
    ok = edited["indexed"] == 10 and edited["queued"] == 10 and edited["files_encoded"] == 10
    target("", "re-sync, 10 contents edited: exactly those 10 re-indexed",
           f"{seconds:.2f} s, {edited['indexed']} re-indexed, {edited['files_encoded']} files encoded, "
           f"{edited['encoded']} chunks (the edited sections only)", ok)

    before = set(Document.objects.filter(workspace=workspace, archived=False).values_list("pk", flat=True))
    for path in files[20:30]:
        path.rename(path.with_name("renamed-" + path.name))
    seconds, renamed = timed_sync(source.pk)
    after = set(Document.objects.filter(workspace=workspace, archived=False).values_list("pk", flat=True))
    ok = renamed["encoded"] == 0 and renamed["queued"] == 0 and before == after
    target("", "re-sync, 10 files renamed: nothing encoded, the documents kept",
           f"{seconds:.2f} s, {renamed['queued']} queued, {renamed['encoded']} encoded, documents kept: "
           f"{before == after}", ok)
    return 0  # a missed target is a MISSED TARGET line, not an exit status (run_all.py counts exits as crashes)


if __name__ == "__main__":
    sys.exit(main())
