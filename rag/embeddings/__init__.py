"""Text embeddings, the face the app uses: the encoders (rag/encoders/, which has no Django need) and the
caches of encodings (cache.py: `embed_with_cache`, the table, the way indexing and answering encode passages;
`embed_with_process_cache`, rerank's sentences), with the warm-ups of both encoders.

Two encoders per process, each built on first use: `get_encoder()` encodes what goes into the index,
`get_query_encoder()` what a question needs; see rag/encoders/. Importing this face loads Django's models
(the cache's table): code that runs before Django is set up imports rag.encoders instead.
"""

from __future__ import annotations

import logging
import time

from rag.embeddings.cache import (
    IndexEncoderMismatch,
    embed_with_cache,
    embed_with_process_cache,
    index_checks_forget,
    index_encoder_check,
    index_models,
    text_hash,
)
from rag.encoders import (
    DEFAULT_ENCODER,
    EMBEDDING_DIM,
    ENCODER_ENV_VAR,
    MINILM_NAME,
    QUERY_TWINS,
    Encoder,
    HashingEncoder,
    OnnxEncoder,
    SentenceTransformerEncoder,
    encoder_build,
    encoder_model,
    get_encoder,
    get_query_encoder,
    minilm_max_tokens,
    minilm_path,
    query_encoder_choice,
    query_encoder_prepare,
    reset_encoder,
)

__all__ = ["DEFAULT_ENCODER", "EMBEDDING_DIM", "ENCODER_ENV_VAR", "MINILM_NAME", "QUERY_TWINS", "Encoder",
           "HashingEncoder", "IndexEncoderMismatch", "OnnxEncoder", "SentenceTransformerEncoder", "embed_with_cache",
           "embed_with_process_cache", "encode_query", "encoder_build", "encoder_model", "get_encoder",
           "get_query_encoder", "index_checks_forget", "index_encoder_check", "index_models", "minilm_max_tokens", "minilm_path", "query_encoder_choice",
           "query_encoder_prepare", "query_warm_up", "reset_encoder", "text_hash", "warm_up"]

logger = logging.getLogger(__name__)


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
