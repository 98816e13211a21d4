"""The Celery app: `celery -A config worker` starts a worker."""

from __future__ import annotations

import logging
import os
import socket
import threading

from celery import Celery
from celery.signals import worker_process_init, worker_ready, worker_shutdown

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

app = Celery("docent")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()

HEARTBEAT_KEY = "docent:workers"
_stop_heartbeat = threading.Event()


def _redis():
    import redis
    from django.conf import settings

    return redis.Redis.from_url(settings.REDIS_URL.replace("redis+socket://", "unix://"))


def live_workers() -> list[str]:
    """Workers whose heartbeat is fresh; cheap enough for every /healthz call."""
    import time

    from django.conf import settings

    client = _redis()
    cutoff = time.time() - 3 * settings.WORKER_HEARTBEAT_SECONDS
    client.zremrangebyscore(HEARTBEAT_KEY, "-inf", cutoff)
    return [name.decode() for name in client.zrangebyscore(HEARTBEAT_KEY, cutoff, "+inf")]


def _heartbeat(name: str) -> None:
    import time

    from django.conf import settings

    while not _stop_heartbeat.is_set():
        try:
            _redis().zadd(HEARTBEAT_KEY, {name: time.time()})
        except Exception:  # the broker may blink; the next beat retries
            pass
        _stop_heartbeat.wait(settings.WORKER_HEARTBEAT_SECONDS)


@worker_ready.connect
def _start_heartbeat(sender=None, **kwargs) -> None:
    name = getattr(sender, "hostname", None) or f"worker@{socket.gethostname()}:{os.getpid()}"
    threading.Thread(target=_heartbeat, args=(name,), daemon=True, name="docent-heartbeat").start()


@worker_shutdown.connect
def _end_heartbeat(sender=None, **kwargs) -> None:
    _stop_heartbeat.set()
    name = getattr(sender, "hostname", None)
    if name:
        try:
            _redis().zrem(HEARTBEAT_KEY, name)
        except Exception:
            pass


@worker_process_init.connect
def _fresh_connections(**kwargs) -> None:
    # A forked pool process must not share the parent's database socket.
    from django.db import connections

    for conn in connections.all(initialized_only=True):
        conn.close_if_unusable_or_obsolete()
    # Load the encoder now, once per pool process, rather than inside the first task.
    from rag.embeddings import warm_up

    try:
        warm_up()
    except Exception:  # a task will raise the same error with its document attached
        logging.getLogger(__name__).exception("encoder warm-up failed")


@app.task(name="docent.ping")
def ping(payload: str = "ping") -> dict:
    """Round trip through broker and worker; used by tests and operators."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SELECT current_database()")
        database = cursor.fetchone()[0]
    return {"echo": payload, "pid": os.getpid(), "database": database}
