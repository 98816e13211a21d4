"""Dedup merge: speed at 10,000 and 100,000 chunks, and precision/recall against known duplicate groups.

    python benchmarks/bench_merge.py [--sizes 10000 100000] [--incremental-max 10000] [--keep]

Each size gets a fresh workspace of synthetic technical documentation
(devkit/synthetic_corpus.py): families of 3 versions in which 20% of the
sections are carried over with one or two facts changed, the rest written
afresh. Figures:

- rebuild: `workspace_merge` (what `manage.py merge_duplicates` runs): wall
  time, chunks/s, and growth from the smallest to the largest size;
- incremental: `document_merge` for every document in turn (what the merge
  workers do after indexing), up to --incremental-max chunks;
- precision and recall of the records over pairs of chunks, against the
  generated groups (target: both >= 0.98);
- admin list pages at the largest size: time and query count.

Exits 1 when the merge is wrong (a second run changes something, incremental
and rebuild disagree, precision or recall below 0.98); a missed speed target
is printed, as in bench_ingest.py, not an exit status.

Embeddings come from the hashing encoder (words and word pairs), not from
all-MiniLM-L6-v2: the model embeds about 18 chunks/s on this machine, so
100,000 chunks would take an hour and a half before the merge starts, and the
merge only ever sees vectors. On this text the hashing encoder behaves as the
merge needs (versions of a section >= 0.93, mostly >= 0.95; unrelated sections
<= 0.85), so the figures measure the merge, not the encoder. Runs on its own
DATA_DIR (var/bench); the workspaces are deleted afterwards unless --keep.
"""

from __future__ import annotations

import argparse
import itertools
import os
import random
import resource
import sys
import time
from collections import defaultdict
from datetime import datetime, timedelta
from datetime import UTC
from pathlib import Path

from _setup import SMOKE, django_setup, peak_rss_mb, target

PREFIX = "bench-merge"


def build_workspace(size: int):
    from django.db import connection, transaction

    from rag.embeddings import HashingEncoder
    from rag.embeddings.cache import text_hash
    from rag.models import Chunk, Document, Workspace
    from devkit.synthetic_corpus import generate

    Workspace.objects.filter(slug=f"{PREFIX}-{size}").delete()
    workspace = Workspace.objects.create(slug=f"{PREFIX}-{size}", name=f"Merge benchmark {size}")
    documents = generate(chunks=size, duplicate_share=0.2, versions=3, sections_per_document=10, seed=size,
                         prefix=f"/bench/{size}")
    encoder = HashingEncoder()
    truth: dict[int, int] = {}  # chunk id -> generated group, for sections carried across versions
    started = time.monotonic()
    # Inserting 100,000 rows into a live HNSW index takes far longer than building it once afterwards.
    with connection.cursor() as cursor:
        cursor.execute("DROP INDEX IF EXISTS chunk_embedding_hnsw")
    batch = 200  # documents per transaction
    for start in range(0, len(documents), batch):
        part = documents[start:start + batch]
        with transaction.atomic():
            rows = Document.objects.bulk_create(
                Document(workspace=workspace, path=d.path, title=d.title, format="markdown", doc_date=d.doc_date,
                         date_source="frontmatter", doc_type="operations", chunk_count=len(d.sections),
                         indexed_at=d.doc_date)
                for d in part)
            texts = [section.text for d in part for section in d.sections]
            vectors = encoder.encode(texts)
            chunks = []
            for row, synthetic in zip(rows, part):
                for index, section in enumerate(synthetic.sections):
                    chunks.append(Chunk(workspace=workspace, document=row, text=section.text,
                                        text_hash=text_hash(section.text), heading_path=section.heading,
                                        chunk_index=index, total_chunks=len(synthetic.sections),
                                        chunk_position="middle", embedding=vectors[len(chunks)]))
            created = Chunk.objects.bulk_create(chunks, batch_size=2000)
            flat = [section for d in part for section in d.sections]
            for chunk, section in zip(created, flat):
                if section.group is not None:
                    truth[chunk.pk] = section.group
    stored = time.monotonic() - started
    ensure_hnsw_index()
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE rag_chunk")
        cursor.execute("ANALYZE rag_document")
    chunk_total = sum(len(d.sections) for d in documents)
    return workspace, truth, chunk_total, stored, time.monotonic() - started - stored, len(documents)


def ensure_hnsw_index() -> None:
    """The index exactly as migration 0003 creates it (also repairs an interrupted run)."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SET maintenance_work_mem = '1GB'")
        cursor.execute("SET max_parallel_maintenance_workers = 2")
        cursor.execute("CREATE INDEX IF NOT EXISTS chunk_embedding_hnsw ON rag_chunk "
                       "USING hnsw (embedding vector_cosine_ops) WITH (m = 16, ef_construction = 64)")
        cursor.execute("RESET maintenance_work_mem")
        cursor.execute("RESET max_parallel_maintenance_workers")


def cpu_seconds() -> float:
    """CPU of this process plus its database backend: unlike wall time, not inflated by other load on the machine."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        backend = cursor.fetchone()[0]
    usage = resource.getrusage(resource.RUSAGE_SELF)
    try:
        fields = Path(f"/proc/{backend}/stat").read_text().rsplit(")", 1)[1].split()
        server = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except OSError:  # a database on another machine
        server = float("nan")
    return usage.ru_utime + usage.ru_stime + server


def predicted_groups(workspace) -> dict[int, int]:
    from rag.models import CanonicalRecord, ChunkVariant

    membership = dict(CanonicalRecord.objects.filter(workspace=workspace).values_list("canonical_chunk_id", "pk"))
    membership.update(ChunkVariant.objects.filter(record__workspace=workspace).values_list("chunk_id", "record_id"))
    return membership


def pairs(membership: dict[int, int]) -> set[tuple[int, int]]:
    groups: dict[int, list[int]] = defaultdict(list)
    for chunk, group in membership.items():
        groups[group].append(chunk)
    return {tuple(sorted(pair)) for members in groups.values() for pair in itertools.combinations(members, 2)}


def score(workspace, truth: dict[int, int]) -> tuple[float, float, int, int]:
    predicted, expected = pairs(predicted_groups(workspace)), pairs(truth)
    hits = len(predicted & expected)
    precision = hits / len(predicted) if predicted else 1.0
    recall = hits / len(expected) if expected else 1.0
    return precision, recall, len(predicted), len(expected)


def admin_pages(workspace) -> list[tuple[str, float, int]]:
    from django.contrib.auth import get_user_model
    from django.core.management import call_command
    from django.db import connection
    from django.test import Client
    from django.test.utils import CaptureQueriesContext
    from django.urls import reverse

    user, _ = get_user_model().objects.get_or_create(username="bench-admin", defaults={"is_staff": True,
                                                                                      "is_superuser": True})
    client = Client(HTTP_HOST="localhost")
    client.force_login(user)
    call_command("collectstatic", interactive=False, verbosity=0)  # DEBUG is off: pages name the hashed files
    results = []
    for name in ("document", "canonicalrecord", "contradiction"):
        url = reverse(f"admin:rag_{name}_changelist") + f"?workspace__id__exact={workspace.pk}"
        client.get(url)  # warm caches once
        with CaptureQueriesContext(connection) as queries:
            started = time.monotonic()
            response = client.get(url)
            elapsed = time.monotonic() - started
        assert response.status_code == 200, (name, response.status_code)
        results.append((name, elapsed, len(queries)))
    return results


def shared_chunk_case(documents: int) -> int:
    """One boilerplate chunk in every one of `documents` documents: merge each in turn, then re-index one.

    Every document also holds a chunk of its own. Prints the time per document merge over
    the first and the last tenth (flat when the per-document work is bounded, growing with
    the record when it is not) and the time to take one member out (what a re-index or
    archive does in the pipeline's transaction). Returns 1 when the record is wrong.
    """
    from django.db import transaction

    from rag.dedup.merge import chunks_detach, document_merge
    from rag.embeddings import HashingEncoder
    from rag.embeddings.cache import text_hash
    from rag.models import CanonicalRecord, Chunk, Document, Workspace

    Workspace.objects.filter(slug=f"{PREFIX}-shared").delete()
    workspace = Workspace.objects.create(slug=f"{PREFIX}-shared", name="Merge benchmark: one shared chunk")
    boilerplate = ("This documentation is licensed under the Apache License, Version 2.0. You may not use these "
                   "files except in compliance with the License. Unless required by applicable law, the software "
                   "is distributed on an AS IS basis, without warranties or conditions of any kind.")
    encoder = HashingEncoder()
    shared_vector = encoder.encode([boilerplate])[0]
    with transaction.atomic():
        rows = Document.objects.bulk_create(
            Document(workspace=workspace, path=f"/shared/{n}.md", title=f"Page {n}", format="markdown",
                     chunk_count=2, indexed_at=datetime(2026, 1, 1, tzinfo=UTC) + timedelta(minutes=n))
            for n in range(documents))
        own = [f"Page {n} explains setting number {n} of the {n % 97} subsystem in its own words." for n in range(documents)]
        own_vectors = encoder.encode(own)
        Chunk.objects.bulk_create(
            [Chunk(workspace=workspace, document=row, text=text, text_hash=text_hash(text), chunk_index=0,
                   total_chunks=2, chunk_position="first", embedding=vector)
             for row, text, vector in zip(rows, own, own_vectors)]
            + [Chunk(workspace=workspace, document=row, text=boilerplate, text_hash=text_hash(boilerplate),
                     chunk_index=1, total_chunks=2, chunk_position="last", embedding=shared_vector) for row in rows],
            batch_size=2000)
    timings = []
    for row in rows:
        started = time.monotonic()
        document_merge(document_id=row.pk)
        timings.append(time.monotonic() - started)
    tenth = max(1, documents // 10)
    first, last = sum(timings[:tenth]) / tenth, sum(timings[-tenth:]) / tenth
    record = CanonicalRecord.objects.get(workspace=workspace)
    right = record.merge_count == documents - 1
    leaving = Chunk.objects.filter(document=rows[documents // 2], chunk_index=1).values_list("pk", flat=True)
    started = time.monotonic()
    with transaction.atomic():
        chunks_detach(chunk_ids=list(leaving))
    detach = time.monotonic() - started
    record.refresh_from_db()
    right = right and record.merge_count == documents - 2
    print(f"\none chunk shared by {documents:,} documents: {sum(timings):.1f}s to merge them one by one; "
          f"{1000 * first:.1f} ms per document over the first tenth, {1000 * last:.1f} ms over the last "
          f"({last / first:.1f}x); taking one member out {1000 * detach:.0f} ms; record "
          f"{'right' if right else 'WRONG'} ({record.merge_count + 1} members)", flush=True)
    target("", f"one chunk shared by {documents:,} documents: one record, right after a member leaves",
           f"{record.merge_count + 1} members; {last / first:.1f}x per document from the first tenth to the last", right)
    workspace.delete()
    return 0 if right else 1


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", type=int, nargs="*", default=[300] if SMOKE else [10_000, 100_000])
    parser.add_argument("--incremental-max", type=int, default=10_000,
                        help="also time document-by-document merging up to this many chunks")
    parser.add_argument("--keep", action="store_true", help="keep the benchmark workspaces")
    parser.add_argument("--shared", type=int, default=20 if SMOKE else 5000, help="documents sharing one chunk (0: skip the case)")
    args = parser.parse_args()
    django_setup(encoder="hashing")
    from django.conf import settings

    from rag.dedup.merge import document_merge, workspace_merge
    from rag.dedup.neighbours import search_plan
    from rag.models import CanonicalRecord, Contradiction, Workspace

    Workspace.objects.filter(slug__startswith=PREFIX).delete()
    if args.shared:
        shared_chunk_case(args.shared)
    print(f"merge threshold {settings.MERGE_THRESHOLD}, contradiction threshold {settings.CONTRADICTION_THRESHOLD}, "
          f"{settings.MERGE_NEIGHBOURS} neighbours per chunk, exact scan up to {settings.MERGE_EXACT_SCAN_MAX_CHUNKS} "
          f"chunks, ef_search >= {settings.MERGE_EF_SEARCH}", flush=True)
    rows = []
    for size in args.sizes:
        try:
            workspace, truth, chunks, build_seconds, index_seconds, document_count = build_workspace(size)
        finally:
            ensure_hnsw_index()
        print(f"\n{chunks} chunks in {document_count} documents ({len(truth)} in {len(set(truth.values()))} duplicate "
              f"groups), stored in {build_seconds:.0f}s, HNSW index built in {index_seconds:.0f}s", flush=True)
        cpu_before = cpu_seconds()
        stats = workspace_merge(workspace_id=workspace.pk)
        cpu = cpu_seconds() - cpu_before
        precision, recall, predicted, expected = score(workspace, truth)
        again = workspace_merge(workspace_id=workspace.pk)
        idempotent = (again.records_created, again.records_changed, again.records_dissolved,
                      again.contradictions_raised) == (0, 0, 0, 0)
        contradictions = Contradiction.objects.filter(workspace=workspace).count()
        print(f"  rebuild: {stats.seconds:.1f}s ({cpu:.1f} CPU s), {chunks / stats.seconds:.0f} chunks/s, "
              f"search {stats.search} (ef_search {search_plan(workspace.pk).ef_search}), "
              f"{stats.records_created} records, {contradictions} contradictions; second run {again.seconds:.1f}s, "
              f"{'no changes' if idempotent else 'CHANGED THINGS'}", flush=True)
        print(f"  precision {precision:.4f}  recall {recall:.4f}  ({predicted} predicted pairs, {expected} true pairs)",
              flush=True)
        incremental = None
        if chunks <= args.incremental_max:
            rebuilt = {(canonical, frozenset(variants)) for canonical, variants in _records(workspace)}
            CanonicalRecord.objects.filter(workspace=workspace).delete()
            Contradiction.objects.filter(workspace=workspace).delete()
            started = time.monotonic()
            order = list(workspace.documents.values_list("pk", flat=True))
            random.Random(size).shuffle(order)
            for document_id in order:
                document_merge(document_id=document_id)
            incremental = time.monotonic() - started
            same = {(canonical, frozenset(variants)) for canonical, variants in _records(workspace)} == rebuilt
            verdict = "same records as the rebuild" if same else "DIFFERENT records"
            print(f"  incremental (document by document, random order): {incremental:.1f}s, "
                  f"{chunks / incremental:.0f} chunks/s, {verdict}", flush=True)
            target("", f"document-by-document merging gives the rebuild's records at {chunks:,} chunks", verdict, same)
        target("", f"merge precision and recall >= 0.98 at {chunks:,} chunks",
               f"precision {precision:.4f}, recall {recall:.4f}", precision >= 0.98 and recall >= 0.98)
        target("", f"a second rebuild changes nothing at {chunks:,} chunks",
               "no changes" if idempotent else "changed things", idempotent)
        rows.append((size, chunks, stats.seconds, precision, recall, incremental, cpu))
        if size == max(args.sizes):
            for name, elapsed, queries in admin_pages(workspace):
                print(f"  admin {name} list: {elapsed * 1000:.0f} ms, {queries} queries", flush=True)
        if not args.keep:
            workspace.delete()

    print("\n| chunks | rebuild wall s | CPU s | chunks/s | incremental chunks/s | precision | recall |")
    print("|---:|---:|---:|---:|---:|---:|---:|")
    for _size, chunks, seconds, precision, recall, incremental, cpu in rows:
        inc = f"{chunks / incremental:.0f}" if incremental else "—"
        print(f"| {chunks:,} | {seconds:.1f} | {cpu:.1f} | {chunks / seconds:.0f} | {inc} | {precision:.4f} "
              f"| {recall:.4f} |")
    if len(rows) > 1:
        small, large = rows[0], rows[-1]
        growth, cpu_growth = large[2] / small[2], large[6] / small[6]
        target("", f"rebuild time grows at most 1.2x the chunks' growth ({large[1] / small[1]:.0f}x the chunks)",
               f"{growth:.1f}x (CPU {cpu_growth:.1f}x); load average now {os.getloadavg()[0]:.1f} on "
               f"{os.cpu_count()} CPUs", growth <= 12 * (large[1] / small[1]) / 10)
    print(f"peak RSS {peak_rss_mb():.0f} MB")
    return 0  # a missed target is a MISSED TARGET line, not an exit status (run_all.py counts exits as crashes)


def _records(workspace):
    from rag.models import CanonicalRecord

    for record in CanonicalRecord.objects.filter(workspace=workspace).prefetch_related("variants"):
        yield record.canonical_chunk_id, [variant.chunk_id for variant in record.variants.all()]


if __name__ == "__main__":
    sys.exit(main())
