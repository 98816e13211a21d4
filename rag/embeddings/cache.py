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
import time
from collections import OrderedDict
from collections.abc import Sequence

import numpy as np

from django.core.exceptions import ImproperlyConfigured

from rag.encoders import Encoder, encoder_model, get_encoder, get_query_encoder
from rag.models import Document, EmbeddingCache

PROCESS_CACHE_SIZE = 20000  # sentence vectors kept per process (float32, 384 dims: ~30 MB)

_process_cache: OrderedDict[tuple[str, str], np.ndarray] = OrderedDict()
_process_cache_lock = threading.Lock()


def text_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


INDEX_CHECK_SECONDS = 60.0  # how long a workspace's index, once found to match the query encoder, is not read again

_index_checked: dict[tuple[int, str], float] = {}


class IndexEncoderMismatch(ImproperlyConfigured):
    """A workspace's chunks hold one model's vectors and questions would be encoded with another's."""


def index_models(*, workspace_id: int) -> set[str]:
    """The models that made the vectors of the workspace's chunks, as each document recorded when it was
    indexed (documents indexed before the record say nothing). Not the embedding cache: answering caches
    the same passages under the query encoder's name, which made none of the index."""
    names = (Document.objects.filter(workspace_id=workspace_id, chunk_count__gt=0).exclude(embedding_model="")
             .values_list("embedding_model", flat=True).distinct())
    return set(names)


def index_encoder_check(*, workspace_id: int) -> None:
    """Refuse to search a workspace whose index another model made than the one questions are encoded with:
    two 384-dimension models mix without an error and compare meaningless vectors. Read once a minute per
    workspace and process (a distinct over the workspace's documents), then kept."""
    asking = encoder_model(get_query_encoder().name)
    key = (workspace_id, asking)
    if time.monotonic() - _index_checked.get(key, -INDEX_CHECK_SECONDS) < INDEX_CHECK_SECONDS:
        return
    indexed = index_models(workspace_id=workspace_id)
    if indexed - {asking}:
        raise IndexEncoderMismatch(
            f"workspace {workspace_id}'s index holds vectors of {', '.join(sorted(indexed))}, but questions are "
            f"asked with {asking}: re-index it with that model (EMBEDDING_ENCODER), or set QUERY_ENCODER to the "
            f"index's model")
    _index_checked[key] = time.monotonic()


def index_checks_forget() -> None:
    """Read every workspace's index again at its next search (tests, after re-indexing with another model)."""
    _index_checked.clear()


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
