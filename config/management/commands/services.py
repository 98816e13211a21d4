"""`manage.py services status|stop`: the embedded PostgreSQL and Redis of this DATA_DIR.

This command never starts them (config/cli.py counts it among the commands that need no connection).
"""

from __future__ import annotations

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from config.embedded import clients, owner, postgres_pid, redis_pid, stop_embedded

ROLES = {
    "launcher": "make run",
    "command": "a management command (the last one to exit stops them)",
    "process": "a test run, worker or web server started by hand (they stay up)",
}


class Command(BaseCommand):
    help = "Show or stop the embedded PostgreSQL and Redis of this DATA_DIR."

    def add_arguments(self, parser) -> None:
        parser.add_argument("action", choices=["status", "stop"])
        parser.add_argument("--force", action="store_true", help="stop them even while other processes use them")

    def handle(self, *args, action: str, force: bool, **options) -> None:
        data_dir = settings.DATA_DIR
        users = clients(data_dir)
        if action == "status":
            self._status(data_dir, users)
            return
        if users and not force:
            listed = "; ".join(f"{client.pid} ({client.command[:80]})" for client in users)
            raise CommandError(f"in use by {len(users)} process(es): {listed}; stop them first or add --force")
        stop_embedded(data_dir, database=settings.EMBEDDED_DATABASE, redis_server=settings.EMBEDDED_REDIS)
        self.stdout.write(f"stopped the embedded services of {data_dir}")

    def _status(self, data_dir, users) -> None:
        lines = []
        if settings.EMBEDDED_DATABASE:
            pid = postgres_pid(data_dir)
            lines.append(f"PostgreSQL (embedded, {data_dir / 'pg'}): " + (f"running, pid {pid}" if pid else "stopped"))
        else:
            lines.append("PostgreSQL: external (DATABASE_URL)")
        if settings.EMBEDDED_REDIS:
            pid = redis_pid(data_dir)
            lines.append(f"Redis (embedded, {data_dir / 'redis'}): " + (f"running, pid {pid}" if pid else "stopped"))
        else:
            lines.append("Redis: external (REDIS_URL)")
        started_by = owner(data_dir)
        if started_by and (postgres_pid(data_dir) or redis_pid(data_dir)):
            state = "running" if started_by.alive else "exited"
            lines.append(f"started by: {ROLES.get(started_by.role, started_by.role)}, pid {started_by.pid} ({state})")
        lines.append(f"in use by: {len(users)} process(es)")
        lines.extend(f"  {client.pid} {client.command[:120]}" for client in users)
        self.stdout.write("\n".join(lines))
