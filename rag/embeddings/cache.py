"""The embedding cache: passages are encoded once per model, whoever asks (indexing, extractive answers)."""

from __future__ import annotations

import hashlib

from rag.embeddings import Encoder, get_encoder
from rag.models import EmbeddingCache


def text_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


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
