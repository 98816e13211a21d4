"""What the broker (Redis, REDIS_URL) holds about the work: messages waiting or unacknowledged, workers alive.

The reaper asks which tasks the broker still holds, `ingest` and `source sync` whether any worker is
alive, /healthz how strong each worker's pool is and when the scheduler last ticked. Workers and beat
write their heartbeats here too (config/celery.py), so that the keys have one home.
"""

from __future__ import annotations

import base64
import json
import time

import redis
from django.conf import settings

HEARTBEAT_KEY = "docent:workers"
# name -> "live/size": pool processes up and pool processes configured, written with each heartbeat.
POOL_KEY = "docent:workers:pools"
# Celery beat's name -> the time of its last tick (config.celery.HeartbeatScheduler).
SCHEDULER_KEY = "docent:scheduler"


def broker_client() -> redis.Redis:
    """A client on the broker's Redis (an embedded one is a unix socket)."""
    return redis.Redis.from_url(settings.REDIS_URL.replace("redis+socket://", "unix://"))


def worker_heartbeat(name: str, *, live: int, size: int) -> None:
    """A worker is alive now, with `live` of its `size` pool processes up."""
    client = broker_client()
    client.hset(POOL_KEY, name, f"{live}/{size}")
    client.zadd(HEARTBEAT_KEY, {name: time.time()})


def worker_heartbeat_end(name: str) -> None:
    """A worker stops: it is gone at once rather than when its heartbeat goes stale."""
    client = broker_client()
    client.zrem(HEARTBEAT_KEY, name)
    client.hdel(POOL_KEY, name)


def live_workers() -> list[str]:
    """Workers whose heartbeat is fresh; cheap enough for every /healthz call."""
    client = broker_client()
    cutoff = time.time() - 3 * settings.WORKER_HEARTBEAT_SECONDS
    client.zremrangebyscore(HEARTBEAT_KEY, "-inf", cutoff)
    return [name.decode() for name in client.zrangebyscore(HEARTBEAT_KEY, cutoff, "+inf")]


def worker_pools() -> dict[str, tuple[int, int]]:
    """(live pool processes, configured pool processes) of each worker with a fresh heartbeat."""
    names = live_workers()
    if not names:
        return {}
    strengths = broker_client().hmget(POOL_KEY, names)
    pools = {}
    for name, strength in zip(names, strengths):
        live, _, size = (strength or b"0/0").decode().partition("/")
        pools[name] = (int(live), int(size or 0))
    return pools


def scheduler_heartbeat(name: str) -> None:
    """Celery beat ticked now: it is alive and sends what is due (the reaper, source syncs)."""
    broker_client().zadd(SCHEDULER_KEY, {name: time.time()})


def scheduler_heartbeat_end(name: str) -> None:
    """Beat stops: gone at once rather than when its heartbeat goes stale."""
    broker_client().zrem(SCHEDULER_KEY, name)


def scheduler_last_tick() -> float | None:
    """Seconds since any scheduler last ticked (None: none ever did, or its mark is gone). Beat ticks at least
    every WORKER_HEARTBEAT_SECONDS; an older tick is a scheduler that died, killed or out of memory."""
    client = broker_client()
    client.zremrangebyscore(SCHEDULER_KEY, "-inf", time.time() - 24 * 3600)  # names of beats long gone
    newest = client.zrevrange(SCHEDULER_KEY, 0, 0, withscores=True)
    return max(0.0, time.time() - newest[0][1]) if newest else None


def _task_messages(task_name: str) -> list[tuple]:
    """The arguments of each `task_name` message Redis holds, one entry per message."""
    client = broker_client()
    queues = {route["queue"] for route in settings.CELERY_TASK_ROUTES.values()} | {settings.CELERY_TASK_DEFAULT_QUEUE}
    messages = [json.loads(raw) for queue in queues for key in client.scan_iter(match=f"{queue}*")
                if client.type(key) == b"list" for raw in client.lrange(key, 0, -1)]
    messages += [json.loads(raw)[0] for raw in client.hvals("unacked")]  # [message, exchange, routing key]
    found = []
    for message in messages:
        if message.get("headers", {}).get("task") != task_name:
            continue
        body = message["body"]
        if message.get("properties", {}).get("body_encoding") == "base64":
            body = base64.b64decode(body)
        found.append(tuple(json.loads(body)[0]))
    return found


def broker_task_args(task_name: str) -> set[tuple]:
    """The arguments of every `task_name` message Redis holds: waiting in a queue, or delivered
    and not yet acknowledged (running, or held for a retry's countdown). What is not here was lost."""
    return set(_task_messages(task_name))


def broker_task_count(task_name: str) -> int:
    """How many `task_name` messages Redis holds, a duplicate counted again: what a flood of presses queued."""
    return len(_task_messages(task_name))
