"""`make run`: one command that brings up a whole Docent instance on this machine.

Starts (or finds) the embedded services and owns them, migrates, makes sure an
admin account and the demo workspace exist, queues the demo corpus on first
start, then runs a Celery worker and the web server until Ctrl-C, which stops
all of them, the embedded services included. The console stays calm: one line
per service, the address and how to sign in, then one line per finished job;
the processes' own logs go to DATA_DIR/logs.
"""

from __future__ import annotations

import logging
import os
import secrets
import shutil
import signal
import socket
import string
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from config.cli import schema_ensure
from config.configuration import configuration_read, data_dir, first_start, problems_stop
from config.instance import DataDirLock, InstanceError, bind_check, data_dir_lock, port_check
from config.embedded import ROLE_ENV, STATES, owner_claim, services_start, stop_embedded

BIN = Path(sys.executable).parent
ROOT = Path(__file__).resolve().parent.parent


def _say(message: str) -> None:
    print(f"docent: {message}", flush=True)


def _shown(path: Path) -> str:
    """A path as the user typed it: relative to the project folder when inside it."""
    try:
        return str(path.relative_to(Path.cwd()))
    except ValueError:
        return str(path)


@dataclass
class Child:
    """A process `make run` starts and stops; its output goes to its log file.

    restart: started again when it dies (the scheduler) instead of stopping the instance.
    """

    name: str
    command: list[str]
    log: Path
    env: dict[str, str] = field(default_factory=lambda: dict(os.environ))
    proc: subprocess.Popen | None = None
    restart: bool = False
    started_at: float = 0.0

    def start(self) -> None:
        self.started_at = time.monotonic()
        with open(self.log, "a") as log:
            # A process group of its own: Ctrl-C reaches the launcher alone, which stops each child with one
            # SIGTERM. A terminal's SIGINT to every process as well made gunicorn's web processes take a second
            # signal while they ended, miss their quick exit, and be killed by the master ("Perhaps out of memory?").
            self.proc = subprocess.Popen(self.command, env=self.env, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT,
                                         stdin=subprocess.DEVNULL, preexec_fn=_end_with_parent, process_group=0)


# A restarted child that dies again at once waits this long before its next start: no tight loop.
RESTART_PAUSE_SECONDS = 5.0


def children_supervise(children: list[Child], say=None) -> int | None:
    """One look at the children: a dead restartable one is started again, with a line saying so; a dead one
    of the others ends the instance (its exit code returned, its log's last lines said)."""
    say = say or _say
    for child in children:
        if child.proc is None or child.proc.poll() is None:
            continue
        if child.restart:
            if time.monotonic() - child.started_at >= RESTART_PAUSE_SECONDS:
                say(f"the {child.name} exited with status {child.proc.returncode}; started it again, "
                    f"log {_shown(child.log)}")
                child.start()
            continue
        say(f"the {child.name} exited with status {child.proc.returncode}; stopping. "
            f"Last lines of {_shown(child.log)}:\n{_tail(child.log)}")
        return child.proc.returncode or 1
    return None


# How long a child may take to finish its work in hand (a request, an indexing task) before it is killed.
STOP_TIMEOUT_SECONDS = 20.0


def children_stop(children: list[Child], say=None, timeout: float = STOP_TIMEOUT_SECONDS) -> None:
    """SIGTERM to each running child, then a line for each as it ends: Ctrl-C is answered at once, and a slow
    stop says which process it waits for instead of going quiet."""
    say = say or _say
    running = [child for child in children if child.proc is not None and child.proc.poll() is None]
    if not running:
        return
    say(f"stopping {', '.join(child.name for child in running)} (each finishes what it is doing, "
        f"at most {timeout:.0f} s)")
    began = time.monotonic()
    for child in running:
        child.proc.send_signal(signal.SIGTERM)
    while running:
        for child in [child for child in running if child.proc.poll() is not None]:
            running.remove(child)
            say(f"{child.name}: stopped in {time.monotonic() - began:.1f} s")
        if running and time.monotonic() - began >= timeout:
            for child in running:
                child.proc.kill()
                child.proc.wait()
                say(f"{child.name}: did not stop in {timeout:.0f} s; killed (log {_shown(child.log)})")
            return
        time.sleep(0.1)


def _end_with_parent() -> None:
    """In the child before exec: SIGTERM when the launcher dies, even by SIGKILL, so no worker outlives it (Linux)."""
    import ctypes

    try:
        ctypes.CDLL(None).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass  # not Linux: a launcher killed by SIGKILL leaves its children running


def worker_command(environ: dict[str, str], cpus: int) -> tuple[list[str], dict[str, str]]:
    """The worker's command line and environment: processes x torch threads that fit the cores.

    Encoding is the work, and a document's ~10 chunks are too small a batch for torch to
    keep several threads busy: two processes of one thread each index 1.1-1.3x faster
    than one process of two threads on two cores (benchmarks/bench_ingest.py). Each
    process holds its own model (~800 MB), hence at most two unless told otherwise.
    """
    concurrency = int(environ.get("DOCENT_WORKER_CONCURRENCY") or min(2, cpus))
    env = {**environ, "OMP_NUM_THREADS": environ.get("OMP_NUM_THREADS") or str(max(1, cpus // concurrency))}
    # No --beat: a beat embedded in the worker, once killed, never came back; it is its own process (beat_command).
    command = [str(BIN / "celery"), "-A", "config", "worker", "-Q", "default,ingest,merge",
               "--concurrency", str(concurrency), "--loglevel", "INFO"]
    return command, env


def beat_command() -> list[str]:
    """Celery beat, the one scheduler (the reaper, due source syncs), as `make run` supervises it: restarted when it
    dies. Its schedule file is CELERY_BEAT_SCHEDULE_FILENAME under DATA_DIR; its ticks are marked for /healthz."""
    return [str(BIN / "celery"), "-A", "config", "beat", "--loglevel", "INFO"]


def answers_worker_command(environ: dict[str, str]) -> list[str]:
    """The worker of the `answers` queue (chat.tasks): threads, not processes.

    A generated answer spends its time waiting on the model server, so one process of
    threads writes many at once (DOCENT_ANSWER_THREADS, 8 by default) for one model in
    memory; in the indexing worker's two processes, 50 askers of a 3 s model waited 88 s
    (p50) for their answer, and indexing waited behind them (benchmarks/bench_answers_load.py).
    """
    threads = environ.get("DOCENT_ANSWER_THREADS") or "8"
    return [str(BIN / "celery"), "-A", "config", "worker", "-Q", "answers", "-n", "answers@%h", "--pool", "threads",
            "--concurrency", threads, "--loglevel", "INFO"]


def web_command(host: str, port: str, logs: Path) -> list[str]:
    """gunicorn as `make run` (and benchmarks/bench_chat.py) runs it.

    --preload loads the app once in the master before it forks, config/wsgi.py exporting the
    query encoder; config/web_server.py builds each process's ONNX session (cores / processes
    threads) before its first request: the first answer does not wait for a model load.
    """
    return [str(BIN / "gunicorn"), "config.wsgi:application", "--bind", f"{host}:{port}", "--preload",
            "--config", "python:config.web_server",
            "--worker-class", "gthread", "--workers", "2", "--threads", "4", "--timeout", "120",
            "--graceful-timeout", "10",
            "--access-logfile", str(logs / "access.log"), "--error-logfile", str(logs / "web.log")]


def metrics_dir_prepare(data_dir: Path) -> Path:
    """An empty folder for prometheus_client's multiprocess mode: /metrics adds up every web process."""
    folder = data_dir / "metrics"
    shutil.rmtree(folder, ignore_errors=True)  # counters of an earlier run must not add up with this one's
    folder.mkdir(parents=True)
    return folder


def _services_say() -> None:
    for key, external in (("database", "DATABASE_URL"), ("redis", "REDIS_URL")):
        state = STATES.get(key)
        if state is None:
            _say(f"{'PostgreSQL' if key == 'database' else 'Redis'}: {external} (not started here)")
        else:
            _say(f"{state.name}: {state.action} (embedded, {_shown(state.where)})")


def preflight() -> DataDirLock:
    """Before anything starts: values that fit their declarations, a bind that ALLOWED_HOSTS covers, this data
    folder to ourselves, a free port; then the first-start step (a SECRET_KEY when serving the network, DATA_DIR,
    the kept secret key) before any settings are read.

    A second launcher must be refused before it touches the first one's folder or services.
    """
    configuration, problems = configuration_read()
    problems_stop(problems)
    try:
        bind_check(configuration.DOCENT_HOST, configuration.ALLOWED_HOSTS)
        lock = data_dir_lock(data_dir(configuration))
        port_check(configuration.DOCENT_HOST, configuration.DOCENT_PORT)
    except InstanceError as exc:
        _say(f"configuration error: {exc}")
        raise SystemExit(2) from None
    first_start()
    return lock


def _prepare() -> list[str]:
    """Django, the services, the schema, static files, the admin and the demo; the sign-in lines to print."""
    import django

    os.environ[ROLE_ENV] = "launcher"
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    services_start()  # or exit with one clear line, as bad settings do
    django.setup()

    from django.conf import settings
    from django.core.management import call_command
    from django.db import OperationalError, connection

    owner_claim(settings.DATA_DIR, "launcher")  # `make run` stops them, whoever started them
    _services_say()
    try:
        connection.ensure_connection()
    except OperationalError as exc:
        first_line = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        _say(f"configuration error: cannot reach the database: {first_line}")
        raise SystemExit(2) from None
    logging.getLogger().setLevel(logging.WARNING)  # the console is for the lines below; logs go to DATA_DIR/logs
    if settings.EMBEDDED_DATABASE:
        schema_ensure(say=_say)
    else:
        call_command("migrate", interactive=False, verbosity=0)
    call_command("collectstatic", interactive=False, verbosity=0)
    lines = [_ensure_admin()]
    # import here: rag's modules need Django's apps, loaded by django.setup() above.
    from rag.bootstrap import demo_workspace_bootstrap

    lines.extend(demo_workspace_bootstrap())
    return lines


# Letters and digits only: a password starting with "-" reads as an option when pasted into a shell.
_PASSWORD_ALPHABET = string.ascii_letters + string.digits


def generated_password(length: int = 16) -> str:
    """A first-start password that pastes cleanly anywhere: ~95 bits, no '-' or '_' to trip a shell or a double-click."""
    return "".join(secrets.choice(_PASSWORD_ALPHABET) for _ in range(length))


def _ensure_admin() -> str:
    """Create the first account if there is none; say how to sign in, and show a generated password once."""
    from django.contrib.auth import get_user_model

    User = get_user_model()
    existing = User.objects.filter(is_superuser=True).order_by("pk").first()
    if existing:
        return (f"sign in as '{existing.get_username()}' (the password set on first start; "
                f"`python manage.py changepassword {existing.get_username()}` sets a new one)")
    given = os.environ.get("DOCENT_ADMIN_PASSWORD")
    password = given or generated_password()
    User.objects.create_superuser("admin", "", password)
    if given:
        return "sign in as 'admin' with the password from DOCENT_ADMIN_PASSWORD"
    return f"sign in as 'admin' with the password {password} (generated now and shown only this once: keep it)"


def _port_open(host: str, port: int) -> bool:
    try:
        with socket.create_connection((host if host != "0.0.0.0" else "127.0.0.1", port), timeout=1):
            return True
    except OSError:
        return False


# A web server not listening by then gets a line saying it is still starting, not silence.
WEB_PATIENCE_SECONDS = 60.0


class JobReporter:
    """One console line per indexing job that finishes while `make run` runs."""

    def __init__(self) -> None:
        from django.utils import timezone

        self.since = timezone.now()
        self.reported: set[int] = set()

    def lines(self) -> list[str]:
        from django.db import DatabaseError, connections

        # import here: the launcher imports this module before django.setup(); rag needs the apps loaded.
        from rag.models import IndexingJob
        from rag.progress import job_summary  # import here: as above

        try:
            jobs = list(IndexingJob.objects.filter(finished_at__gte=self.since).exclude(pk__in=self.reported)
                        .select_related("workspace").order_by("finished_at"))
            lines = [f"{job_summary(job=job)} (workspace {job.workspace.slug})" for job in jobs]
        except DatabaseError:  # a database restart is the workers' problem; report once it is back
            connections.close_all()
            return []
        self.reported.update(job.pk for job in jobs)
        return lines


def _tail(path: Path, lines: int = 8) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return ""


def main() -> int:
    data_dir_held = preflight()  # held until this process ends; released below once everything has stopped
    sign_in = _prepare()
    from django.conf import settings
    from django.db import connections

    host = os.environ.get("DOCENT_HOST", "127.0.0.1")
    port = os.environ.get("DOCENT_PORT", "8000")
    logs = settings.DATA_DIR / "logs"
    logs.mkdir(exist_ok=True)
    os.environ["PROMETHEUS_MULTIPROC_DIR"] = str(metrics_dir_prepare(settings.DATA_DIR))
    connections.close_all()  # the children open their own

    worker_args, worker_env = worker_command(dict(os.environ), os.cpu_count() or 1)
    children = [
        Child("worker", worker_args, logs / "worker.log", worker_env),
        Child("answers worker", answers_worker_command(dict(os.environ)), logs / "answers.log"),
        Child("scheduler", beat_command(), logs / "beat.log", restart=True),
        Child("web", web_command(host, port, logs), logs / "web.log"),
        # Folder sources marked "watch" sync on file-system events too (rag.sources.watch).
        Child("watcher", [sys.executable, str(ROOT / "manage.py"), "watch_sources"], logs / "watcher.log"),
    ]
    for child in children:
        child.start()
    concurrency = worker_args[worker_args.index("--concurrency") + 1]
    threads = children[1].command[children[1].command.index("--concurrency") + 1]
    _say(f"worker: {concurrency} processes, log {_shown(logs / 'worker.log')}; answers: {threads} threads, "
         f"log {_shown(logs / 'answers.log')}")
    _say(f"watcher: folder sources marked 'watch' also sync on file changes, log {_shown(logs / 'watcher.log')}")
    _say(f"scheduler: Celery beat, started again if it dies, log {_shown(logs / 'beat.log')}")
    web = next(child for child in children if child.name == "web")

    def _web_ready() -> None:
        _say(f"web: 2 processes, access log {_shown(logs / 'access.log')}, errors {_shown(logs / 'web.log')}")
        _say(f"open http://{host}:{port}/ and {sign_in[0]}")
        for line in sign_in[1:]:
            _say(line)
        _say("Ctrl-C stops everything; /healthz reports the services")

    stopping = False

    def _stop(signum: int, frame: object) -> None:
        nonlocal stopping
        stopping = True

    signal.signal(signal.SIGINT, _stop)
    signal.signal(signal.SIGTERM, _stop)
    exit_code = 0
    reporter = JobReporter()
    next_report = 0.0
    # However long the web server takes to listen (its first start exports the encoder; a busy machine is slow),
    # the sign-in lines are said once it does: the generated password is shown nowhere else.
    web_ready, web_waited = False, False
    while not stopping:
        if (ended := children_supervise(children)) is not None:
            exit_code, stopping = ended, True
        elif not web_ready and _port_open(host, int(port)):
            web_ready = True
            _web_ready()
        elif not web_ready and not web_waited and time.monotonic() - web.started_at > WEB_PATIENCE_SECONDS:
            web_waited = True
            _say(f"web: still starting (a first start prepares the encoder; log {_shown(logs / 'web.log')})")
        if web_ready and time.monotonic() >= next_report:
            for line in reporter.lines():
                _say(line)
            next_report = time.monotonic() + 2
        time.sleep(0.3)

    connections.close_all()
    children_stop(children)
    _say("stopping the embedded services" if settings.EMBEDDED_DATABASE or settings.EMBEDDED_REDIS else
         "the services are not ours (DATABASE_URL, REDIS_URL): left running")
    stop_embedded(settings.DATA_DIR, database=settings.EMBEDDED_DATABASE, redis_server=settings.EMBEDDED_REDIS)
    data_dir_held.release()
    _say("stopped")
    return exit_code


if __name__ == "__main__":
    sys.exit(main())
