"""Rerank's "vectors" evidence: sentence vectors through rag.embeddings' process cache."""

from __future__ import annotations

from rag import embeddings
from rag.retrieval.rerank import best_sentence_similarities


def test_vector_evidence_finds_the_closest_sentence_and_encodes_it_once_per_process():
    encoder = embeddings.get_query_encoder()
    query = encoder.encode(["rotate the api key"])[0]
    texts = ["Rotate the API key every ninety days. The dashboard shows when it was last done.",
             "Backups run nightly and are kept for thirty days."]

    before = encoder.texts_encoded
    best = best_sentence_similarities(query, texts)
    encoded = encoder.texts_encoded - before
    again = best_sentence_similarities(query, texts)

    assert best == again and best[0] > best[1]
    assert encoder.texts_encoded - before == encoded  # the second time every sentence came from the cache
