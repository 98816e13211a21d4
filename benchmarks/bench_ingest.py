"""Indexing throughput end to end: is the encoder the bottleneck, and does re-indexing skip work?

    python benchmarks/bench_ingest.py [--files 215] [--bulk-files 2080] [--keep]

Folders are generated from the demo corpus (devkit/ingest_corpus.py: one
chunk per section, every chunk text distinct) under var/bench/ingest, which is
also this benchmark's own DATA_DIR (its own PostgreSQL and Redis, emptied at
the start; BENCH_INGEST_DATA_DIR moves it). In order:

1. real, 1 worker: --files files indexed with all-MiniLM-L6-v2 by one real
   Celery worker process (prefork, concurrency 1, queues default,ingest,merge as
   `make run` starts them; empty EmbeddingCache, fresh workspace). Time runs from
   job creation to the last item's finished_at; merges run meanwhile on the same
   worker. The worker is `celery -A _ingest_workers worker`: the real app from
   config.celery, plus timers around the encoder, job_item_run and
   documents_merge (added up in Redis), so the report can say what share of the
   workers' time went to encoding.
2. unchanged: the same folder again, wall clock from the call (the files are
   hashed when the job is created; none reaches the worker).
3. real, 2 workers: two such processes, fresh workspace, empty cache. torch
   threads per worker = CPUs / workers (OMP_NUM_THREADS, as `make run` sets
   it): two workers with every core each would fight over the cores. --threads
   N sets it for both runs.
4. second version: 30% of the chunk-level units of the folder edited in place,
   indexed by the 2 workers; encoder texts (IndexingJobItem.encoded_count)
   compared with the chunk texts that really changed (parser and chunker run
   over both versions offline).
5. `manage.py ingest --sync` in a child process on a small folder, empty cache:
   the peak RSS of a --sync process that holds the model.
6. bulk: --bulk-files files (~10 chunks each) indexed in this process the way
   `ingest --sync` does (indexing_job_create, then job_item_run per item) with a
   tiny deterministic encoder (a SHAKE-256 digest per text): chunks/s of
   everything but encoding, with the time per pipeline step. The merges the
   hook queues are dropped, not run (bench_merge.py measures merging). Last, so
   that its chunks are not in the index the worker runs search.
7. bare encoder: the chunk texts of run 1, read back from the Chunk table,
   encoded again in this process by a fresh encoder of the configured kind (not
   through the cache) in one call; then a sample of documents, alternately one
   call per document (what the pipeline does) and one call for the sample.

8. a real pile (issue 40): `--real-folder` (default: the scale corpus, var/scale-corpus/corpus, 3,111 files of
   Django, Celery and Flask documentation, when `make eval-scale` built it; not in --quick or smoke runs)
   indexed by 2 workers as in run 3, fresh workspace and cache; then its distinct chunk texts through the
   bare encoder in this process. Targets: distinct chunks per second end to end >= 0.8x the bare encoder
   on the same texts, and the workers' time outside the encoder <= 25% of the wall. `--only-real-folder`
   skips runs 1-7.

Ratios: runs 1 and 3 against the bare encoder (target >= 0.8 with 1 worker, >= 0.9 with 2), run 2 against
run 1 (>= 50x), run 4's encoder texts against its chunks (<= 30%), run 6's
non-encoding rate against the bare encoder (>= 20x), and the lineage seconds of
runs 1 and 3 against their wall time until the merges ran, times the workers
(<= 10%; benchmarks/bench_lineage.py measures it on a real multi-version
folder, where every file has versions). The machine may be shared:
load averages are printed beside the figures. Exits 0 when it ran, whether or
not the targets were met.
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path

from _ingest_report import pile_report, report
from _ingest_workers import (
    CORPUS, DATA_DIR, EDITED_SHARE, ENCODER, StepTimer, TinyEncoder, Worker, fresh_workspace, job_totals, log,
    queues_purge, run_job, start_workers, stop_workers,
)
from _setup import QUICK, ROOT, SMOKE, django_setup, peak_rss_mb


def real_run(label: str, workers: list[Worker], slug: str, folder: Path) -> dict:
    from rag.embeddings import MINILM_NAME
    from rag.models import Chunk, EmbeddingCache

    EmbeddingCache.objects.filter(model_name=MINILM_NAME).delete()  # else the second run encodes nothing
    result = run_job(workspace_slug=slug, folder=folder, fresh=True)
    result["peak_rss"] = [worker.peak_rss_mb() for worker in workers]
    result["workers"] = len(workers)
    result["distinct"] = Chunk.objects.filter(workspace__slug=slug).values("text_hash").distinct().count()
    log(f"{label}: {result['files']} files, {result['chunks']} chunks, {result['encoded']} encoded, "
        f"{result['seconds']:.1f}s indexing, {result['drained_seconds']:.1f}s until merges ran; {result['statuses']}")
    return result


# --- the phases run in this process -----------------------------------------------------------------------


def bulk_run(folder: Path) -> dict:
    """The pipeline with the tiny encoder, in this process, timed step by step."""
    from django.db.models import Sum

    from rag import embeddings
    from rag.encoders import choice as encoder_choice
    from rag.dedup import merge as dedup
    from rag.ingest import pipeline
    from rag.jobs import run
    from rag.jobs.run import job_item_run
    from rag.models import Chunk, EmbeddingCache, IndexingJob
    from rag.uploads import indexing_job_create

    workspace = fresh_workspace("bench-ingest-bulk")
    encoder = TinyEncoder()
    encoder_choice._encoder = encoder  # this process only; reset below
    timer = StepTimer()
    leaves = {"parse_document": "parse", "resolve_doc_date": "date", "chunk_document": "chunk",
              "doc_type_rules": "doc type rules (query)", "classify_doc_type": "doc type (keyword regexes)"}
    for attribute, label in [*leaves.items(), ("embed_with_cache", "embed_with_cache")]:
        timer.wrap(pipeline, attribute, label)
    timer.wrap(run, "document_index", "document_index")  # the name job_item_run calls
    timer.wrap(dedup, "chunks_detach", "chunks_detach")
    timer.wrap(run, "indexed_merge_after_commit", "merge enqueue (hook)")
    timer.wrap(Chunk.objects, "bulk_create", "chunk rows insert (HNSW, GIN)")
    timer.wrap(EmbeddingCache.objects, "bulk_create", "cache rows insert")
    load = os.getloadavg()[0]
    try:
        started = time.perf_counter()
        job = indexing_job_create(workspace=workspace, paths=[folder], source=IndexingJob.Source.CLI, enqueue=False)
        created = time.perf_counter()
        statuses: dict[str, int] = defaultdict(int)
        for item_id in job.items.values_list("pk", flat=True):
            statuses[job_item_run(item_id=item_id)] += 1
        seconds = time.perf_counter() - started
    finally:
        timer.restore()
        embeddings.reset_encoder()
    queues_purge()  # the merges the hook queued: not part of this figure

    # Exclusive time per step: the wrapped functions nest, so inner steps come off their callers.
    s = dict(timer.seconds)
    steps = {label: s.get(label, 0.0) for label in leaves.values()}
    for label in ("chunks_detach", "chunk rows insert (HNSW, GIN)", "cache rows insert", "merge enqueue (hook)"):
        steps[label] = s.get(label, 0.0)
    steps["encode (tiny encoder)"] = encoder.seconds
    steps["cache lookup, text hashes"] = s["embed_with_cache"] - encoder.seconds - steps["cache rows insert"]
    steps["read, file hash, document row, commit"] = s["document_index"] - s["embed_with_cache"] - sum(
        steps[label] for label in [*leaves.values(), "chunks_detach", "chunk rows insert (HNSW, GIN)"])
    steps["job create (file walk, item rows)"] = created - started
    steps["job item bookkeeping (status rows)"] = seconds - (created - started) - s["document_index"] - steps[
        "merge enqueue (hook)"]
    chunks = job.items.aggregate(chunks=Sum("chunk_count"))["chunks"] or 0
    distinct = Chunk.objects.filter(workspace=workspace).values("text_hash").distinct().count()
    return {"files": job.items.count(), "chunks": chunks, "distinct": distinct, "seconds": seconds,
            "encode_seconds": encoder.seconds, "texts_encoded": encoder.texts_encoded, "steps": steps,
            "statuses": dict(statuses), "peak_rss": peak_rss_mb(), "load": (load, os.getloadavg()[0])}


def offline_chunks(folder: Path) -> list[str]:
    """Chunk texts of every file as the pipeline would cut them, without the database."""
    from django.conf import settings

    from rag.chunking import chunk_document
    from rag.parsers import parse_document

    texts = []
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        parsed = parse_document(path, path.read_bytes())
        texts += [d.text for d in chunk_document(parsed, target_words=settings.CHUNK_TARGET_WORDS,
                                                 max_words=settings.CHUNK_MAX_WORDS,
                                                 overlap_words=settings.CHUNK_OVERLAP_WORDS)]
    return texts


def sync_child_run(slug: str, folder: Path) -> dict:
    """`manage.py ingest --sync` in a child process, empty cache: wall time and the child's own peak RSS."""
    from django.conf import settings

    from rag.embeddings import MINILM_NAME
    from rag.models import EmbeddingCache, IndexingJob

    EmbeddingCache.objects.filter(model_name=MINILM_NAME).delete()
    fresh_workspace(slug)
    env = {**os.environ, "DATA_DIR": str(DATA_DIR), "DATABASE_URL": settings.DATABASE_URL,
           "REDIS_URL": settings.REDIS_URL, "EMBEDDING_ENCODER": ENCODER, "LOG_LEVEL": "WARNING"}
    started = time.perf_counter()
    child = subprocess.Popen([sys.executable, "manage.py", "ingest", str(folder), "--workspace", slug, "--sync",
                              "-v", "0"], cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(child.pid, 0)  # the child's own rusage, so its own peak RSS
    seconds = time.perf_counter() - started
    if os.waitstatus_to_exitcode(status) != 0:
        raise RuntimeError(f"ingest --sync failed: {child.stderr.read().decode()[-3000:]}")
    child.stderr.close()
    queues_purge()  # the merges it queued
    result = job_totals(IndexingJob.objects.filter(workspace__slug=slug).latest("pk"))
    result.update(wall_seconds=seconds, peak_rss=usage.ru_maxrss / 1024)
    log(f"--sync child: {result['files']} files, {result['chunks']} chunks in {seconds:.1f}s, "
        f"peak RSS {result['peak_rss']:.0f} MB")
    return result


def bare_encoder(slug: str, sample_documents: int, *, distinct: bool = False) -> dict:
    """The same chunk texts (`distinct`: each text once, as the pipeline's cache encodes them) straight into
    a fresh encoder: all in one call; then, on a sample of documents, one call per document against one
    call for the sample, alternately, best of 2."""
    import torch
    from tokenizers import Tokenizer

    from rag.embeddings import encoder_build, minilm_max_tokens, minilm_path
    from rag.models import Chunk

    rows = list(Chunk.objects.filter(workspace__slug=slug).order_by("document_id", "chunk_index")
                .values_list("document_id", "text"))
    texts = list(dict.fromkeys(text for _, text in rows)) if distinct else [text for _, text in rows]
    encoder = encoder_build()  # the encoder the workers used, built afresh
    encoder.encode(texts[:8])  # the first call pays for lazy initialisation
    # The model's own word pieces, uncut, whichever encoder ran: how many chunks its window truncates.
    tokens = [len(encoding.ids) for encoding in Tokenizer.from_file(str(minilm_path() / "tokenizer.json"))
              .encode_batch(texts)]
    window = minilm_max_tokens()
    load = os.getloadavg()[0]
    started = time.perf_counter()
    encoder.encode(texts)
    all_seconds = time.perf_counter() - started
    load_after = os.getloadavg()[0]

    by_document: dict[int, list[str]] = defaultdict(list)
    for document_id, text in rows:
        by_document[document_id].append(text)
    sample = list(by_document.values())[:sample_documents]
    flat = [text for document_texts in sample for text in document_texts]
    per_document, one_call = [], []
    for _round in range(2):
        started = time.perf_counter()
        for document_texts in sample:
            encoder.encode(document_texts)
        per_document.append(time.perf_counter() - started)
        started = time.perf_counter()
        encoder.encode(flat)
        one_call.append(time.perf_counter() - started)
    return {"texts": len(texts), "seconds": all_seconds, "rate": len(texts) / all_seconds,
            "threads": torch.get_num_threads(), "load": (load, load_after),
            "mean_tokens": sum(tokens) / len(tokens), "truncated": sum(n > window for n in tokens),
            "sample_documents": len(sample), "sample_texts": len(flat),
            "per_document_rate": len(flat) / min(per_document), "sample_one_call_rate": len(flat) / min(one_call)}


# --- main -----------------------------------------------------------------------------------------------------


def earlier_runs(figures: dict, args: argparse.Namespace, corpus, real, bulk,  # noqa: ANN001
                 workers: list[Worker]) -> None:
    """Runs 1-7 (the module docstring); `workers` holds the running ones, for the caller to stop on a failure."""
    workers[:], figures["warm_one"] = start_workers(1, figures["threads"][0])
    figures["one"] = real_run("1 worker", workers, "bench-ingest-w1", real.root)
    figures["unchanged"] = run_job(workspace_slug="bench-ingest-w1", folder=real.root, fresh=False)
    log(f"unchanged: {figures['unchanged']['statuses']} in {figures['unchanged']['wall_seconds']:.2f}s")
    stop_workers(workers)

    workers[:], figures["warm_two"] = start_workers(2, figures["threads"][1])
    figures["two"] = real_run("2 workers", workers, "bench-ingest-w2", real.root)
    v1_texts = offline_chunks(real.root)
    edits = corpus.choose_edits(real, share=EDITED_SHARE, seed=3)
    rewritten = corpus.write_folder(real, edited=edits)
    v2_texts = offline_chunks(real.root)
    figures["v2"] = run_job(workspace_slug="bench-ingest-w2", folder=real.root, fresh=False)
    known = set(v1_texts)
    figures["v2"].update(files_rewritten=len(rewritten), units=real.unit_count, units_edited=len(edits),
                         v1_chunks=len(v1_texts), v2_chunks=len(v2_texts),
                         changed=len({text for text in v2_texts if text not in known}))
    log(f"second version: {figures['v2']['statuses']}, {figures['v2']['encoded']} encoded in "
        f"{figures['v2']['seconds']:.1f}s")
    stop_workers(workers)

    figures["sync"] = sync_child_run("bench-ingest-sync", CORPUS / "warm")
    # After the worker runs, so that its 20,000 chunks are not in the index those runs search.
    if not args.skip_bulk:
        figures["bulk"] = bulk_run(bulk.root)
        log(f"bulk: {figures['bulk']['files']} files, {figures['bulk']['chunks']} chunks in "
            f"{figures['bulk']['seconds']:.1f}s")
    figures["bare"] = bare_encoder("bench-ingest-w1", args.sample_documents)
    log(f"bare encoder: {figures['bare']['rate']:.1f} chunks/s")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--files", type=int, default=4 if SMOKE else 215,
                        help="files for the real-encoder runs (~10 chunks each)")
    parser.add_argument("--bulk-files", type=int, default=4 if SMOKE else 2080, help="files for the tiny-encoder run")
    parser.add_argument("--threads", type=int, default=0, help="torch threads per worker (0: CPUs / workers)")
    parser.add_argument("--sample-documents", type=int, default=2 if SMOKE else 25, help="documents for the batching comparison")
    parser.add_argument("--skip-bulk", action="store_true")
    parser.add_argument("--keep", action="store_true", help="keep the workspaces and leave the services running")
    scale = ROOT / "var" / "scale-corpus" / "corpus"
    parser.add_argument("--real-folder", type=Path, default=scale if scale.is_dir() and not (QUICK or SMOKE) else None,
                        help="a real pile for run 8 (default: the scale corpus when built)")
    parser.add_argument("--only-real-folder", action="store_true", help="run 8 alone")
    args = parser.parse_args()
    if args.only_real_folder and not args.real_folder:
        parser.error("--only-real-folder needs --real-folder (or the scale corpus: make eval-scale)")

    import fasteners

    os.environ["DATA_DIR"] = str(DATA_DIR)  # never a real instance
    DATA_DIR.mkdir(parents=True, exist_ok=True)
    # Two runs on one DATA_DIR would empty each other's tables and share each other's workers.
    lock = fasteners.InterProcessLock(str(DATA_DIR / ".bench-ingest.lock"))
    if not lock.acquire(blocking=False):
        print(f"bench_ingest: another run is using {DATA_DIR}; wait for it to finish", file=sys.stderr)
        return 2
    # A run stopped from outside (timeout, Ctrl-C) still stops its workers, in the `finally` below.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    log(f"setting up {DATA_DIR}")
    django_setup(encoder=ENCODER)
    from devkit import ingest_corpus as corpus
    from django.conf import settings
    from django.db import connection

    from rag.jobs.broker import live_workers

    if stray := live_workers():
        print(f"bench_ingest: workers of an earlier run still serve {DATA_DIR}: {', '.join(stray)}; stop them "
              f"first (their figures would mix with ours)", file=sys.stderr)
        return 2

    with connection.cursor() as cursor:  # this DATA_DIR belongs to this benchmark alone
        cursor.execute("TRUNCATE rag_workspace, rag_embeddingcache CASCADE")
    queues_purge()

    shutil.rmtree(CORPUS, ignore_errors=True)
    max_words = settings.CHUNK_MAX_WORDS
    real = corpus.generate(args.files, seed=1, root=CORPUS / "real", max_words=max_words)
    corpus.write_folder(real)
    corpus.write_folder(corpus.generate(4, seed=99, root=CORPUS / "warm", max_words=max_words))
    bulk = corpus.generate(args.bulk_files, seed=2, root=CORPUS / "bulk", max_words=max_words)
    corpus.write_folder(bulk)
    log(f"generated {len(real.files)} + {len(bulk.files)} files under {CORPUS}")

    figures: dict = {"threads": (args.threads or os.cpu_count(), args.threads or max(1, os.cpu_count() // 2))}
    workers: list[Worker] = []
    try:
        if not args.only_real_folder:
            earlier_runs(figures, args, corpus, real, bulk, workers)
        if args.real_folder:
            workers[:], _warm = start_workers(2, figures["threads"][1])
            figures["pile"] = real_run("real pile, 2 workers", workers, "bench-ingest-pile", args.real_folder.resolve())
            stop_workers(workers)
            figures["pile_bare"] = bare_encoder("bench-ingest-pile", args.sample_documents, distinct=True)
            log(f"bare encoder on the pile's distinct texts: {figures['pile_bare']['rate']:.1f} chunks/s")
    finally:
        stop_workers(workers)
        if not args.keep:
            from config.embedded import stop_embedded

            with connection.cursor() as cursor:
                cursor.execute("TRUNCATE rag_workspace, rag_embeddingcache CASCADE")
            connection.close()
            stop_embedded(Path(settings.DATA_DIR))
    if not args.only_real_folder:
        report(figures)
    if "pile" in figures:
        pile_report(figures["pile"], figures["pile_bare"])
    return 0


if __name__ == "__main__":
    sys.exit(main())
