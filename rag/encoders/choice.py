"""Which encoder a process uses: EMBEDDING_ENCODER and QUERY_ENCODER read, each encoder built once.

Apart from the package's face (__init__.py) so that what builds on the encoders inside the package
(cache.py, the embedding caches) can reach the process's encoder without importing the face that
exports it.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Sequence
from typing import Protocol, runtime_checkable

from rag.encoders.hashing import HashingEncoder
from rag.encoders.onnx_runtime import OnnxEncoder, onnx_export_in_subprocess
from rag.encoders.sentence_transformer import DEFAULT_BATCH_SIZE, SentenceTransformerEncoder

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


def encoder_model(name: str) -> str:
    """The model behind an encoder's name: its runtimes and quantizations ("+onnx", "+int8") share its vectors."""
    return name.split("+")[0]


def query_encoder_choice() -> str:
    """QUERY_ENCODER if set, else the indexing encoder's torch-free twin."""
    choice = (_settings_value("QUERY_ENCODER", "") or "").strip().lower()
    return _checked(choice, "QUERY_ENCODER") if choice else QUERY_TWINS[_configured_encoder()[0]]


def encoder_build(choice: str | None = None, *, threads: int = 0) -> Encoder:
    """A new encoder of `choice` (else the configured indexing encoder) at the configured batch size,
    outside the process's shared one: for benchmarks timing the bare model. `threads` 0: the runtime's own."""
    configured, batch_size = _configured_encoder()
    return _ENCODER_FACTORIES[_checked(choice or configured, "encoder")](batch_size, threads)


def get_encoder() -> Encoder:
    """The process's indexing encoder, built on first use (a model load takes seconds)."""
    global _encoder
    if _encoder is None:
        with _encoder_lock:  # two threads asking at once must not load the model twice
            if _encoder is None:
                _encoder = encoder_build()
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
                _query_encoder = encoder_build(choice, threads=threads)
    return _query_encoder


def reset_encoder() -> None:
    """Forget the process's encoders; the next get_encoder() / get_query_encoder() reads the settings again."""
    global _encoder, _query_encoder
    with _encoder_lock:
        _encoder = None
        _query_encoder = None


def query_encoder_prepare() -> None:
    """Before a web server forks: export the ONNX model if this machine has none yet, in a child
    process (the export needs torch, which the web process itself never imports)."""
    choice = query_encoder_choice()
    if choice.startswith("onnx"):
        onnx_export_in_subprocess(quantized=choice == "onnx-int8")
