"""What a chunk row costs to store, by index strategy: the choice behind the bulk indexing path.

    python benchmarks/bench_index_load.py [--base 20000] [--load 3000] [--rounds 2]

The table first holds --base chunks in another workspace (the index a new job
inserts into). Then --load chunks are stored the way the pipeline stores them
(one transaction per 10-chunk document: the document row, then its chunks), under
each strategy, into a fresh workspace that is deleted and vacuumed afterwards:

- hnsw live, multi-row INSERT: the pipeline's path (Chunk.objects.bulk_create);
- hnsw live, COPY: the same rows through psycopg 3's COPY;
- hnsw after: the HNSW index dropped for the load and built again after it (the
  time of the build is added), as a job adding most of a workspace would do;
- gin fastupdate off: the full-text GIN index updated row by row instead of
  through its pending list (PostgreSQL's default is on, 4 MB).

Texts are real prose (the demo corpus and the real Sphinx corpus when built,
cut into 170-word windows); vectors come from a SHAKE-256 digest of the text, as
in bench_ingest.py's bulk run: random-looking, the costly case for HNSW inserts.
Strategies alternate within each round, and the machine may be shared: compare
the ratios within a round. Runs on its own DATA_DIR (var/bench-index).
"""

from __future__ import annotations

import argparse
import hashlib
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
os.environ.setdefault("DATA_DIR", str(Path(__file__).resolve().parent.parent / "var" / "bench-index"))
from _setup import SMOKE, django_setup, target  # noqa: E402

PREFIX = "bench-index"
DOCUMENT_CHUNKS = 10


def real_windows(count: int, words: int = 170) -> list[str]:
    root = Path(__file__).resolve().parent.parent
    real = Path(os.environ.get("BENCH_REAL_CORPUS", root / "var" / "real-corpus" / "corpus"))  # run_all.py's
    files = sorted((root / "demo" / "corpus").rglob("*.*")) + sorted(real.glob("*"))
    texts: list[str] = []
    for path in files:
        if path.is_dir() or path.suffix == ".pdf":
            continue
        tokens = path.read_text(errors="ignore").split()
        texts += [" ".join(tokens[start:start + words]) for start in range(0, len(tokens), words // 2)]
    # Repeat with a counter so every text is distinct, as chunks of different documents mostly are.
    return [f"{texts[index % len(texts)]} ({index})" for index in range(count)]


def vectors_of(texts: list[str]) -> list[list[float]]:
    import numpy

    raw = numpy.frombuffer(b"".join(hashlib.shake_256(t.encode()).digest(384) for t in texts), numpy.uint8)
    vectors = raw.reshape(len(texts), 384).astype(numpy.float32) - 127.5
    return (vectors / numpy.linalg.norm(vectors, axis=1, keepdims=True)).tolist()


def store(workspace, texts: list[str], vectors: list[list[float]], *, copy: bool) -> None:
    from django.db import connection, transaction

    from rag.embeddings.cache import text_hash
    from django.utils import timezone

    from rag.models import Chunk, Document

    now = timezone.now()
    for start in range(0, len(texts), DOCUMENT_CHUNKS):
        part = range(start, min(len(texts), start + DOCUMENT_CHUNKS))
        with transaction.atomic():
            document = Document.objects.create(workspace=workspace, path=f"/bench/{start}.md", title="t",
                                               format="markdown", chunk_count=len(part))
            if not copy:
                Chunk.objects.bulk_create(
                    Chunk(workspace=workspace, document=document, text=texts[i], text_hash=text_hash(texts[i]),
                          heading_path="", chunk_index=i - start, total_chunks=len(part), chunk_position="middle",
                          embedding=vectors[i]) for i in part)
                continue
            columns = ("workspace_id", "document_id", "text", "text_hash", "heading_path", "chunk_index",
                       "total_chunks", "chunk_position", "embedding", "created_at")
            with connection.cursor() as cursor:
                with cursor.cursor.copy(f"COPY rag_chunk ({', '.join(columns)}) FROM STDIN") as feed:
                    for i in part:
                        feed.write_row((workspace.pk, document.pk, texts[i], text_hash(texts[i]), "", i - start,
                                        len(part), "middle", "[" + ",".join(map(str, vectors[i])) + "]", now))


def run(strategy: str, texts: list[str], vectors: list[list[float]]) -> tuple[float, float]:
    """(seconds storing, seconds building the index after) for one strategy."""
    from django.db import connection

    from rag.models import Workspace

    workspace = Workspace.objects.create(slug=f"{PREFIX}-{strategy.replace(' ', '-').replace(',', '')}",
                                         name=strategy)
    with connection.cursor() as cursor:
        if strategy == "hnsw after":
            cursor.execute("DROP INDEX chunk_embedding_hnsw")
        if strategy == "gin fastupdate off":
            cursor.execute("ALTER INDEX chunk_search_vector_gin SET (fastupdate = off)")
    started = time.perf_counter()
    try:
        store(workspace, texts, vectors, copy=strategy.endswith("COPY"))
        stored = time.perf_counter() - started
    finally:
        with connection.cursor() as cursor:
            built_at = time.perf_counter()
            cursor.execute("SET maintenance_work_mem = '512MB'")
            cursor.execute("CREATE INDEX IF NOT EXISTS chunk_embedding_hnsw ON rag_chunk "
                           "USING hnsw (embedding vector_cosine_ops) WITH (m = 16, ef_construction = 64)")
            cursor.execute("RESET maintenance_work_mem")
            built = time.perf_counter() - built_at
            cursor.execute("ALTER INDEX chunk_search_vector_gin RESET (fastupdate)")
    workspace.delete()
    with connection.cursor() as cursor:
        cursor.execute("VACUUM rag_chunk")
    return stored, built if strategy == "hnsw after" else 0.0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--base", type=int, default=200 if SMOKE else 20_000,
                        help="chunks already in the table (another workspace)")
    parser.add_argument("--load", type=int, default=50 if SMOKE else 3_000, help="chunks stored per strategy")
    parser.add_argument("--rounds", type=int, default=1 if SMOKE else 2)
    args = parser.parse_args()
    django_setup(encoder="hashing")
    from django.db import connection

    from rag.models import Chunk, Workspace

    Workspace.objects.filter(slug__startswith=f"{PREFIX}-").exclude(slug=f"{PREFIX}-base").delete()
    base, _ = Workspace.objects.get_or_create(slug=f"{PREFIX}-base", defaults={"name": "base"})
    have = Chunk.objects.filter(workspace=base).count()
    if have < args.base:
        texts = real_windows(args.base - have)
        print(f"filling the base workspace with {len(texts)} chunks...", flush=True)
        store(base, texts, vectors_of(texts), copy=True)
    with connection.cursor() as cursor:
        cursor.execute("VACUUM ANALYZE rag_chunk")
    texts = [f"load {text}" for text in real_windows(args.load)]
    vectors = vectors_of(texts)
    strategies = ["hnsw live, INSERT", "hnsw live, COPY", "hnsw after", "gin fastupdate off"]
    print(f"{Chunk.objects.count()} chunks in the table; storing {args.load} per strategy, "
          f"{DOCUMENT_CHUNKS} per document and transaction\n")
    print(f"{'round':>5}  {'strategy':<22}{'store s':>9}{'build s':>9}{'ms/chunk':>10}{'vs live INSERT':>16}  load")
    best: dict[str, float] = {}
    for round_number in range(1, args.rounds + 1):
        reference = None
        for strategy in strategies:
            stored, built = run(strategy, texts, vectors)
            total = stored + built
            best[strategy] = min(total, best.get(strategy, total))
            reference = reference or total
            print(f"{round_number:>5}  {strategy:<22}{stored:>9.1f}{built:>9.1f}{1000 * total / args.load:>10.2f}"
                  f"{reference / total:>15.2f}x  {os.getloadavg()[0]:.1f}", flush=True)
    print("\nbuild s: CREATE INDEX over the whole table after the load (the base included).")
    pipeline = strategies[0]
    target("", f"the pipeline's path ({pipeline}) stores chunks no slower than the other strategies (best of "
               f"{args.rounds})", ", ".join(f"{name} {1000 * seconds / args.load:.2f}" for name, seconds in best.items())
           + " ms/chunk", best[pipeline] <= min(best.values()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
