"""Embedded services' life cycle with real processes: who starts them stops them, and none outlives its folder."""

from __future__ import annotations

import http.cookiejar
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

import psycopg
import pytest

from config.embedded import clients, embedded_database_start, embedded_redis_start, postgres_pid, redis_pid
from tests.config.conftest import services_folder, services_folder_remove

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def data_dir():
    """One DATA_DIR for the module: a PostgreSQL initdb costs seconds."""
    runtime = os.environ.get("XDG_RUNTIME_DIR")
    folder = services_folder()
    folder.rmdir()  # the first test wants a DATA_DIR that does not exist yet
    yield folder
    services_folder_remove(folder)
    if runtime is None:  # embedded_database_start sets it
        os.environ.pop("XDG_RUNTIME_DIR", None)
    else:
        os.environ["XDG_RUNTIME_DIR"] = runtime


def _manage(data_dir: Path, *args: str, **env: str) -> subprocess.CompletedProcess:
    environ = {key: value for key, value in os.environ.items() if key not in ("DATABASE_URL", "REDIS_URL")}
    return subprocess.run([sys.executable, "manage.py", *args], cwd=ROOT, capture_output=True, text=True, timeout=300,
                          env={**environ, "DATA_DIR": str(data_dir), "EMBEDDED_PG_SHARED_BUFFERS": "128MB", **env})


def _processes_under(folder: Path) -> list[str]:
    """Command lines of live processes that name the folder (servers and their watchdogs)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and int(entry.name) != os.getpid():
            try:
                command = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            except OSError:
                continue
            if str(folder) in command:
                found.append(command)
    return found


def _healthy(url: str) -> bool:
    try:
        return urllib.request.urlopen(url, timeout=30).status == 200
    except urllib.error.HTTPError:
        return False


def _wait_until(condition, timeout: float = 20) -> bool:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.2)
    return True


def _nothing_started(data_dir: Path) -> bool:
    """No server, watchdog or lease of this DATA_DIR, no file at all: only the first-start step of a process that
    uses the services makes the folder and its secret key."""
    return not data_dir.exists() and not _processes_under(data_dir)


@pytest.mark.parametrize("command", [["check"], ["makemigrations", "--check", "--dry-run"], ["help"],
                                     ["ingest", "--help"]], ids=" ".join)
def test_a_command_that_needs_no_database_starts_no_server(services_tmp_path, command):
    data_dir = services_tmp_path / "fresh"
    result = _manage(data_dir, *command)
    assert result.returncode == 0, result.stderr
    assert "Warning" not in result.stderr  # makemigrations does not complain that it could not read the history
    assert _nothing_started(data_dir), sorted(data_dir.rglob("*"))


def test_importing_the_settings_starts_nothing(services_tmp_path):
    data_dir = services_tmp_path / "fresh"
    environ = {key: value for key, value in os.environ.items() if key not in ("DATABASE_URL", "REDIS_URL")}
    script = "from config import settings; print(settings.DATABASE_URL, settings.REDIS_URL)"
    result = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=120,
                            env={**environ, "DATA_DIR": str(data_dir)})
    assert result.returncode == 0, result.stderr
    # Where the services will be, computed: the processes that use them start them (config.embedded.services_start).
    assert result.stdout.split() == [f"postgresql://postgres@/docent?host={data_dir / 'pg'}",
                                     f"redis+socket://{data_dir / 'redis' / 'redis.sock'}"]
    assert _nothing_started(data_dir), sorted(data_dir.rglob("*"))


def test_a_command_stops_what_it_started_and_leaves_what_it_found(data_dir):
    # A fresh DATA_DIR: the command starts both services, migrates in one line, works, and stops them.
    result = _manage(data_dir, "workspace", "create", "handbook")
    assert result.returncode == 0, result.stderr
    assert result.stdout == "created workspace handbook (Handbook)\n"
    assert result.stderr.startswith("docent: database: applying ") and result.stderr.count("\n") == 1
    assert postgres_pid(data_dir) is None and redis_pid(data_dir) is None
    assert _wait_until(lambda: not _processes_under(data_dir)), _processes_under(data_dir)

    # Services someone else started (here: this test, like a test run or a worker started by hand) stay up.
    embedded_database_start(data_dir)
    embedded_redis_start(data_dir)
    running = postgres_pid(data_dir), redis_pid(data_dir)
    result = _manage(data_dir, "workspace", "list")
    assert result.returncode == 0 and "handbook" in result.stdout, result.stderr
    assert (postgres_pid(data_dir), redis_pid(data_dir)) == running

    status = _manage(data_dir, "services", "status")
    assert f"running, pid {running[0]}" in status.stdout and f"running, pid {running[1]}" in status.stdout
    assert "started by: a test run" in status.stdout
    assert (postgres_pid(data_dir), redis_pid(data_dir)) == running  # looking does not start or stop anything

    stopped = _manage(data_dir, "services", "stop")
    assert stopped.returncode == 0, stopped.stderr
    assert postgres_pid(data_dir) is None and redis_pid(data_dir) is None
    assert "stopped" in _manage(data_dir, "services", "status").stdout
    assert _wait_until(lambda: not _processes_under(data_dir)), _processes_under(data_dir)


def test_leases_of_dead_processes_do_not_count(tmp_path):
    folder = tmp_path / "run" / "clients"
    folder.mkdir(parents=True)
    finished = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    (folder / finished.stdout.strip()).write_text("1")
    (folder / str(os.getpid())).write_text("0")  # a live pid with another start time: a reused pid
    assert clients(tmp_path) == []
    assert list(folder.iterdir()) == []


def test_stop_refuses_while_other_processes_use_the_services(tmp_path):
    from config.embedded import client_register

    client_register(tmp_path)  # this process, as a running web server would
    result = _manage(tmp_path, "services", "stop")
    assert result.returncode == 1
    assert f"in use by 1 process(es): {os.getpid()}" in result.stderr
    assert "--force" in result.stderr


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class _Lines:
    """The launcher's console, read as it comes."""

    def __init__(self, stream) -> None:
        self.lines: list[str] = []
        threading.Thread(target=lambda: [self.lines.append(line.rstrip("\n")) for line in stream], daemon=True).start()

    def wait_for(self, pattern: str, timeout: float) -> re.Match:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for line in list(self.lines):
                if match := re.search(pattern, line):
                    return match
            time.sleep(0.2)
        raise AssertionError(f"no line matching {pattern!r} in:\n" + "\n".join(self.lines))


@pytest.mark.worker
def test_make_run_starts_calmly_serves_and_stops_everything(data_dir):
    port = _free_port()
    environ = {key: value for key, value in os.environ.items()
               if key not in ("DATABASE_URL", "REDIS_URL", "DEBUG", "DOCENT_ADMIN_PASSWORD")}
    launcher = subprocess.Popen(
        [sys.executable, "-m", "config.launcher"], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        env={**environ, "DATA_DIR": str(data_dir), "DOCENT_PORT": str(port), "EMBEDDED_PG_SHARED_BUFFERS": "128MB",
             "DOCENT_WORKER_CONCURRENCY": "1"},
        start_new_session=True,  # its own process group, as a terminal's: Ctrl-C below reaches every process in it
    )
    console = _Lines(launcher.stdout)
    try:
        password = console.wait_for(rf"open http://127.0.0.1:{port}/ and sign in as 'admin' with the password (\S+) "
                                    r"\(generated now and shown only this once", timeout=240).group(1)
        console.wait_for(r"^docent: job \d+: \d+ file\(s\): \d+ indexed in \S+ \(workspace demo\)$", timeout=240)

        base = f"http://127.0.0.1:{port}"
        with pytest.raises(urllib.error.HTTPError) as missing:
            urllib.request.urlopen(f"{base}/no-such-page", timeout=30)
        body = missing.value.read().decode()
        assert missing.value.code == 404
        assert "URLconf" not in body and "DEBUG" not in body  # no technical page: DEBUG is off
        jar = http.cookiejar.CookieJar()
        browser = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(jar))
        browser.open(f"{base}/accounts/login/", timeout=30).read()
        token = next(cookie.value for cookie in jar if cookie.name == "csrftoken")
        form = urllib.parse.urlencode({"username": "admin", "password": password, "csrfmiddlewaretoken": token})
        signed_in = browser.open(urllib.request.Request(f"{base}/accounts/login/", data=form.encode(),
                                                        headers={"Referer": f"{base}/accounts/login/"}), timeout=60)
        assert signed_in.url == f"{base}/"  # the shown password works: the login page sent us home

        # A second `make run` on this folder, on another port, is refused and leaves the first serving.
        second_env = {**environ, "DATA_DIR": str(data_dir), "DOCENT_PORT": str(_free_port())}
        second = subprocess.run([sys.executable, "-m", "config.launcher"], cwd=ROOT, capture_output=True, text=True,
                                timeout=60, env=second_env)
        assert second.returncode == 2 and "is already serving DATA_DIR" in second.stdout
        # Right after a job the single pool process may be mid-replacement (seen: "degraded" for a few
        # seconds), so the first server must be back to healthy soon, not at this very instant.
        assert _wait_until(lambda: _healthy(f"{base}/healthz"), timeout=30)
    finally:
        os.killpg(launcher.pid, signal.SIGINT)  # Ctrl-C in the terminal
        launcher.wait(timeout=90)
    console.wait_for(r"^docent: stopped$", timeout=5)
    # Ctrl-C is answered at once with what is stopping, then each process as it ends, none killed.
    assert "docent: stopping worker, answers worker, scheduler, web, watcher (each finishes what it is doing, " \
           "at most 20 s)" in console.lines
    for name in ("worker", "answers worker", "scheduler", "web", "watcher"):
        console.wait_for(rf"^docent: {name}: stopped in \d+\.\d s$", timeout=1)
    assert launcher.returncode == 0

    lines, shown = console.lines, data_dir.relative_to(ROOT)  # paths as the user typed them, from the project folder
    assert lines[0] == f"docent: PostgreSQL 16 + pgvector: started (embedded, {shown / 'pg'})"
    assert lines[1].startswith("docent: Redis: started (embedded, ")
    assert all(line.startswith("docent: ") for line in lines), lines  # no log lines, banners or access lines
    assert not [line for line in lines if "ERROR" in line or "Traceback" in line]
    assert (f"docent: worker: 1 processes, log {shown / 'logs' / 'worker.log'}; answers: 8 threads, "
            f"log {shown / 'logs' / 'answers.log'}") in lines
    assert f"docent: watcher: folder sources marked 'watch' also sync on file changes, log {shown / 'logs' / 'watcher.log'}" in lines
    logs = data_dir / "logs"
    assert "GET /no-such-page" in (logs / "access.log").read_text()
    assert "celery@" in (logs / "worker.log").read_text() and "answers@" in (logs / "answers.log").read_text()
    web_log = (logs / "web.log").read_text()
    assert " ERROR " not in web_log and "SIGKILL" not in web_log  # a normal stop leaves no alarming line
    assert postgres_pid(data_dir) is None and redis_pid(data_dir) is None
    assert _wait_until(lambda: not _processes_under(data_dir)), _processes_under(data_dir)


# Last: it deletes the module's DATA_DIR.
def test_a_deleted_data_dir_leaves_no_server_running(data_dir):
    url = embedded_database_start(data_dir)
    embedded_redis_start(data_dir)
    pids = [postgres_pid(data_dir), redis_pid(data_dir)]
    with psycopg.connect(url) as conn:
        assert conn.execute("SELECT 1").fetchone() == (1,)
    assert len(_processes_under(data_dir)) >= 4  # postmaster, redis-server and a watchdog for each

    shutil.rmtree(data_dir)
    # The watchdogs poll every 2 s; without them Redis ran on forever and PostgreSQL ~60 s more.
    assert _wait_until(lambda: not any(Path(f"/proc/{pid}").exists() for pid in pids), timeout=15)
    assert _wait_until(lambda: not _processes_under(data_dir), timeout=5), _processes_under(data_dir)
