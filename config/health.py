"""`/healthz`: the state of every service Docent needs (database, pgvector, Redis, workers, the scheduler),
for load balancers and people.

Anyone reads ok or not per part; versions, worker counts and what failed are for staff sessions and the
monitoring token (METRICS_TOKEN): they tell a stranger what to attack (issue 49).
"""

from __future__ import annotations

import logging

from django.contrib.auth.decorators import login_not_required
from django.db import connection
from django.http import HttpRequest, JsonResponse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET

from django.conf import settings

from rag.jobs import broker_client, scheduler_last_tick, worker_pools
from rag.metrics import metrics_token_ok

logger = logging.getLogger(__name__)


def _check_database() -> dict:
    with connection.cursor() as cursor:
        cursor.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'")
        row = cursor.fetchone()
    return {"database": {"ok": True}, "pgvector": {"ok": row is not None, "version": row[0] if row else None}}


def _check_redis() -> dict:
    return {"redis": {"ok": bool(broker_client().ping())}}


def _check_workers() -> dict:
    """Ok when some worker is alive and none runs fewer pool processes than configured."""
    pools = worker_pools()
    degraded = sorted(name for name, (live, size) in pools.items() if live < size)
    return {"workers": {
        "ok": bool(pools) and not degraded, "count": len(pools),
        "processes": sum(live for live, _ in pools.values()), "configured": sum(size for _, size in pools.values()),
        "degraded": degraded,
    }}


def _check_scheduler() -> dict:
    """Ok while Celery beat ticked within three heartbeats: a beat that died sends no reaper, no source sync."""
    age = scheduler_last_tick()
    return {"scheduler": {"ok": age is not None and age <= 3 * settings.WORKER_HEARTBEAT_SECONDS,
                          "last_tick_seconds_ago": None if age is None else round(age, 1)}}


@login_not_required
@never_cache
@require_GET
def healthz(request: HttpRequest) -> JsonResponse:
    # What failed is for staff and the logs: an exception's text names hosts, paths and users.
    detailed = (request.user.is_authenticated and request.user.is_staff) or metrics_token_ok(request)
    checks: dict = {}
    for name, check in (("database", _check_database), ("redis", _check_redis), ("workers", _check_workers),
                        ("scheduler", _check_scheduler)):
        try:
            checks.update(check())
        except Exception as exc:  # a down service is a status to report, not a 500
            logger.warning("healthz: %s check failed", name, exc_info=True)
            checks[name] = {"ok": False, "error": f"{type(exc).__name__}: {exc}"[:300]}
            if name == "database":
                checks["pgvector"] = {"ok": False, "error": "database unreachable"}
            if name == "redis":
                checks["workers"] = {"ok": False, "error": "redis unreachable"}
                checks["scheduler"] = {"ok": False, "error": "redis unreachable"}
    healthy = all(item.get("ok") for item in checks.values())
    if not detailed:
        checks = {name: {"ok": bool(item.get("ok"))} for name, item in checks.items()}
    return JsonResponse({"status": "ok" if healthy else "down", "checks": checks}, status=200 if healthy else 503)
