"""Search at 100,000 real-text chunks, and at 1,000,000 chunks derived from them (issue 40, items 2 and 3).

    python benchmarks/bench_search_scale.py [--sizes 100000,1000000] [--queries 200] [--encode-seconds S]

The text: every distinct chunk of real documentation (the scale and Sphinx evaluation corpora plus some
eighty releases of other projects' docs from their PyPI sdists, benchmarks/_docs_corpus.py), cut by Docent's
own parser and chunker at `make run`'s chunk sizes, in a fixed shuffled order; one document per source file.
The vectors: all-MiniLM-L6-v2 (its ONNX export, as web processes run it) on those texts, encoded once into
resumable shards under var/bench/docs-vectors and reused by every later run; the queries are first sentences
of held-out chunks (never indexed), encoded the same way. The first encoding is the slow part (it runs at the
encoder's speed, chunks per second printed); `--encode-seconds` bounds it, and a run with fewer than `size`
encoded rows measures what is there and says so (a target at a size it did not reach is MISSED).

A size past the encoded rows (1,000,000) is the real rows repeated: each repeat's vector is the real one plus
Gaussian noise (NOISE per dimension, renormalised: cosine about 0.98 to its source) and its text the real one
with every identifier and number changed (`max_length` -> `max_length_r3`, 8000 -> 8003), in documents of
their own, so that vector and lexical work are those of that many distinct rows.

Each size is built in a child process on its own DATA_DIR (var/bench/search-scale-<size>) and kept: a later
run with the same rows reuses the table and its index (no encoding, no copy, no index build). Built: COPY of
the rows, then the HNSW index (m 16, ef_construction 64, as the migration declares) with its build time, the
index's size and the PostgreSQL processes' peak resident memory while building. Measured per query, the
three modes alternating, ROUNDS times: the full pipeline (`rag.retrieval.search` with the chat's defaults,
the question encoded beforehand), semantic only and lexical only; p50/p95 over all runs. recall@10: the
semantic path as search runs it (HNSW, its ef_search) against an exact scan, by distance.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import re
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(HERE))

from _docs_corpus import MAX_INDEXED, corpus_folders, encoded_queries, encoded_rows, encoded_vectors, real_chunks  # noqa: E402
from _setup import QUICK, SMOKE, child_figures, machine_load, percentile, target  # noqa: E402

TOP_K = 10
ROUNDS = 2
NOISE = 0.01  # per dimension: a repeat's vector is about cosine 0.98 to its source
DOC_TYPES = ["api", "architecture", "operations", "troubleshooting", "user"]
HYBRID_P95_MS = {100_000: 50.0, 1_000_000: 150.0}  # issue 40
RECALL_TARGET = 0.95
RECALL_QUERIES = 100  # exact scans at 1M rows take seconds each
MAINTENANCE_WORK_MEM = "4GB"  # the graph of 1M 384-dim rows fits: no slow on-disk build phase
VECTORS = ROOT / "var" / "bench" / "docs-vectors"
_IDENTIFIER = re.compile(r"\b(?:[A-Za-z]+_[A-Za-z0-9_]+|[a-z]+[A-Z][A-Za-z0-9]*|[A-Za-z_]+\.[A-Za-z_][\w.]*)\b")
_NUMBER = re.compile(r"\b\d+\b")


def _ms(seconds: list[float]) -> tuple[float, float]:
    return percentile(seconds, 50) * 1000, percentile(seconds, 95) * 1000


def repeated_text(text: str, repeat: int) -> str:
    """The text of a real chunk's `repeat`-th copy: the same prose, other identifiers and numbers."""
    if repeat == 0:
        return text
    text = _IDENTIFIER.sub(lambda m: f"{m.group()}_r{repeat}", text)
    return _NUMBER.sub(lambda m: str(int(m.group()) + repeat), text)


def repeated_vectors(vectors: np.ndarray, repeat: int) -> np.ndarray:
    if repeat == 0:
        return vectors
    noisy = vectors + np.random.default_rng(repeat).normal(0, NOISE, vectors.shape).astype(np.float32)
    return (noisy / np.linalg.norm(noisy, axis=1, keepdims=True)).astype(np.float32)


# --- building (child) -----------------------------------------------------------------------------------


class PeakMemory:
    """The benchmark's PostgreSQL (its postmaster and the postmaster's children) resident memory, summed and
    sampled every half second, its peak kept; another server on the machine is not counted."""

    def __init__(self, backend_pid: int) -> None:
        """backend_pid: a connection's server process (`pg_backend_pid()`), whose parent is the postmaster; a
        server on another machine is not seen (peak 0)."""
        self.peak_mb = 0.0
        status = Path(f"/proc/{backend_pid}/status")
        found = re.search(r"PPid:\s+(\d+)", status.read_text()) if status.exists() else None
        self._postmaster = int(found.group(1)) if found else -1
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.wait(0.5):
            total = 0
            for status in Path("/proc").glob("[0-9]*/status"):
                try:
                    text = status.read_text()
                except OSError:
                    continue
                pid = int(status.parent.name)
                parent = re.search(r"PPid:\s+(\d+)", text)
                if pid == self._postmaster or (parent and int(parent.group(1)) == self._postmaster):
                    found = re.search(r"VmRSS:\s+(\d+) kB", text)
                    total += int(found.group(1)) if found else 0
            self.peak_mb = max(self.peak_mb, total / 1024)

    def __enter__(self) -> PeakMemory:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


def build(size: int, rows: list[list[str]], vectors: np.ndarray) -> tuple[object, dict]:
    """The workspace holding `size` rows (built, or reused when a run left the same ones), and the build's
    figures."""
    from django.db import connection
    from django.utils import timezone
    from pgvector.psycopg import register_vector

    from licensing.services import process_grant_set
    from rag.models import Chunk, Document, Workspace

    real = len(rows)
    repeats = math.ceil(size / real)
    digest = hashlib.sha256("".join(row[0] for row in rows[:50]).encode() + vectors[:50].tobytes()).hexdigest()[:12]
    signature = f"scale {size} {real} {NOISE} {digest}"
    workspace = Workspace.objects.filter(slug="bench-scale").first()
    if workspace and workspace.name == signature:
        print(f"  reusing the {size:,}-row corpus", file=sys.stderr, flush=True)
        process_grant_set(workspace_id=workspace.pk, tier_slug="enterprise")
        return workspace, json.loads((Path(os.environ["DATA_DIR"]) / "build.json").read_text())
    started = time.monotonic()
    with connection.cursor() as cursor:
        cursor.execute("TRUNCATE rag_contradiction, rag_chunkvariant, rag_canonicalrecord, rag_chunk, rag_document, "
                       "rag_documentfamily RESTART IDENTITY CASCADE")
    workspace, _ = Workspace.objects.update_or_create(slug="bench-scale", defaults={"name": "building"})
    process_grant_set(workspace_id=workspace.pk, tier_slug="enterprise")

    files: dict[str, list[int]] = {}
    for row, (_text, _heading, file) in enumerate(rows):
        files.setdefault(file, []).append(row)
    rng = np.random.default_rng(11)
    now = timezone.now()
    index = next(i for i in Chunk._meta.indexes if i.name == "chunk_embedding_hnsw")
    with connection.schema_editor() as editor:
        editor.remove_index(Chunk, index)
    raw = connection.connection
    register_vector(raw)
    copied = 0
    for repeat in range(repeats):
        wanted = min(real, size - copied)
        documents, document_of = [], {}
        for number, (file, members) in enumerate(files.items()):
            members = [row for row in members if row < wanted]
            if not members:
                continue
            document_of[file] = len(documents)
            documents.append(Document(
                workspace=workspace, path=f"/r{repeat}/{file}", title=Path(file).stem, format="markdown",
                doc_date=now - np.timedelta64(int(rng.integers(0, 5 * 365)), "D").item(),
                date_source="frontmatter", doc_type=DOC_TYPES[number % len(DOC_TYPES)],
                status=Document.Status.INDEXED, chunk_count=len(members), indexed_at=now))
        documents = Document.objects.bulk_create(documents, batch_size=5000)
        position = {row: (index_in_file, len(members)) for members in files.values()
                    for index_in_file, row in enumerate(r for r in members if r < wanted)}
        shifted = repeated_vectors(vectors[:wanted], repeat)
        with raw.cursor() as cursor, cursor.copy(
            "COPY rag_chunk (workspace_id, document_id, text, text_hash, heading_path, chunk_index, total_chunks, "
            "chunk_position, embedding, created_at) FROM STDIN WITH (FORMAT BINARY)"
        ) as copy:
            copy.set_types(["int8", "int8", "text", "varchar", "varchar", "int4", "int4", "varchar", "vector",
                            "timestamptz"])
            for row in range(wanted):
                text, heading, file = rows[row]
                document = documents[document_of[file]]
                index_in_file, total = position[row]
                text = repeated_text(text, repeat)
                copy.write_row((workspace.pk, document.pk, text, hashlib.sha256(text.encode()).hexdigest(),
                                heading[:500], index_in_file, total, "middle", shifted[row], now))
        raw.commit()
        copied += wanted
        print(f"  copied {copied:,}/{size:,} rows ({time.monotonic() - started:.0f}s)", file=sys.stderr, flush=True)
    copy_seconds = time.monotonic() - started

    print(f"  building the HNSW index over {size:,} rows", file=sys.stderr, flush=True)
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        backend = cursor.fetchone()[0]
    with connection.cursor() as cursor, PeakMemory(backend) as memory:
        cursor.execute(f"SET maintenance_work_mem = '{MAINTENANCE_WORK_MEM}'")
        cursor.execute("SET max_parallel_maintenance_workers = %s", [max(0, (os.cpu_count() or 2) - 1)])
        built = time.monotonic()
        with connection.schema_editor() as editor:
            editor.add_index(Chunk, index)
        hnsw_seconds = time.monotonic() - built
        cursor.execute("RESET maintenance_work_mem")
        cursor.execute("RESET max_parallel_maintenance_workers")
        cursor.execute("SELECT pg_relation_size('chunk_embedding_hnsw'), pg_total_relation_size('rag_chunk')")
        index_bytes, table_bytes = cursor.fetchone()
        cursor.execute("ANALYZE")
    figures = {"copy_s": copy_seconds, "hnsw_s": hnsw_seconds, "hnsw_peak_rss_mb": memory.peak_mb,
               "index_mb": index_bytes / 2**20, "table_mb": table_bytes / 2**20, "repeats": repeats}
    (Path(os.environ["DATA_DIR"]) / "build.json").write_text(json.dumps(figures))
    Workspace.objects.filter(pk=workspace.pk).update(name=signature)
    print(f"  built in {time.monotonic() - started:.0f}s (copy {copy_seconds:.0f}s, HNSW {hnsw_seconds:.0f}s)",
          file=sys.stderr, flush=True)
    return workspace, figures


# --- measuring (child) ----------------------------------------------------------------------------------


def measure(size: int, rows: list[list[str]], vectors: np.ndarray, queries: list[str],
            query_vectors: np.ndarray) -> dict:
    from rag.retrieval import SearchOptions, search
    from rag.retrieval import vectors as vector_sql
    from rag.retrieval.filters import build_scope
    from rag.retrieval.options import SearchFilters

    workspace, built = build(size, rows, vectors)

    def run(query: str, vector: np.ndarray, mode: str) -> float:
        options = SearchOptions(workspace=workspace.pk, top_k=TOP_K, mode=mode, query_embedding=tuple(vector.tolist()))
        started = time.perf_counter()
        search(query, options)
        return time.perf_counter() - started

    for query, vector in list(zip(queries, query_vectors))[:10]:  # warm caches and plans
        for mode in ("hybrid", "semantic", "lexical"):
            run(query, vector, mode)
    timings: dict[str, list[float]] = {"hybrid": [], "semantic": [], "lexical": []}
    for number, (query, vector) in enumerate(zip(queries, query_vectors)):
        for round_number in range(ROUNDS):
            order = ["hybrid", "semantic", "lexical"]
            shift = (number + round_number) % 3
            for mode in order[shift:] + order[:shift]:
                timings[mode].append(run(query, vector, mode))

    scope = build_scope(workspace_id=workspace.pk, filters=SearchFilters())
    pool = SearchOptions(workspace=workspace.pk).resolved().candidate_pool
    recalls, ef = [], None
    for vector in query_vectors[:RECALL_QUERIES]:
        approximate = vector_sql.semantic_candidates(scope, vector.tolist(), pool)
        exact = vector_sql.semantic_candidates(scope, vector.tolist(), TOP_K, force="exact")
        tenth = exact.rows[-1][1] + 1e-6  # by distance: equal vectors are equally right
        recalls.append(sum(distance <= tenth for _, distance in approximate.rows[:TOP_K]) / len(exact.rows))
        ef = approximate.ef_search
    figures = {"size": size, "real": len(rows), "queries": len(queries), "chunks_in_scope": scope.chunks_in_scope,
               "recall": float(np.mean(recalls)), "recall_min": float(np.min(recalls)), "ef_search": ef, **built}
    for mode, seconds in timings.items():
        figures[f"{mode}_p50"], figures[f"{mode}_p95"] = _ms(seconds)
    return figures


def corpus() -> tuple[list[list[str]], list[str], Path]:
    """(rows, queries, where their vectors are): the smoke run's stand-in corpus, else the documentation."""
    if SMOKE:
        folder = Path(os.environ.get("BENCH_REAL_CORPUS", ROOT / "var" / "bench" / "smoke-corpus" / "corpus"))
        cache = ROOT / "var" / "bench" / "smoke-scale"
        import _docs_corpus

        _docs_corpus.MAX_INDEXED, _docs_corpus.QUERIES = 40, 3
        data = real_chunks([folder], cache / "chunks.json")
        return data["chunks"], data["queries"], cache / "vectors"
    data = real_chunks(corpus_folders(ROOT / "var" / "bench" / "docs-corpus"), ROOT / "var" / "bench" / "docs-chunks.json")
    return data["chunks"], data["queries"], VECTORS


def query_vectors(queries: list[str], folder: Path) -> np.ndarray:
    from _search_corpus import real_encoder

    return encoded_queries(queries, folder, lambda: real_encoder(folder.parent))


def child(size: int, real: int, query_count: int) -> None:
    def run() -> dict:
        rows, queries, folder = corpus()
        return measure(size, rows[:real], encoded_vectors(folder, real), queries[:query_count],
                       query_vectors(queries, folder)[:query_count])

    child_figures(run)


# --- the parent -----------------------------------------------------------------------------------------


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="40,400" if SMOKE else "20000" if QUICK else "100000,1000000")
    parser.add_argument("--queries", type=int, default=3 if SMOKE else 60 if QUICK else 200)
    parser.add_argument("--encode-seconds", type=float, default=None,
                        help="bound the first encoding; a size past what is encoded is measured at what is there")
    parser.add_argument("--child", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--real", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child, args.real, args.queries)
        return 0

    sizes = [int(size) for size in args.sizes.split(",")]
    rows, queries, folder = corpus()
    wanted = min(len(rows), MAX_INDEXED if not SMOKE else len(rows), max(sizes))
    started = time.monotonic()
    if SMOKE:  # the hashing encoder: no model in the suite's run
        from _search_corpus import real_encoder

        folder.mkdir(parents=True, exist_ok=True)
        if not (folder / "rows-0000000.npy").exists():
            np.save(folder / "rows-0000000.npy", np.asarray(real_encoder(folder.parent).encode(
                [row[0] for row in rows]), dtype=np.float32))
        real = len(rows)
    else:
        real = encoded_rows([row[0] for row in rows], folder, upto=wanted, seconds=args.encode_seconds)
    print(f"{real:,} real chunks encoded ({time.monotonic() - started:.0f}s this run; the shards are kept)")
    query_vectors(queries, folder)

    load_before = os.getloadavg()[0]
    figures = []
    for size in sizes:
        print(f"size {size:,}: building or reusing the corpus ({min(size, real):,} real rows), then measuring ...",
              flush=True)
        env = {**os.environ, "DATA_DIR": str(ROOT / "var" / "bench" / f"search-scale-{size}")}
        result = subprocess.run(
            [sys.executable, __file__, "--child", str(size), "--real", str(min(size, real)),
             "--queries", str(args.queries)], env=env, capture_output=True, text=True)
        sys.stderr.write(result.stderr[-3000:])
        if result.returncode != 0:
            return result.returncode
        figures.append(json.loads(result.stdout.strip().splitlines()[-1]))

    print(f"\n{args.queries} queries (first sentences of held-out documentation chunks), top_k {TOP_K}, "
          f"{ROUNDS} runs per query and mode, modes alternating; questions encoded beforehand.")
    print(f"Load average {load_before:.1f} before, {os.getloadavg()[0]:.1f} after, on {os.cpu_count()} CPUs.\n")
    header = f"{'':<40}" + "".join(f"{f['size']:>18,}" for f in figures)
    print(header)
    print("-" * len(header))
    for label, render in [
        ("real rows (the rest: repeats)", lambda f: f"{f['real']:,} x {f['repeats']}"),
        ("hybrid (full pipeline) p50 / p95 ms", lambda f: f"{f['hybrid_p50']:.1f} / {f['hybrid_p95']:.1f}"),
        ("semantic p50 / p95 ms", lambda f: f"{f['semantic_p50']:.1f} / {f['semantic_p95']:.1f}"),
        ("lexical p50 / p95 ms", lambda f: f"{f['lexical_p50']:.1f} / {f['lexical_p95']:.1f}"),
        ("recall@10 vs exact (mean / min)", lambda f: f"{f['recall']:.3f} / {f['recall_min']:.1f}"),
        ("  ef_search", lambda f: f"{f['ef_search']}"),
        ("copy s / HNSW build s", lambda f: f"{f['copy_s']:.0f} / {f['hnsw_s']:.0f}"),
        ("HNSW index MB / table MB", lambda f: f"{f['index_mb']:.0f} / {f['table_mb']:.0f}"),
        ("PostgreSQL peak RSS in build MB", lambda f: f"{f['hnsw_peak_rss_mb']:.0f}"),
    ]:
        print(f"{label:<40}" + "".join(f"{render(f):>18}" for f in figures))
    print(machine_load())
    for f in figures:
        limit = HYBRID_P95_MS.get(f["size"])
        if limit is None:
            continue
        whole = f["real"] >= min(f["size"], MAX_INDEXED)
        note = "" if whole else f"; only {f['real']:,} real rows encoded"
        target("40", f"hybrid p95 <= {limit:.0f} ms at {f['size']:,} chunks",
               f"{f['hybrid_p95']:.1f} ms (p50 {f['hybrid_p50']:.1f}{note})", whole and f["hybrid_p95"] <= limit)
        target("40", f"recall@10 >= {RECALL_TARGET} at {f['size']:,} chunks",
               f"{f['recall']:.3f} (min {f['recall_min']:.1f}, ef_search {f['ef_search']}{note})",
               whole and f["recall"] >= RECALL_TARGET)
    if SMOKE or QUICK:
        target("40", "search at scale runs", f"{len(figures)} sizes", bool(figures))
    return 0


if __name__ == "__main__":
    sys.exit(main())
