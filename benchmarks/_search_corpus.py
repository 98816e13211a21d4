"""Data for bench_search: real text, real embeddings, and a large corpus derived from them.

Real text: the docstrings of the Python standard library and of Django, Celery,
Kombu and transformers (all installed with Docent, so every machine has the
same text): English technical prose about APIs, configuration and errors,
like the documents Docent indexes. Docstrings of 20 words and more, cut at
sentence ends to at most 110 words, duplicates dropped, shuffled with a fixed
seed. The first REAL_CHUNKS go into the index, the next QUERIES give their
first sentence as a query (questions about text that is not in the index).

Real documentation text instead, when given folders (`corpus_texts`): the real and scale
evaluation corpora (Django, Celery, Flask, Sphinx documentation, .txt/.rst), split at blank
lines and packed into chunks of CHUNK_WORDS words as the indexer sizes them.

Real embeddings: all-MiniLM-L6-v2 encodes those texts once, through its ONNX export (the
same vectors as torch, several times faster); the vectors are cached in
var/bench/search-real-<hash>.npz and reused by every later run.

Scale: the real model cannot encode 100,000 distinct chunks here in useful
time, so the large corpus is derived from the real chunks. A derived chunk
joins the sentences of two or three real chunks, and its vector is the
normalized mixture of theirs (Dirichlet weights) plus a little noise: it sits
in the same region of embedding space as real text rather than on a random
sphere, and its text has the word statistics of real text, which the lexical
path needs. The 20% near-duplicates copy a chunk with one number changed and
a vector perturbed to cosine ~0.97, in another document with another date.
"""

from __future__ import annotations

import ast
import hashlib
import importlib.util
import json
import random
import re
import sys
import sysconfig
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from _setup import SMOKE

SEED = 20250611
MAX_WORDS = 110
MIN_WORDS = 20
SKIP_PARTS = {"test", "tests", "idlelib", "lib2to3", "site-packages", "turtledemo", "locale", "ensurepip",
              "pydoc_data", "dist-packages"}
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z])")
_NUMBER = re.compile(r"\b\d+\b")


def _roots() -> list[Path]:
    roots = [Path(sysconfig.get_paths()["stdlib"])]
    for package in ("django", "celery", "kombu", "transformers"):
        module = sys.modules.get(package)
        origin = getattr(module, "__file__", None) if module else None
        if origin is None:
            spec = importlib.util.find_spec(package)
            origin = spec.origin if spec else None
        if origin:
            roots.append(Path(origin).parent)
    return roots


def _docstrings(root: Path) -> list[str]:
    found = []
    for path in sorted(root.rglob("*.py")):
        if any(part in SKIP_PARTS for part in path.relative_to(root).parts):
            continue
        try:
            tree = ast.parse(path.read_text(encoding="utf-8"))
        except (SyntaxError, UnicodeDecodeError, ValueError):
            continue
        for node in ast.walk(tree):
            if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
                doc = ast.get_docstring(node)
                if doc:
                    lines = [line for line in doc.splitlines() if not line.strip().startswith((">>>", "..."))]
                    found.append(" ".join(" ".join(lines).split()))
    return found


def _cut(text: str) -> str:
    """At most MAX_WORDS words, ending at a sentence end when one is near."""
    words = text.split()
    if len(words) <= MAX_WORDS:
        return text
    kept: list[str] = []
    for sentence in _SENTENCE_END.split(text):
        if len(kept) + len(sentence.split()) > MAX_WORDS:
            break
        kept.extend(sentence.split())
    return " ".join(kept if len(kept) >= MIN_WORDS else words[:MAX_WORDS])


def real_texts(count: int, queries: int, cache_dir: Path) -> tuple[list[str], list[str]]:
    """(chunks for the index, queries about held-out chunks), deterministic; cached (parsing takes a minute)."""
    cache = cache_dir / f"search-texts-{SEED}-{count}-{queries}.json"
    if cache.exists():
        data = json.loads(cache.read_text())
        return data["chunks"], data["queries"]
    texts: list[str] = []
    for root in _roots():
        texts.extend(_cut(t) for t in _docstrings(root) if len(t.split()) >= MIN_WORDS)
    unique = sorted(set(texts))
    random.Random(SEED).shuffle(unique)
    if len(unique) < count + queries:
        raise SystemExit(f"only {len(unique)} real texts found; ask for fewer")
    chunks = unique[:count]
    asked = []
    for text in unique[count:]:
        first = _SENTENCE_END.split(text)[0]
        if 6 <= len(first.split()) <= 30:
            asked.append(first)
        if len(asked) == queries:
            break
    cache_dir.mkdir(parents=True, exist_ok=True)
    cache.write_text(json.dumps({"chunks": chunks, "queries": asked}))
    return chunks, asked


CHUNK_WORDS = 170  # config.settings.CHUNK_TARGET_WORDS


def corpus_texts(folders: list[Path], count: int, queries: int, cache_dir: Path) -> tuple[list[str], list[str]]:
    """(chunks for the index, queries about held-out chunks) from documentation files, deterministic, cached."""
    key = hashlib.sha256(("|".join(str(f) for f in folders) + f"{count}-{queries}").encode()).hexdigest()[:12]
    cache = cache_dir / f"search-corpus-texts-{key}.json"
    if cache.exists():
        data = json.loads(cache.read_text())
        return data["chunks"], data["queries"]
    chunks: set[str] = set()
    for folder in folders:
        for path in sorted(folder.rglob("*")):
            if path.suffix not in (".txt", ".rst", ".md") or not path.is_file():
                continue
            words: list[str] = []
            for paragraph in re.split(r"\n\s*\n", path.read_text(errors="replace")):
                words.extend(paragraph.split())
                if len(words) >= CHUNK_WORDS:
                    chunks.add(" ".join(words[:CHUNK_WORDS + 30]))
                    words = []
            if len(words) >= MIN_WORDS:
                chunks.add(" ".join(words))
    unique = sorted(chunks)
    random.Random(SEED).shuffle(unique)
    if len(unique) < count + queries:
        raise SystemExit(f"only {len(unique)} chunks in {folders}; ask for fewer")
    asked = []
    for text in unique[count:]:
        first = _SENTENCE_END.split(text)[0]
        if 6 <= len(first.split()) <= 30 and not first.startswith((".. ", "=", "-", "*")):
            asked.append(first)
        if len(asked) == queries:
            break
    cache_dir.mkdir(parents=True, exist_ok=True)
    cache.write_text(json.dumps({"chunks": unique[:count], "queries": asked}))
    return unique[:count], asked


def real_encoder(cache_dir: Path):  # noqa: ANN201 - an Encoder
    """all-MiniLM-L6-v2's ONNX export, as web processes run it; in a smoke run the hashing encoder stands in
    (no model to load or export: only that the benchmark runs through is checked there)."""
    from rag.encoders import HashingEncoder, OnnxEncoder

    return HashingEncoder() if SMOKE else OnnxEncoder(batch_size=32, cache_dir=cache_dir / "models")


def encoded(texts: list[str], cache_dir: Path) -> np.ndarray:
    """Real all-MiniLM-L6-v2 vectors for texts (its ONNX export), cached by their content."""
    digest = hashlib.sha256("\x00".join(texts).encode()).hexdigest()[:16]
    cache = cache_dir / f"search-{'smoke' if SMOKE else 'real'}-{digest}.npz"
    if cache.exists():
        return np.load(cache)["vectors"]
    encoder = real_encoder(cache_dir)
    vectors = np.zeros((len(texts), 384), dtype=np.float32)
    step = 256
    for start in range(0, len(texts), step):
        vectors[start : start + step] = np.asarray(encoder.encode(texts[start : start + step]), dtype=np.float32)
        print(f"  encoded {min(start + step, len(texts))}/{len(texts)} real texts", flush=True)
    cache_dir.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(cache, vectors=vectors)
    return vectors


@dataclass
class Corpus:
    texts: list[str]
    vectors: np.ndarray  # unit rows
    original: list[int]  # -1, or the row this one is a near-duplicate of
    real: int  # how many rows (the first ones) are real chunks with real embeddings


def _unit(vectors: np.ndarray) -> np.ndarray:
    return (vectors / np.linalg.norm(vectors, axis=1, keepdims=True)).astype(np.float32)


def build_corpus(size: int, real_chunks: list[str], real_vectors: np.ndarray, *, duplicate_share: float = 0.2,
                 seed: int = SEED) -> Corpus:
    rng = np.random.default_rng(seed)
    duplicates = int(size * duplicate_share)
    distinct = size - duplicates
    real = min(len(real_chunks), distinct)
    texts = list(real_chunks[:real])
    vectors = [real_vectors[:real]]

    derived = distinct - real
    if derived:
        sentences = [_SENTENCE_END.split(text) for text in real_chunks]
        sources = rng.integers(0, len(real_chunks), size=(derived, 3))
        weights = rng.dirichlet([1.0, 1.0, 0.5], size=derived).astype(np.float32)
        mixed = np.einsum("nk,nkd->nd", weights, real_vectors[sources]) + rng.normal(0, 0.01, (derived, 384))
        vectors.append(_unit(mixed))
        for row, (a, b, c) in enumerate(sources):
            parts = sentences[a][:2] + sentences[b][:2] + (sentences[c][:1] if weights[row, 2] > 0.2 else [])
            texts.append(" ".join(" ".join(parts).split()[:MAX_WORDS]))

    picks = rng.integers(0, distinct, size=duplicates)
    base = np.concatenate(vectors)
    noise = rng.normal(0, 0.0128, (duplicates, 384))  # cosine ~0.97 to the original
    vectors.append(_unit(base[picks] + noise))
    for pick in picks:
        text = texts[pick]
        changed = _NUMBER.sub(lambda m: str(int(m.group()) + 1), text, count=1)
        texts.append(changed if changed != text else text + " Revised.")
    return Corpus(texts, np.concatenate(vectors), [-1] * distinct + picks.tolist(), real)
