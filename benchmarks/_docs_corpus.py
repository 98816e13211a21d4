"""Real documentation for the 100k-chunk search benchmark (issue 40): more projects' docs from their PyPI sdists.

    python benchmarks/_docs_corpus.py [--out var/bench/docs-corpus]

The scale corpus (Django, Celery, Flask) and the Sphinx corpus give about 40,000 distinct chunks; these sdists
ship their documentation sources too (reStructuredText, Markdown, plain text), so together they pass 100,000
distinct chunks of real text with no synthetic sentence. Each release's documentation tree is written under
OUT/<project>-<release>/ (only what changed is rewritten); sdists are kept in OUT/../sdists and reused.
Releases of one project are near-duplicates of one another, as a real pile's versions are.
"""

from __future__ import annotations

import argparse
import hashlib
import re
import sys
import urllib.request
import tarfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

SIMPLE_INDEX = "https://pypi.org/simple"

# (project, release): each ships a doc/ or docs/ tree in its sdist.
SDISTS = [
    ("sqlalchemy", "1.4.54"), ("sqlalchemy", "2.0.36"),
    ("sphinx", "4.5.0"), ("sphinx", "7.2.6"),
    ("django", "3.1.14"), ("django", "4.1.13"), ("django", "5.0.9"),
    ("celery", "4.4.7"), ("kombu", "5.4.2"),
    ("pytest", "8.3.3"), ("alembic", "1.13.3"), ("mypy", "1.13.0"),
    ("twisted", "24.10.0"), ("cryptography", "43.0.3"), ("scrapy", "2.11.2"),
    ("werkzeug", "3.1.3"), ("jinja2", "3.1.4"), ("click", "8.1.7"),
    ("setuptools", "75.6.0"), ("pip", "24.3.1"),
    ("numpy", "2.1.3"), ("numpy", "1.26.4"), ("scipy", "1.14.1"), ("sympy", "1.13.3"),
    ("matplotlib", "3.9.2"), ("astropy", "6.1.4"), ("networkx", "3.4.2"), ("ipython", "8.29.0"),
    ("salt", "3007.1"), ("nova", "30.0.0"), ("django", "2.0.13"), ("django", "1.11.29"),
    ("sqlalchemy", "1.3.24"), ("sqlalchemy", "1.2.19"), ("django", "1.8.19"), ("sphinx", "3.5.4"),
    ("scikit-learn", "1.5.2"), ("pylint", "3.3.1"), ("statsmodels", "0.14.4"), ("cython", "3.0.11"),
    ("xarray", "2024.10.0"), ("dask", "2024.11.2"), ("pillow", "11.0.0"), ("tornado", "6.4.1"),
    ("docutils", "0.21.2"), ("pygments", "2.18.0"), ("neutron", "25.0.0"), ("cinder", "25.0.0"),
    ("keystone", "26.0.0"), ("swift", "2.34.0"), ("ironic", "26.1.0"), ("openstack-heat", "23.0.0"),
    ("numba", "0.60.0"), ("gunicorn", "23.0.0"), ("babel", "2.16.0"), ("pyramid", "2.0.2"), ("salt", "3006.9"),
    ("scipy", "1.10.1"), ("matplotlib", "3.5.3"), ("astropy", "5.3.4"), ("sympy", "1.9"),
    ("salt", "3005.5"), ("sqlalchemy", "1.1.18"), ("django", "1.6.11"), ("pytest", "6.2.5"), ("ipython", "7.34.0"),
    ("nova", "27.0.0"), ("twisted", "22.10.0"), ("networkx", "2.8.8"), ("scrapy", "2.6.3"),
    ("lxml", "5.3.0"), ("coverage", "7.6.8"), ("pygame", "2.6.1"), ("kivy", "2.3.0"),
    ("trytond", "7.4.0"), ("pyinstaller", "6.11.1"), ("boto", "2.49.0"), ("django", "1.4.22"),
    ("salt", "2019.2.8"), ("sqlalchemy", "0.9.10"), ("sphinx", "1.8.6"),
    ("jupyter-server", "2.14.2"), ("nbconvert", "7.16.4"), ("pyopenssl", "24.2.1"), ("psycopg2", "2.9.10"),
    ("marshmallow", "3.23.1"), ("attrs", "24.2.0"), ("zodb", "6.0"),
    ("salt", "2018.3.5"), ("nova", "20.0.0"), ("neutron", "20.0.0"), ("cinder", "20.0.0"), ("astropy", "4.3.1"),
    ("matplotlib", "3.2.2"), ("sympy", "1.5"), ("scipy", "1.5.4"), ("pytest", "5.4.3"), ("sqlalchemy", "0.8.7"),
    ("sphinx", "1.5.6"), ("keystone", "20.0.0"), ("mako", "1.3.6"), ("alembic", "1.4.3"), ("pillow", "8.4.0"),
    ("tornado", "5.1.1"), ("celery", "4.0.2"), ("kombu", "4.6.11"), ("cython", "0.29.37"), ("numba", "0.50.1"),
    ("statsmodels", "0.12.2"), ("ipython", "5.10.0"), ("networkx", "2.4"), ("scrapy", "1.8.4"),
    ("salt", "2017.7.8"), ("django", "1.7.11"), ("sqlalchemy", "1.0.19"), ("matplotlib", "2.2.5"), ("sympy", "1.1.1"),
]
DOC_FOLDERS = ("doc/", "docs/", "Doc/")
SUFFIXES = (".rst", ".txt", ".md")


def docs_extract(sdist: Path, out: Path) -> int:
    """The sdist's documentation files under `out`; returns how many."""
    count = 0
    with tarfile.open(sdist) as tar:
        for member in tar.getmembers():
            path = member.name.split("/", 1)[1] if "/" in member.name else ""
            if not member.isfile() or not path.startswith(DOC_FOLDERS) or not path.endswith(SUFFIXES):
                continue
            if "requirements" in Path(path).name:
                continue
            data = tar.extractfile(member).read()
            target = out / path
            if not target.exists() or target.read_bytes() != data:
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(data)
            count += 1
    return count


def sdist_download(*, project: str, release: str, cache: Path) -> Path:
    """The release's sdist from PyPI's simple index, checked against its sha256; no build step, so a project
    whose metadata needs a compiler downloads as well as any other."""
    cache.mkdir(parents=True, exist_ok=True)
    wanted = f"{project}-{release}.tar.gz".replace("-", "_")
    found = [path for path in cache.glob("*.tar.gz") if path.name.lower().replace("-", "_") == wanted]
    if found:
        return found[0]
    with urllib.request.urlopen(f"{SIMPLE_INDEX}/{project}/", timeout=60) as response:
        page = response.read().decode()
    name = re.escape(project).replace(r"\-", "[-_.]") + "-" + re.escape(f"{release}.tar.gz")
    link = re.search(rf'href="([^"]*/({name}))#sha256=([0-9a-f]+)"', page, re.IGNORECASE)
    if link is None:
        raise FileNotFoundError(f"no sdist {project}-{release}.tar.gz on {SIMPLE_INDEX}")
    with urllib.request.urlopen(link.group(1), timeout=300) as response:
        data = response.read()
    if hashlib.sha256(data).hexdigest() != link.group(3):
        raise ValueError(f"{link.group(2)}: sha256 differs from the index's")
    target = cache / link.group(2)
    target.write_bytes(data)
    return target


def build(out: Path) -> list[Path]:
    """Every release's folder under `out`, downloaded and extracted once."""
    cache = out.parent / "sdists"

    def one(entry: tuple[str, str]) -> Path | None:
        project, release = entry
        folder = out / f"{project}-{release}"
        if not (folder / ".done").exists():
            try:
                sdist = sdist_download(project=project, release=release, cache=cache)
            except Exception as exc:  # one missing release is fewer chunks, not a failed benchmark
                print(f"  {project} {release}: skipped ({exc})", flush=True)
                return None
            files = docs_extract(sdist, folder)
            folder.mkdir(parents=True, exist_ok=True)
            (folder / ".done").write_text(f"{files}\n")
            print(f"  {project} {release}: {files} documentation files", flush=True)
        return folder

    with ThreadPoolExecutor(4) as pool:
        return [folder for folder in pool.map(one, SDISTS) if folder is not None]


SEED = 20261128
QUERY_WORDS = (6, 30)  # a query is a held-out chunk's first sentence of this many words
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z])")


def real_chunks(folders: list[Path], cache: Path) -> dict:
    """Every distinct chunk of the folders' documentation files, cut by Docent's own parser and chunker at
    the settings `make run` uses, in a fixed shuffled order: {"chunks": [[text, heading, file], ...],
    "queries": [...]} where the queries are first sentences of chunks past MAX_INDEXED (never indexed).
    Cached in `cache` (parsing 8,000 files takes minutes)."""
    import json
    import random

    if cache.exists():
        return json.loads(cache.read_text())
    from config import settings  # the chunk sizes `make run` indexes with, whether or not Django is set up
    from rag.chunking import chunk_document
    from rag.parsers import parse_document

    seen: set[str] = set()
    chunks: list[list[str]] = []
    for folder in folders:
        for path in sorted(folder.rglob("*")):
            if path.suffix not in SUFFIXES or not path.is_file():
                continue
            try:
                parsed = parse_document(path, path.read_bytes())
            except Exception:  # noqa: BLE001 - a file Docent would fail is a file the index would not hold
                continue
            for draft in chunk_document(parsed, target_words=settings.CHUNK_TARGET_WORDS,
                                        max_words=settings.CHUNK_MAX_WORDS,
                                        overlap_words=settings.CHUNK_OVERLAP_WORDS):
                if len(draft.text.split()) >= 20 and draft.text not in seen:
                    seen.add(draft.text)
                    chunks.append([draft.text, draft.heading_path, f"{folder.parent.name}/{path.relative_to(folder.parent)}"])
    random.Random(SEED).shuffle(chunks)
    queries = []
    for text, _heading, _file in chunks[MAX_INDEXED:]:
        first = _SENTENCE_END.split(text)[0]
        if QUERY_WORDS[0] <= len(first.split()) <= QUERY_WORDS[1] and not first.startswith((".. ", "=", "-", "*")):
            queries.append(first)
    data = {"chunks": chunks[:MAX_INDEXED], "queries": queries[:QUERIES]}
    cache.parent.mkdir(parents=True, exist_ok=True)
    cache.write_text(json.dumps(data))
    return data


MAX_INDEXED = 100_000
QUERIES = 300
SHARD = 2000  # rows per cached file of vectors: an interrupted encoding resumes at the last whole shard


def encoded_rows(texts: list[str], folder: Path, *, upto: int, seconds: float | None = None) -> int:
    """Encode texts[:upto] with all-MiniLM-L6-v2 (its ONNX export, as the web processes run it) into
    shards under `folder`, resuming where an earlier run stopped; stops early after `seconds`. Returns how
    many leading rows are encoded."""
    import time

    import numpy as np

    folder.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    encoder = None
    for start in range(0, upto, SHARD):
        shard = folder / f"rows-{start:07d}.npy"
        if shard.exists():
            continue
        if seconds is not None and time.monotonic() - started > seconds:
            return start
        if encoder is None:
            from rag.encoders import OnnxEncoder

            encoder = OnnxEncoder(batch_size=32, cache_dir=folder.parent / "models")
        vectors = np.asarray(encoder.encode(texts[start:start + SHARD]), dtype=np.float32)
        np.save(folder / "partial.npy", vectors)
        (folder / "partial.npy").rename(shard)
        print(f"  encoded {min(start + SHARD, upto):,}/{upto:,} rows "
              f"({time.monotonic() - started:.0f}s this run)", flush=True)
    return upto


def encoded_queries(queries: list[str], folder: Path, encoder_factory):  # noqa: ANN001, ANN201 - an ndarray
    """The queries' vectors, cached under `folder` by the queries' content: a corpus rebuilt with other held-out
    queries (or none) is encoded again, never read from an older run's file."""
    import numpy as np

    digest = hashlib.sha256("\x00".join(queries).encode()).hexdigest()[:16]
    cache = folder / f"queries-{digest}.npy"
    if not cache.exists():
        folder.mkdir(parents=True, exist_ok=True)
        np.save(folder / "queries-partial.npy", np.asarray(encoder_factory().encode(queries), dtype=np.float32))
        (folder / "queries-partial.npy").rename(cache)
    return np.load(cache)


def encoded_vectors(folder: Path, rows: int):  # noqa: ANN201 - an ndarray
    import numpy as np

    return np.concatenate([np.load(folder / f"rows-{start:07d}.npy") for start in range(0, rows, SHARD)])[:rows]


def corpus_folders(out: Path) -> list[Path]:
    """The evaluation corpora (when built: `make eval-scale`, `make eval-real`) and every release under `out`."""
    evaluation = [ROOT / "var" / "scale-corpus" / "corpus", ROOT / "var" / "real-corpus" / "corpus"]
    return [folder for folder in evaluation if folder.is_dir()] + build(out)


def main() -> int:
    import time


    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=ROOT / "var" / "bench" / "docs-corpus")
    parser.add_argument("--encode", type=int, default=0, help="encode this many leading chunks (resumable)")
    parser.add_argument("--seconds", type=float, help="stop encoding after this long")
    args = parser.parse_args()
    data = real_chunks(corpus_folders(args.out), args.out.parent / "docs-chunks.json")
    print(f"{len(data['chunks']):,} distinct chunks, {len(data['queries'])} held-out queries", flush=True)
    if args.encode:
        from rag.encoders import OnnxEncoder

        vectors = args.out.parent / "docs-vectors"
        encoded_queries(data["queries"], vectors, lambda: OnnxEncoder(batch_size=32, cache_dir=args.out.parent / "models"))
        started = time.monotonic()
        done = encoded_rows([row[0] for row in data["chunks"]], vectors, upto=args.encode, seconds=args.seconds)
        print(f"{done:,} rows encoded ({time.monotonic() - started:.0f}s this run)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
