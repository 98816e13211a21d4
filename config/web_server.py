"""gunicorn's hooks (`--config python:config.web_server`): each web process builds its query encoder after the fork.

The master (--preload) imports the app and makes sure the ONNX export exists (config/wsgi.py);
the onnxruntime session itself is built in each process, because a session's thread pool does
not survive a fork, and with cores / processes intra-op threads, so that the processes do not
fight over the cores. It is built before the process takes its first request.
"""

from __future__ import annotations

from typing import Any


def post_worker_init(worker: Any) -> None:
    # import here: gunicorn reads this file before it loads the app; Django is set up only after that.
    from rag.embeddings import query_warm_up

    query_warm_up(processes=max(1, int(worker.cfg.workers)))
