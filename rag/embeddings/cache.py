"""Caching encodings, the one place that does: a text is encoded once per encoder wherever it can be kept.

Two tiers, for two kinds of text:

- `embed_with_cache`: the EmbeddingCache table, for passages (indexing, extractive answers): kept
  across processes and restarts, one row per text and encoder.
- `embed_with_process_cache`: a bounded LRU in this process, for the sentences rerank compares with
  a question (RERANK_EVIDENCE "vectors"): they come and go with each search's head, so a table row
  each would cost a round trip per search and grow the table with sentences seen once.
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from collections.abc import Sequence

import numpy as np

from rag.embeddings.choice import Encoder, get_encoder
from rag.models import Chunk, EmbeddingCache

PROCESS_CACHE_SIZE = 20000  # sentence vectors kept per process (float32, 384 dims: ~30 MB)

_process_cache: OrderedDict[tuple[str, str], np.ndarray] = OrderedDict()
_process_cache_lock = threading.Lock()


def text_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def encoder_model(name: str) -> str:
    """The model behind an encoder's name: its runtimes and quantizations ("+onnx", "+int8") share its vectors."""
    return name.split("+")[0]


def index_models(*, workspace_id: int) -> set[str]:
    """The models whose encodings of the workspace's chunk texts are kept: what its index was made with.
    Two 384-dimension models mix without an error and compare meaningless vectors, so a caller that
    asks with one model checks that its index holds that model's vectors."""
    hashes = Chunk.objects.filter(workspace_id=workspace_id).values("text_hash")
    names = EmbeddingCache.objects.filter(text_hash__in=hashes).values_list("model_name", flat=True).distinct()
    return {encoder_model(name) for name in names}


def embed_with_cache(texts: list[str], *, encoder: Encoder | None = None) -> tuple[list[list[float]], int]:
    """Embeddings for texts, encoding only those never seen by this encoder; returns (vectors, encoded).

    Keyed by the encoder's name as well as the text: the indexing encoder (the default) and the
    query encoder (answers pass get_query_encoder()) may differ, and their vectors never mix.
    """
    encoder = encoder or get_encoder()
    hashes = [text_hash(text) for text in texts]
    cached = {
        row.text_hash: row.embedding
        for row in EmbeddingCache.objects.filter(model_name=encoder.name, text_hash__in=set(hashes))
    }
    missing: dict[str, str] = {}
    for digest, text in zip(hashes, texts):
        if digest not in cached:
            missing.setdefault(digest, text)
    if missing:
        vectors = encoder.encode(list(missing.values()))
        fresh = dict(zip(missing.keys(), vectors))
        EmbeddingCache.objects.bulk_create(
            [EmbeddingCache(model_name=encoder.name, text_hash=d, embedding=v) for d, v in fresh.items()],
            ignore_conflicts=True,  # another worker may have cached the same text meanwhile
        )
        cached.update(fresh)
    return [list(cached[digest]) for digest in hashes], len(missing)


def embed_with_process_cache(texts: Sequence[str], *, encoder: Encoder) -> np.ndarray:
    """The texts' vectors as float32 rows, encoding only those this process has not kept lately."""
    keys = [(encoder.name, text_hash(text)) for text in texts]
    vectors: dict[int, np.ndarray] = {}
    with _process_cache_lock:  # web threads share the cache
        for index, key in enumerate(keys):
            if key in _process_cache:
                _process_cache.move_to_end(key)
                vectors[index] = _process_cache[key]
    missing = [index for index in range(len(texts)) if index not in vectors]
    if missing:
        encoded = encoder.encode([texts[index] for index in missing])
        with _process_cache_lock:
            for index, vector in zip(missing, encoded):
                array = np.asarray(vector, dtype=np.float32)
                vectors[index] = array
                _process_cache[keys[index]] = array
            while len(_process_cache) > PROCESS_CACHE_SIZE:
                _process_cache.popitem(last=False)
    return np.stack([vectors[index] for index in range(len(texts))]) if texts else np.zeros((0, 1))
