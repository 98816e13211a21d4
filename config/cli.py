"""manage.py's entry point: every command finds its services and schema, and leaves no embedded service behind.

A command that talks to the database starts (or finds) the embedded services; one that
does not (`check`, `makemigrations`, `help`, ...) starts nothing. A command on a fresh or
un-migrated DATA_DIR migrates the embedded database (what `make run` would do) or,
against an external DATABASE_URL, says in one line what to run. At exit, a command stops
the embedded services that commands started once no other process uses them
(config/embedded.py: embedded_release).
"""

from __future__ import annotations

import os
import signal
import sys
import warnings

from django.conf import settings

from config.configuration import first_start
from config.embedded import ROLE_ENV, embedded_release, lease_held, services_start

# Commands that open no database or broker connection: they start no embedded service.
SERVICE_FREE_COMMANDS = {
    "check", "collectstatic", "compilemessages", "diffsettings", "findstatic", "help", "makemessages",
    "makemigrations", "optimizemigration", "sendtestemail", "services", "startapp", "startproject", "version",
}
# ... unless given these options: `check --database` runs the database's checks, `makemigrations --update`
# reads the applied migrations.
CONNECTING_OPTIONS = {"check": "--database", "makemigrations": "--update"}
# Commands that run without Docent's tables (or create them).
SCHEMA_FREE_COMMANDS = {
    "check", "collectstatic", "compilemessages", "dbshell", "diffsettings", "findstatic", "flush",
    "help", "makemessages", "makemigrations", "migrate", "optimizemigration",
    "sendtestemail", "services", "shell", "showmigrations", "sqlflush", "sqlmigrate", "sqlsequencereset",
    "squashmigrations", "startapp", "startproject", "test", "version",
}


def _fail(message: str) -> None:
    sys.stderr.write(f"docent: {message}\n")
    raise SystemExit(2)


def schema_ensure(*, say=None) -> None:
    """Migrate the embedded database if it lacks migrations; refuse an external one with one line."""
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


def services_needed(argv: list[str]) -> bool:
    """Whether the command opens a connection, so that the embedded services must run first."""
    command, options = (argv[1] if len(argv) > 1 else "help"), argv[2:]
    if command.startswith("-") or {"-h", "--help"} & set(options):
        return False
    connecting = CONNECTING_OPTIONS.get(command)
    if connecting and any(option.split("=")[0] == connecting for option in options):
        return True
    return command not in SERVICE_FREE_COMMANDS


def _release() -> None:
    if os.environ.get(ROLE_ENV) != "command" or not lease_held():
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
    signal.signal(signal.SIGTERM, _terminate)
    from django.core.management import execute_from_command_line

    try:
        if services_needed(argv):
            first_start()  # DATA_DIR and the kept secret key, before the settings are read
            services_start()
            if command not in SCHEMA_FREE_COMMANDS:
                import django

                django.setup()
                schema_ensure()
        elif command == "makemigrations" and settings.EMBEDDED_DATABASE:
            # Its history check reads the database if it can; a stopped embedded one holds nothing to
            # disagree with (migrate checks it when it runs), so Django's warning that it could not look is noise.
            warnings.filterwarnings("ignore", "Got an error checking a consistent migration history", RuntimeWarning)
        execute_from_command_line(argv)
    finally:
        _release()
