"""The ONNX encoders: exported once from the packaged weights, offline, and agreeing with torch."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest
from django.conf import settings

from rag import embeddings
from rag.embeddings import Encoder, SentenceTransformerEncoder
from rag.encoders.onnx_runtime import OnnxEncoder, onnx_model_path
from tests.rag.test_embeddings import (
    CREDENTIALS_PASSAGE,
    KUBERNETES_PASSAGE,
    QUESTION,
    SCRAMBLED,
    _refuse_network,
    assert_unit_length,
    cosine,
    minilm,  # noqa: F401 - the module-scoped torch encoder fixture
)

pytestmark = pytest.mark.real_encoder
TEXTS = [QUESTION, CREDENTIALS_PASSAGE, KUBERNETES_PASSAGE, *SCRAMBLED, ""]


def _cache_dir() -> Path:
    # Kept across test runs (the test DATA_DIR): the export takes seconds and is the same every time.
    return Path(settings.DATA_DIR) / "models"


@pytest.fixture(scope="module")
def onnx_fp32() -> OnnxEncoder:
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(socket.socket, "connect", _refuse_network)
        patch.setattr(socket, "getaddrinfo", _refuse_network)
        return OnnxEncoder(batch_size=4, cache_dir=_cache_dir())


def test_onnx_vectors_agree_with_torch(onnx_fp32: OnnxEncoder, minilm: SentenceTransformerEncoder) -> None:  # noqa: F811
    vectors = onnx_fp32.encode(TEXTS)

    assert isinstance(onnx_fp32, Encoder)
    assert (onnx_fp32.name, onnx_fp32.dim) == ("all-MiniLM-L6-v2+onnx", 384)
    assert_unit_length(vectors)
    for text, onnx_vector, torch_vector in zip(TEXTS, vectors, minilm.encode(TEXTS)):
        assert cosine(onnx_vector, torch_vector) >= 0.99, text
    assert onnx_fp32.encode([]) == []


def test_onnx_keeps_input_order_across_batches(onnx_fp32: OnnxEncoder) -> None:
    together = onnx_fp32.encode(SCRAMBLED)  # batch size 4: several batches, sorted by length

    for text, vector in zip(SCRAMBLED, together):
        assert cosine(vector, onnx_fp32.encode([text])[0]) > 0.999, text


def test_onnx_int8_stays_close_and_both_exports_are_cached(minilm: SentenceTransformerEncoder) -> None:  # noqa: F811
    int8 = OnnxEncoder(batch_size=8, quantized=True, cache_dir=_cache_dir())
    exported = onnx_model_path(quantized=True, cache_dir=_cache_dir())

    assert int8.name == "all-MiniLM-L6-v2+onnx-int8"
    assert exported.exists() and onnx_model_path(quantized=False, cache_dir=_cache_dir()).exists()
    assert exported.stat().st_size < onnx_model_path(quantized=False, cache_dir=_cache_dir()).stat().st_size / 2
    for text, quantized, reference in zip(TEXTS, int8.encode(TEXTS), minilm.encode(TEXTS)):
        assert cosine(quantized, reference) >= 0.97, text


def test_onnx_is_chosen_by_the_setting(settings) -> None:
    embeddings.reset_encoder()
    settings.EMBEDDING_ENCODER = "onnx"
    try:
        assert embeddings.get_encoder().name == "all-MiniLM-L6-v2+onnx"
    finally:
        embeddings.reset_encoder()
