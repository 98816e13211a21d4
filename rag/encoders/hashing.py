"""Feature hashing of words: an encoder with no model, for tests and scripts."""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Sequence

from rag.encoders.model import EMBEDDING_DIM

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
