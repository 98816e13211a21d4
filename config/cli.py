"""manage.py's entry point: every command finds its schema, and leaves no embedded service behind.

A command on a fresh or un-migrated DATA_DIR migrates the embedded database (what
`make run` would do) or, against an external DATABASE_URL, says in one line what to
run. At exit, a command stops the embedded services that commands started once no
other process uses them (config/services.py: embedded_release).
"""

from __future__ import annotations

import os
import signal
import sys

from config.services import ROLE_ENV, START_ENV, embedded_release

# Commands that run without Docent's tables (or create them).
SCHEMA_FREE_COMMANDS = {
    "check", "collectstatic", "compilemessages", "dbshell", "diffsettings", "findstatic", "flush",
    "generate_license_keypair", "help", "makemessages", "makemigrations", "migrate", "optimizemigration",
    "sendtestemail", "services", "shell", "showmigrations", "sqlflush", "sqlmigrate", "sqlsequencereset",
    "squashmigrations", "startapp", "startproject", "test", "version",
}


def _fail(message: str) -> None:
    sys.stderr.write(f"docent: {message}\n")
    raise SystemExit(2)


def schema_ensure(*, say=None) -> None:
    """Migrate the embedded database if it lacks migrations; refuse an external one with one line."""
    from django.conf import settings
    from django.core.management import call_command
    from django.db import OperationalError, connection
    from django.db.migrations.executor import MigrationExecutor

    try:
        executor = MigrationExecutor(connection)
        plan = executor.migration_plan(executor.loader.graph.leaf_nodes())
    except OperationalError as exc:
        first_line = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        _fail(f"configuration error: cannot reach the database: {first_line}")
    if not plan:
        return
    if not settings.EMBEDDED_DATABASE:
        _fail(f"the database has {len(plan)} unapplied migration(s): run `python manage.py migrate` first")
    (say or (lambda line: sys.stderr.write(f"docent: {line}\n")))(
        f"database: applying {len(plan)} migration(s) to the embedded database in {settings.DATA_DIR}")
    call_command("migrate", interactive=False, verbosity=0)


def _release() -> None:
    from django.conf import settings

    if os.environ.get(ROLE_ENV) != "command" or not settings.configured:
        return
    if not (settings.EMBEDDED_DATABASE or settings.EMBEDDED_REDIS) or os.environ.get(START_ENV) == "false":
        return
    from django.db import connections

    connections.close_all()
    embedded_release(settings.DATA_DIR, database=settings.EMBEDDED_DATABASE, redis_server=settings.EMBEDDED_REDIS)


def _terminate(signum: int, frame: object) -> None:
    raise SystemExit(128 + signum)  # runs the `finally` below, as Ctrl-C does


def main(argv: list[str]) -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    os.environ.setdefault(ROLE_ENV, "command")
    command = argv[1] if len(argv) > 1 else "help"
    if command == "services":
        os.environ[START_ENV] = "false"  # looking at the services must not start them
    signal.signal(signal.SIGTERM, _terminate)
    from django.core.management import execute_from_command_line

    try:
        if command not in SCHEMA_FREE_COMMANDS and not command.startswith("-"):
            import django

            django.setup()
            schema_ensure()
        execute_from_command_line(argv)
    finally:
        _release()
