"""Shared start-up for benchmarks: their own DATA_DIR, so figures never touch a real instance."""

from __future__ import annotations

import atexit
import os
import resource
import signal
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def django_setup(*, encoder: str = "minilm", data_dir: Path | None = None) -> None:
    """Configure Django on `data_dir` (else DATA_DIR, else var/bench; embedded services start on demand) and migrate."""
    sys.path.insert(0, str(ROOT))
    if data_dir is not None:
        os.environ["DATA_DIR"] = str(data_dir)  # the benchmark's own folder, never a real instance
    os.environ.setdefault("DATA_DIR", str(ROOT / "var" / "bench"))
    os.environ["EMBEDDING_ENCODER"] = os.environ.get("EMBEDDING_ENCODER", encoder)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    os.environ.setdefault("LOG_LEVEL", "WARNING")
    import django

    from config.configuration import first_start
    from config.embedded import ROLE_ENV, services_start

    # As a management command's: the services it starts stop when it ends, unless another process uses them.
    os.environ.setdefault(ROLE_ENV, "command")
    stop_on_signals()
    first_start()  # DATA_DIR and its kept secret key (sign-ins), before the settings are read
    services_start()
    atexit.register(_services_release)
    django.setup()
    from django.core.management import call_command

    call_command("migrate", interactive=False, verbosity=0)


def _services_release() -> None:
    from django.conf import settings
    from django.db import connections

    from config.embedded import embedded_release, lease_held

    if not lease_held():
        return
    connections.close_all()
    embedded_release(Path(settings.DATA_DIR), database=settings.EMBEDDED_DATABASE,
                     redis_server=settings.EMBEDDED_REDIS)


def _terminated(signum: int, frame: object) -> None:
    raise SystemExit(128 + signum)  # `finally` blocks and atexit run, as on Ctrl-C


def stop_on_signals() -> None:
    """SIGTERM and SIGHUP end the benchmark as Ctrl-C does: whatever it started (embedded services, web and worker
    processes, children) is stopped by the `finally` blocks and exit handlers on the way out."""
    for signum in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, _terminated)


def child_run(command: list[str]) -> int:
    """Run a benchmark child and return its exit code; if this process is interrupted or terminated meanwhile,
    the child is terminated and waited for, so that it stops what it started."""
    stop_on_signals()
    process = subprocess.Popen(command, cwd=ROOT)
    try:
        return process.wait()
    finally:
        if process.poll() is None:
            process.terminate()
            try:
                process.wait(timeout=120)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


def child_figures(measure) -> None:  # noqa: ANN001 - a function of no arguments returning a dict
    """A benchmark child on its own DATA_DIR: set up, measure, stop the embedded services it started, and
    print the figures as the last line of JSON for the parent to read."""
    import json

    os.environ.setdefault("LOG_LEVEL", "WARNING")
    django_setup()
    from django.conf import settings
    from django.db import connection

    from config.embedded import stop_embedded

    try:
        figures = measure()
    finally:
        connection.close()
        stop_embedded(Path(settings.DATA_DIR))
    print(json.dumps(figures))


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def percentile(values: list[float], pct: float) -> float:
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    index = min(len(ordered) - 1, max(0, round(pct / 100 * (len(ordered) - 1))))
    return ordered[index]


QUICK = os.environ.get("BENCH_QUICK") == "1"  # `run_all.py --quick`: smaller runs, the same targets
# `run_all.py --smoke` (the test suite's): the smallest run that goes through every step; its figures mean nothing.
SMOKE = os.environ.get("BENCH_SMOKE") == "1"
TARGET_PREFIX = "TARGET "


def machine_load() -> str:
    """The 1-minute load average and the cores: every figure on a shared machine says how busy it was."""
    return f"load {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores"


def target(issue: str, name: str, figure: str, met: bool, *, estimated: bool = False) -> None:
    """One target's verdict: a line for the reader, and a `TARGET {json}` line for run_all.py's table, the
    only lines it reads. `estimated`: the figure is modelled (from a sampled rate), not measured."""
    import json

    shown = f"{figure} (estimated)" if estimated else figure
    print(f"[{'MET' if met else 'MISSED'}] {name}: {shown}", flush=True)
    print(TARGET_PREFIX + json.dumps({"issue": issue, "target": name, "figure": figure, "met": bool(met),
                                      "estimated": estimated, "load": machine_load()}), flush=True)
