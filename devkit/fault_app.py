"""`celery -A devkit.fault_app worker`: the real app and tasks, with faults injected by file name.

Files named `transient*` raise a database error on every try (retried, then given up), `slow*`
outlast the soft time limit, `stuck*` ignore it as native code would (only the hard limit ends
them). Limits and retries are cut to seconds so that the fault tests stay short.
"""

from __future__ import annotations

import time
from pathlib import Path

from celery.exceptions import SoftTimeLimitExceeded
from celery.signals import worker_process_init

import django

from config.celery import app  # noqa: F401  (the app `celery -A` looks for: the real one)

django.setup()  # the tasks module imports rag's models: Django's apps first, as the worker's own start does

from rag.jobs.tasks import index_document  # noqa: E402

TIME_LIMITS = (2, 4)  # soft, hard; the test sending the tasks sets them too (they travel in the message)
index_document.soft_time_limit, index_document.time_limit = TIME_LIMITS
index_document.max_retries, index_document.retry_backoff, index_document.retry_jitter = 2, 1, False


def _inject_faults(**_signal) -> None:
    from django.db import OperationalError

    from rag.jobs import run

    real = run.document_index

    def document_index(*, path: str, **kwargs):
        name = Path(path).name
        if name.startswith("transient"):
            raise OperationalError("the database blinked (injected)")
        if name.startswith("slow"):
            time.sleep(60)
        if name.startswith("stuck"):
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline:
                try:
                    time.sleep(1)
                except SoftTimeLimitExceeded:
                    pass
        return real(path=path, **kwargs)

    run.document_index = document_index  # the name job_item_run calls


worker_process_init.connect(_inject_faults, weak=False)
