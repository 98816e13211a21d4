"""200 "Sync now" presses from 20 members at once, through gunicorn as `make run` starts it (issue 49, item 9).

    python benchmarks/bench_sync_flood.py [--members 20] [--presses 200]

Issue 37 measured this flood through Django test clients in one process (benchmarks/fault_sources.py): /healthz
p95 1.54 s. Here the web server is config.launcher's own command (gunicorn, 2 processes x 4 threads, --preload)
on a loopback port, and every request goes over HTTP: each member signs in, then all press "Sync now" on one
folder source at once (a POST and the redirect to the Sources page, as a browser), while a prober GETs /healthz
and the chat page in turn. No worker runs, so what the presses queued stays on the real Redis queue and is
counted there (rag.jobs.broker_task_count), then dropped.

Targets: /healthz and /chat/ p95 < 1 s during the presses; one sync queued for the 200 presses. The prober's
figures before the presses (idle) are printed beside them. Its own DATA_DIR (var/bench/sync-flood); the web
server and the embedded services it started are stopped at the end, after Ctrl-C or SIGTERM too.
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import threading
import time
import urllib.error
from collections import Counter
from pathlib import Path

from _setup import ROOT, SMOKE, django_setup, machine_load, percentile, target
from bench_chat import PASSWORD, Client, _free_port, server_wait

DATA_DIR = Path(os.environ.get("BENCH_SYNC_FLOOD_DATA_DIR", ROOT / "var" / "bench" / "sync-flood")).resolve()
SLUG = "bench-sync-flood"
TARGET_P95_SECONDS = 1.0
IDLE_SECONDS = 1 if SMOKE else 10
PROBES = ("/healthz", "/chat/")


def _prepare(members: int) -> tuple[list[str], int]:
    """The members (and a prober, the last) of one workspace with one folder source; the source's id."""
    from django.contrib.auth import get_user_model

    from rag.models import Source, Workspace
    from devkit.source_faults import first_sync_taken
    from rag.sources import source_add

    workspace, _ = Workspace.objects.get_or_create(slug=SLUG, defaults={"name": "Bench sync flood"})
    names = []
    for number in range(members + 1):
        user, made = get_user_model().objects.get_or_create(username=f"sync-member-{number:02d}")
        if made:
            user.set_password(PASSWORD)
            user.save()
        names.append(user.username)
    workspace.members.add(*get_user_model().objects.filter(username__in=names))
    share = DATA_DIR.with_name("sync-flood-share")  # outside DATA_DIR, which no source may read
    share.mkdir(parents=True, exist_ok=True)
    (share / "plan.md").write_text("# Plan\n\nThe gateway keeps its cache warm between restarts.\n")
    Source.objects.filter(workspace=workspace).delete()
    source = source_add(workspace=workspace, name="share", kind=Source.Kind.FOLDER, location=str(share),
                        every_minutes=0)
    first_sync_taken(source.pk)  # the presses measured are the members', not the first sync adding queued
    return names, source.pk


def _queued_syncs_drop() -> None:
    """Nothing of an earlier run, and nothing of this one afterwards: no worker will ever take them."""
    from django.conf import settings

    from rag.jobs import broker_client

    broker_client().delete(settings.CELERY_TASK_DEFAULT_QUEUE)


def _timed(action) -> tuple[float, object]:  # noqa: ANN001 - a function of no arguments
    began = time.perf_counter()
    try:
        outcome = action()
    except urllib.error.HTTPError as error:
        outcome = error.code
    except OSError as error:  # counted, not raised: the run goes on
        outcome = type(error).__name__
    return time.perf_counter() - began, outcome


def _flood(base: str, names: list[str], source_id: int, presses: int) -> dict:
    """The presses, all let go at once, and the prober's GETs before (idle) and during them (load)."""
    clients = []
    for name in names:  # signed in first, one after another: 21 password checks at once are not the load
        client = Client(base)
        client.login(name)
        clients.append(client)
    pressers, prober = clients[:-1], clients[-1]
    phase = ["idle"]
    probe_seconds: dict[tuple[str, str], list[float]] = {(when, path): [] for when in ("idle", "load") for path in PROBES}
    probe_statuses: Counter = Counter()
    press_seconds: list[float] = []
    press_statuses: Counter = Counter()
    lock = threading.Lock()
    done = threading.Event()
    start = threading.Barrier(len(pressers) + 1)

    def probe() -> None:
        while not done.is_set():
            for path in PROBES:
                seconds, status = _timed(lambda path=path: prober.opener.open(base + path, timeout=60).status)
                with lock:
                    probe_seconds[(phase[0], path)].append(seconds)
                    probe_statuses[(phase[0], path, status)] += 1
            time.sleep(0.05)

    def press(client: Client, count: int) -> None:
        start.wait()
        for _ in range(count):
            seconds, status = _timed(lambda: client.post(f"/documents/sources/{source_id}/sync/", {}))
            with lock:
                press_seconds.append(seconds)
                press_statuses[status] += 1

    prober_thread = threading.Thread(target=probe, daemon=True)
    prober_thread.start()
    time.sleep(IDLE_SECONDS)
    shares = [presses // len(pressers) + (index < presses % len(pressers)) for index in range(len(pressers))]
    threads = [threading.Thread(target=press, args=pair, daemon=True) for pair in zip(pressers, shares)]
    for thread in threads:
        thread.start()
    with lock:
        phase[0] = "load"
    began = time.monotonic()
    start.wait()
    for thread in threads:
        thread.join()
    wall = time.monotonic() - began
    while not all(probe_seconds[("load", path)] for path in PROBES):  # a short flood still gets its probes
        time.sleep(0.05)
    done.set()
    prober_thread.join(timeout=120)
    return {"probes": probe_seconds, "probe_statuses": probe_statuses, "press_seconds": press_seconds,
            "press_statuses": press_statuses, "seconds": wall}


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--members", type=int, default=4 if SMOKE else 20)
    parser.add_argument("--presses", type=int, default=20 if SMOKE else 200)
    args = parser.parse_args()
    os.environ.setdefault("SOURCE_FOLDER_ROOTS", str(DATA_DIR.with_name("sync-flood-share")))  # the folder it syncs
    django_setup(encoder="hashing", data_dir=DATA_DIR)
    from django.conf import settings
    from django.core.management import call_command
    from django.db import connection

    from config.launcher import metrics_dir_prepare, web_command
    from rag.jobs import SYNC_SOURCE, broker_task_count

    names, source_id = _prepare(args.members)
    call_command("collectstatic", interactive=False, verbosity=0)  # DEBUG is off, as under `make run`
    _queued_syncs_drop()
    connection.close()
    logs = DATA_DIR / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    port = _free_port()
    env = {**os.environ, "DATABASE_URL": settings.DATABASE_URL, "REDIS_URL": settings.REDIS_URL,
           "LOG_LEVEL": "WARNING", "EMBEDDING_ENCODER": "hashing",
           "PROMETHEUS_MULTIPROC_DIR": str(metrics_dir_prepare(DATA_DIR))}
    load_before = machine_load()
    web = subprocess.Popen(web_command("127.0.0.1", str(port), logs), cwd=ROOT, env=env, start_new_session=True)
    # SIGTERM (a CI's timeout, `kill`) ends the run as Ctrl-C does: through the `finally` that stops the server.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    try:
        base = f"http://127.0.0.1:{port}"
        server_wait(base)
        flood = _flood(base, names, source_id, args.presses)
        queued = broker_task_count(SYNC_SOURCE)
        load_after = machine_load()
    finally:
        os.killpg(web.pid, signal.SIGTERM)  # gunicorn's master and its workers
        try:
            web.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(web.pid, signal.SIGKILL)
            web.wait()
        _queued_syncs_drop()
        if settings.EMBEDDED_DATABASE or settings.EMBEDDED_REDIS:
            # import here: only a run on its own DATA_DIR started them (a smoke run shares run_all's services).
            from config.embedded import stop_embedded

            stop_embedded(DATA_DIR)

    presses = flood["press_seconds"]
    print(f"{len(presses)} presses from {args.members} members in {flood['seconds']:.1f} s through gunicorn 2x4; "
          f"answers {dict(flood['press_statuses'])}; press p50 {percentile(presses, 50):.2f} s, "
          f"p95 {percentile(presses, 95):.2f} s; machine {load_before} before, {load_after} after", flush=True)
    p95s = {}
    for (when, path), seconds in flood["probes"].items():
        statuses = {status: n for (seen, probed, status), n in flood["probe_statuses"].items()
                    if (seen, probed) == (when, path)}
        print(f"{path:9s} {when:4s} {len(seconds)} GETs: p50 {percentile(seconds, 50) * 1000:.0f} ms, "
              f"p95 {percentile(seconds, 95) * 1000:.0f} ms, max {max(seconds) * 1000:.0f} ms; answers {statuses}",
              flush=True)
        if when == "load":
            p95s[path] = percentile(seconds, 95)
    for path, seconds in p95s.items():
        target("49", f"{path} p95 < {TARGET_P95_SECONDS:.0f} s during {args.presses} Sync-now presses (gunicorn)",
               f"{seconds:.3f} s over {len(flood['probes'][('load', path)])} GETs", seconds < TARGET_P95_SECONDS)
    target("49", f"{args.presses} Sync-now presses queue one sync (counted on the Redis queue)",
           f"{queued} queued; answers {dict(flood['press_statuses'])}",
           queued == 1 and flood["press_statuses"].get(200) == args.presses)
    return 0  # a missed target is a MISSED TARGET line, not an exit status


if __name__ == "__main__":
    sys.exit(main())
