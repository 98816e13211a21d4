"""An index is asked with the model that made it: its documents record the model, and a search refuses another."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from rag import embeddings
from rag.embeddings import cache
from rag.jobs.run import job_item_run
from rag.models import Chunk, EmbeddingCache
from rag.retrieval import SearchOptions, search
from rag.uploads import indexing_job_create

OTHER_MODEL = embeddings.MINILM_NAME + "+onnx"


@pytest.fixture
def indexed(workspace, tmp_path):
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "gateway.md").write_text("# Gateway\n\nThe gateway listens on port 8443 and forwards to the pool.\n")
    job = indexing_job_create(workspace=workspace, paths=[folder], enqueue=False)
    for item_id in job.items.values_list("pk", flat=True):
        job_item_run(item_id=item_id)
    cache.index_checks_forget()
    yield workspace
    cache.index_checks_forget()


def test_the_index_names_the_model_that_made_its_vectors_not_the_ones_that_answered(indexed):
    indexing = embeddings.encoder_model(embeddings.get_encoder().name)
    assert embeddings.index_models(workspace_id=indexed.pk) == {indexing}
    # Answering encodes the same passages with the query encoder and caches them under its name.
    EmbeddingCache.objects.bulk_create([EmbeddingCache(model_name=OTHER_MODEL, text_hash=text_hash,
                                                       embedding=[0.0] * (embeddings.EMBEDDING_DIM - 1) + [1.0])
                                        for text_hash in Chunk.objects.filter(workspace=indexed)
                                        .values_list("text_hash", flat=True)])

    assert embeddings.index_models(workspace_id=indexed.pk) == {indexing}


def test_a_search_with_another_model_than_the_index_holds_is_refused(indexed, monkeypatch):
    options = SearchOptions(workspace=indexed)
    assert search("Which port does the gateway listen on?", options)  # the same model: answered

    cache.index_checks_forget()
    monkeypatch.setattr(cache, "get_query_encoder", lambda: SimpleNamespace(name=OTHER_MODEL))
    with pytest.raises(embeddings.IndexEncoderMismatch, match=f"asked with {embeddings.MINILM_NAME}"):
        search("Which port does the gateway listen on?", options)
