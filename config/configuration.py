"""The environment read once against its declarations, and the first-start step every serving process takes.

Reading never fails and never writes: a value that does not fit its declaration is left at its default and reported
by name, to `manage.py check` (config/checks.py) and, before anything starts, by `first_start` in one line.
Importing the settings therefore creates no file; `first_start` (the launcher, manage.py's commands that use the
services, the WSGI/ASGI apps, Celery's worker and beat, the test plugin) creates DATA_DIR and this machine's
secret key, or stops the process with the first problem.
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path
from typing import Any

import environ
from pydantic import ValidationError

from config.embedded import ServiceError, ensure_data_dir
from config.instance import is_loopback, secret_key_read_or_create, serves_network
from config.tuning import TuningVariables
from config.variables import ServiceVariables

ROOT = Path(__file__).resolve().parent.parent
SECRET_KEY_FILE = "secret_key"
STATIC_FOLDER = "staticfiles"  # STATIC_ROOT, inside DATA_DIR


class Configuration(ServiceVariables, TuningVariables):
    """Every variable Docent reads (config/variables.py, config/tuning.py)."""


def env_file_load() -> None:
    """A local .env is convenient in development; real deployments set the environment, which wins."""
    environ.Env.read_env(ROOT / ".env", overwrite=False)


def configuration_read() -> tuple[Configuration, list[str]]:
    """The environment as declared, and one line per variable whose value does not fit (that one at its default)."""
    env_file_load()
    try:
        return Configuration(), []
    except ValidationError as exc:
        problems: dict[str, str] = {}
        for error in exc.errors():
            name = str(error["loc"][0])
            reason = error["msg"].removeprefix("Value error, ")
            problems.setdefault(name, f"{name}={os.environ.get(name, '')!r}: {reason}")
        defaults = {name: Configuration.model_fields[name].get_default(call_default_factory=True) for name in problems}
        return Configuration(**defaults), list(problems.values())


def data_dir(configuration: Configuration) -> Path:
    return Path(configuration.DATA_DIR or ROOT / "var").resolve()


def instance_serves_network(configuration: Configuration) -> bool:
    """Serving any host but this machine's is production: said by the hosts named, `make run`'s DOCENT_HOST, or
    DOCENT_SERVES_NETWORK=true (a web server started by hand, or behind a proxy that may send `Host: 127.0.0.1`)."""
    if configuration.DOCENT_SERVES_NETWORK is not None:
        return configuration.DOCENT_SERVES_NETWORK
    return serves_network(configuration.ALLOWED_HOSTS) or not is_loopback(configuration.DOCENT_HOST)


def secret_key_missing(configuration: Configuration) -> str | None:
    if configuration.SECRET_KEY or not instance_serves_network(configuration):
        return None
    return ("SECRET_KEY must be set when the instance serves the network (ALLOWED_HOSTS names hosts other than this "
            "machine's, DOCENT_HOST is not loopback, or DOCENT_SERVES_NETWORK=true)")


def data_dir_problem(folder: Path) -> str | None:
    """Why DATA_DIR could not be used, found without creating it: a probe in it, or in its nearest existing parent,
    removed at once (`manage.py check`)."""
    existing = next(parent for parent in (folder, *folder.parents) if parent.exists())
    try:
        if existing == folder:
            with tempfile.TemporaryFile(dir=folder, prefix=".write-test-"):
                pass
        else:
            tempfile.TemporaryDirectory(dir=existing, prefix=".write-test-").cleanup()
    except OSError as exc:
        return f"DATA_DIR {folder} is not writable: {exc.strerror or exc}"
    return None


def kept_secret_key(configuration: Configuration) -> str:
    """SECRET_KEY, else the key first_start kept in DATA_DIR while the instance serves this machine alone; else ''."""
    if configuration.SECRET_KEY or instance_serves_network(configuration):
        return configuration.SECRET_KEY
    try:
        return (data_dir(configuration) / SECRET_KEY_FILE).read_text().strip()
    except OSError:
        return ""


def problems_stop(problems: list[str]) -> None:
    """Bad configuration stops the process with one line per problem, not a traceback."""
    if problems:
        sys.stderr.write("".join(f"docent: configuration error: {problem}\n" for problem in problems))
        raise SystemExit(2)


def configuration_sound() -> Configuration:
    """The configuration, or one line per problem (each naming its variable) and exit status 2."""
    configuration, problems = configuration_read()
    missing = secret_key_missing(configuration)
    problems_stop([*problems, *([missing] if missing else [])])
    return configuration


def first_start() -> Configuration:
    """Before a process serves or works: the configuration sound, DATA_DIR there and writable with its static
    folder (WhiteNoise reads it as the web server starts), this machine's secret key made (once, `make run`:
    sessions survive restarts); else one line and exit status 2."""
    configuration = configuration_sound()
    try:
        ensure_data_dir(data_dir(configuration))
        (data_dir(configuration) / STATIC_FOLDER).mkdir(exist_ok=True)
    except ServiceError as exc:
        sys.stderr.write(f"docent: configuration error: {exc}\n")
        raise SystemExit(2) from None
    if not configuration.SECRET_KEY and not instance_serves_network(configuration):
        secret_key_read_or_create(data_dir(configuration) / SECRET_KEY_FILE)
    return configuration


def described() -> list[tuple[str, Any]]:
    """(name, field) of every declared variable, in declaration order: the services' first, then the tuning."""
    return list(Configuration.model_fields.items())
