"""`make run`: one command that brings up a whole Docent instance on this machine.

Starts (or finds) the embedded services, migrates, makes sure an admin account
and the demo workspace exist, queues the demo corpus on first start, then runs
a Celery worker and the web server until Ctrl-C, which stops all of them.
"""

from __future__ import annotations

import os
import secrets
import signal
import subprocess
import sys
import time
from pathlib import Path

BIN = Path(sys.executable).parent


def _say(message: str) -> None:
    print(f"docent: {message}", flush=True)


def _prepare() -> None:
    import django

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    django.setup()  # settings start the embedded services or exit with one clear line

    from django.core.management import call_command
    from django.db import OperationalError, connection

    try:
        connection.ensure_connection()
    except OperationalError as exc:
        first_line = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        _say(f"configuration error: cannot reach the database: {first_line}")
        raise SystemExit(2) from None

    call_command("migrate", interactive=False, verbosity=0)
    _ensure_admin()
    from rag.bootstrap import demo_workspace_bootstrap

    for line in demo_workspace_bootstrap():
        _say(line)


def _ensure_admin() -> None:
    from django.contrib.auth import get_user_model

    User = get_user_model()
    if User.objects.filter(is_superuser=True).exists():
        return
    password = os.environ.get("DOCENT_ADMIN_PASSWORD") or secrets.token_urlsafe(12)
    User.objects.create_superuser("admin", "", password)
    shown = "(from DOCENT_ADMIN_PASSWORD)" if os.environ.get("DOCENT_ADMIN_PASSWORD") else password
    _say(f"created the admin account: username 'admin', password {shown} — shown once, keep it")


def worker_command(environ: dict[str, str], cpus: int) -> tuple[list[str], dict[str, str]]:
    """The worker's command line and environment: processes x torch threads that fit the cores.

    Encoding is the work, and a document's ~10 chunks are too small a batch for torch to
    keep several threads busy: two processes of one thread each index 1.1-1.3x faster
    than one process of two threads on two cores (benchmarks/bench_ingest.py). Each
    process holds its own model (~800 MB), hence at most two unless told otherwise.
    """
    concurrency = int(environ.get("DOCENT_WORKER_CONCURRENCY") or min(2, cpus))
    env = {**environ, "OMP_NUM_THREADS": environ.get("OMP_NUM_THREADS") or str(max(1, cpus // concurrency))}
    # --beat: Celery beat inside the worker runs the reaper (rag.tasks.reap_job_items) on this one machine.
    command = [str(BIN / "celery"), "-A", "config", "worker", "-Q", "default,ingest,merge",
               "--concurrency", str(concurrency), "--loglevel", "INFO", "--beat"]
    return command, env


def main() -> int:
    _prepare()
    from django.conf import settings

    host = os.environ.get("DOCENT_HOST", "127.0.0.1")
    port = os.environ.get("DOCENT_PORT", "8000")
    worker_args, worker_env = worker_command(dict(os.environ), os.cpu_count() or 1)
    children = {
        "worker": subprocess.Popen(worker_args, env=worker_env),
        "web": subprocess.Popen(
            [str(BIN / "gunicorn"), "config.wsgi:application", "--bind", f"{host}:{port}",
             "--worker-class", "gthread", "--workers", "2", "--threads", "4", "--timeout", "120",
             "--access-logfile", "-"],
        ),
    }
    _say(f"serving on http://{host}:{port}/  (health: /healthz; Ctrl-C stops everything)")

    stopping = False

    def _stop(signum: int, frame: object) -> None:
        nonlocal stopping
        stopping = True

    signal.signal(signal.SIGINT, _stop)
    signal.signal(signal.SIGTERM, _stop)
    exit_code = 0
    while not stopping:
        for name, proc in children.items():
            if proc.poll() is not None:
                _say(f"the {name} exited with status {proc.returncode}; stopping")
                exit_code = proc.returncode or 1
                stopping = True
        time.sleep(0.3)

    for proc in children.values():
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
    deadline = time.monotonic() + 20
    for proc in children.values():
        try:
            proc.wait(timeout=max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            proc.kill()
    from config.services import stop_embedded

    stop_embedded(settings.DATA_DIR, database=not os.environ.get("DATABASE_URL"), redis_server=not os.environ.get("REDIS_URL"))
    _say("stopped")
    return exit_code


if __name__ == "__main__":
    sys.exit(main())
