"""One PostgreSQL and one Redis for a whole `run_all.py --smoke`: each script gets a fresh database.

A smoke run's scripts do a few seconds of work each; started on their own DATA_DIRs, each would spend
as long again starting (on a fresh checkout: creating and migrating) its own embedded PostgreSQL and
Redis. Here they are started once under var/bench/smoke, the schema is migrated once into a template
database, and each script runs on `DATABASE_URL` / `REDIS_URL` naming a copy of that template made for
it (a file copy, well under a second) and an emptied Redis: as alone as on its own DATA_DIR, where it
still keeps its files. A script that starts workers or a web server hands them the same URLs.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TEMPLATE = "bench_template"


class SmokeServices:
    """The shared services of a smoke run; `environ(script)` is a script's own database on them."""

    def __init__(self, data_dir: Path = ROOT / "var" / "bench" / "smoke") -> None:
        self.data_dir = data_dir.resolve()

    def __enter__(self) -> SmokeServices:
        sys.path.insert(0, str(ROOT))
        from config.embedded import embedded_database_start, embedded_database_url, embedded_redis_start

        self.data_dir.mkdir(parents=True, exist_ok=True)
        embedded_database_start(self.data_dir, TEMPLATE)
        self.redis_url = embedded_redis_start(self.data_dir)
        self._url = lambda name: embedded_database_url(self.data_dir, name)
        # The schema once: every script's database starts as a copy of it, so its own migrate finds nothing to do.
        subprocess.run([sys.executable, "manage.py", "migrate", "--verbosity", "0"], cwd=ROOT, check=True,
                       env={**os.environ, "DATA_DIR": str(self.data_dir), "DATABASE_URL": self._url(TEMPLATE),
                            "REDIS_URL": self.redis_url, "LOG_LEVEL": "WARNING"})
        return self

    def environ(self, script: str) -> dict[str, str]:
        import psycopg
        import redis

        name = f"bench_{script}".lower()
        with psycopg.connect(self._url("postgres"), autocommit=True) as connection:
            connection.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
            connection.execute(f'CREATE DATABASE "{name}" TEMPLATE "{TEMPLATE}"')
        redis.Redis(unix_socket_path=str(self.data_dir / "redis" / "redis.sock")).flushall()  # no message left before
        return {"DATABASE_URL": self._url(name), "REDIS_URL": self.redis_url}

    def __exit__(self, *exc_info: object) -> None:
        from config.embedded import stop_embedded

        stop_embedded(self.data_dir)
