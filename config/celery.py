"""The Celery app: `celery -A config worker` starts a worker, `celery -A config beat` the scheduler.

Loading the app starts nothing (config/__init__.py loads it with the settings); a worker or
beat process starts or finds the embedded services when it starts (`_services_start`).
"""

from __future__ import annotations

import gc
import logging
import logging.config
import os
import socket
import sys
import threading
import time

from celery import Celery
from celery.beat import PersistentScheduler
from celery.signals import beat_init, setup_logging, worker_init, worker_process_init, worker_ready, worker_shutdown

from config.configuration import first_start
from config.embedded import services_start

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

app = Celery("docent")
app.config_from_object("django.conf:settings", namespace="CELERY")
# How every task is carried, whatever the install (settings hold what one may tune): JSON only; acknowledged once it
# ran, so that a task whose worker died runs again; one message per pool process at a time; no event stream.
app.conf.update(
    accept_content=["json"], task_serializer="json", result_serializer="json", result_expires=3600,
    task_acks_late=True, task_reject_on_worker_lost=True, worker_prefetch_multiplier=1,
    broker_connection_retry_on_startup=True, worker_send_task_events=False,
    beat_scheduler="config.celery:HeartbeatScheduler",
)
app.autodiscover_tasks()

# The indexing tasks live in rag/jobs/tasks.py, not in an app's tasks.py: loaded, like those, when the app is.
app.autodiscover_tasks(["rag.jobs"])
app.autodiscover_tasks(["rag.sources"])  # rag.sources.tasks: syncing folder and Git sources

logger = logging.getLogger(__name__)


@setup_logging.connect
def _docent_logging(**kwargs) -> None:
    """Workers and beat keep Docent's log lines (text or JSON, with task ids): a receiver here stops Celery from
    configuring logging its own way."""
    from django.conf import settings

    logging.config.dictConfig(settings.LOGGING)

_stop_heartbeat = threading.Event()
# torch threads a pool process uses; the parent loads the model on one thread (see _preload_encoder).
_pool_process_threads: int | None = None


@worker_init.connect
@beat_init.connect
def _services_start(**kwargs) -> None:
    """Before the worker or beat talks to the broker or the database; connected first, so before the encoder preload."""
    first_start()
    services_start()


def _process_running(pid: int) -> bool:
    """True unless the process is gone or a zombie; reads /proc so that it never reaps the pool's children."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rpartition(")")[2].split()[0] != "Z"
    except FileNotFoundError:
        return False
    except OSError:  # no /proc (not Linux): trust the pool's own list
        return True


def pool_strength(pool) -> tuple[int, int]:
    """(pool processes up, pool processes wanted): a process counts once it has said UP to the parent."""
    size = int(getattr(pool, "limit", None) or 1)
    inner = getattr(pool, "_pool", None)
    processes = getattr(inner, "_pool", None)
    if processes is None:  # solo or thread pool: the worker process is the pool
        return size, size
    # The parent files a process's input queue under its fd when the process's UP message arrives.
    ready = dict(getattr(inner, "_fileno_to_inq", {}))
    live = sum(1 for process in list(processes)
               if ready.get(getattr(process, "inqW_fd", None)) is process and _process_running(process.pid))
    return live, size


def _heartbeat(name: str, pool) -> None:
    from django.conf import settings

    # import here: this module loads with the settings, before Django's apps; the worker is ready long after.
    from rag.jobs import worker_heartbeat

    while not _stop_heartbeat.is_set():
        try:
            live, size = pool_strength(pool)
            worker_heartbeat(name, live=live, size=size)
        except Exception:  # the broker may blink; the next beat retries
            pass
        _stop_heartbeat.wait(settings.WORKER_HEARTBEAT_SECONDS)


@worker_ready.connect
def _start_heartbeat(sender=None, **kwargs) -> None:
    name = getattr(sender, "hostname", None) or f"worker@{socket.gethostname()}:{os.getpid()}"
    pool = getattr(sender, "pool", None)
    threading.Thread(target=_heartbeat, args=(name, pool), daemon=True, name="docent-heartbeat").start()


@worker_shutdown.connect
def _end_heartbeat(sender=None, **kwargs) -> None:
    _stop_heartbeat.set()
    name = getattr(sender, "hostname", None)
    if name:
        # import here: this module loads with the settings, before Django's apps (see _heartbeat).
        from rag.jobs import worker_heartbeat_end

        try:
            worker_heartbeat_end(name)
        except Exception:
            pass


class HeartbeatScheduler(PersistentScheduler):
    """Celery beat's scheduler (its schedule kept in a file, as by default), marking each tick in the broker.

    Beat wakes at least every WORKER_HEARTBEAT_SECONDS, so /healthz can tell a scheduler that died
    (SIGKILL, the OOM killer) from one that waits for its next task: nothing else would say so.
    """

    def __init__(self, *args, **kwargs) -> None:
        from django.conf import settings

        super().__init__(*args, **kwargs)
        self.max_interval = min(self.max_interval, settings.WORKER_HEARTBEAT_SECONDS)
        self.heartbeat_name = f"beat@{socket.gethostname()}:{os.getpid()}"

    def tick(self, *args, **kwargs) -> float:
        interval = super().tick(*args, **kwargs)
        # import here: this module loads with the settings, before Django's apps (see _heartbeat).
        from rag.jobs import scheduler_heartbeat

        try:
            scheduler_heartbeat(self.heartbeat_name)
        except Exception:  # the broker may blink; the next tick marks again
            logger.warning("scheduler heartbeat not written", exc_info=True)
        return interval

    def close(self) -> None:
        # import here: as in tick.
        from rag.jobs import scheduler_heartbeat_end

        try:
            scheduler_heartbeat_end(self.heartbeat_name)
        except Exception:
            pass
        super().close()


@worker_init.connect
def _preload_encoder(**kwargs) -> None:
    """Load the encoder in the worker's parent, before the pool forks: the children share its pages.

    A replacement for a killed pool process is then up in a fraction of a second instead of a
    model load, and N processes hold one copy of the weights. The parent loads on one torch
    thread: a parent that has run an OpenMP thread pool cannot fork safely (GNU libgomp).
    """
    global _pool_process_threads
    from django.conf import settings

    # import here: this module loads with the settings, before Django's apps; the worker's signals come after.
    from rag.embeddings import warm_up

    if not settings.WORKER_PRELOAD_ENCODER:
        return
    started = time.perf_counter()
    try:
        torch = _torch_if_needed()
        if torch is not None:
            _pool_process_threads = torch.get_num_threads()
            torch.set_num_threads(1)
        warm_up()
    except Exception:  # each pool process tries again, and a task reports the error with its document
        logger.exception("encoder preload failed")
        return
    gc.freeze()  # the collector would otherwise touch, and so copy, every inherited object in each child
    logger.info("encoder preloaded in the worker's parent", extra={"seconds": round(time.perf_counter() - started, 2)})


def _torch_if_needed():
    from django.conf import settings

    if settings.EMBEDDING_ENCODER == "hashing":  # no model: nothing to thread
        return None
    import torch

    return torch


@worker_process_init.connect
def _fresh_connections(**kwargs) -> None:
    # A forked pool process must not share the parent's database socket.
    from django.db import connections

    for conn in connections.all(initialized_only=True):
        conn.close_if_unusable_or_obsolete()
    if _pool_process_threads is not None and "torch" in sys.modules:
        sys.modules["torch"].set_num_threads(_pool_process_threads)
    # Inherited from the parent when it preloaded; loaded here otherwise. Either way one encode
    # before the first task, so that the first document does not pay for it.
    # import here: this module loads with the settings, before Django's apps (see _preload_encoder).
    from rag.embeddings import warm_up

    try:
        warm_up()
    except Exception:  # a task will raise the same error with its document attached
        logger.exception("encoder warm-up failed")


@app.task(name="docent.ping")
def ping(payload: str = "ping") -> dict:
    """Round trip through broker and worker; used by tests and operators."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SELECT current_database()")
        database = cursor.fetchone()[0]
    return {"echo": payload, "pid": os.getpid(), "database": database}
