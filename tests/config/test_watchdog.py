"""The watchdog kills only the server it was started for, and a Redis still loading its data counts as running."""

from __future__ import annotations

import os
import shutil
import signal
import socketserver
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from config import watchdog
from config.embedded import embedded_redis_start, redis_pid
from tests.config.conftest import services_folder

WATCHDOG = Path(watchdog.__file__)


@pytest.fixture
def server(tmp_path: Path) -> Iterator[tuple[subprocess.Popen, Path]]:
    """A stand-in server process and the folder it serves."""
    folder = tmp_path / "served"
    folder.mkdir()
    process = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    yield process, folder
    process.kill()
    process.wait()


def _watch(pid: int, started: int, folder: Path) -> subprocess.Popen:
    info = folder.stat()
    return subprocess.Popen([sys.executable, "-I", "-S", str(WATCHDOG), f"{pid}:{started}", str(int(signal.SIGTERM)),
                             str(folder), f"{info.st_dev}:{info.st_ino}"])


def test_the_watchdog_stops_its_server_when_the_folder_goes(server):
    process, folder = server
    guard = _watch(process.pid, watchdog.process_start_time(process.pid), folder)
    shutil.rmtree(folder)
    assert process.wait(timeout=30) == -signal.SIGTERM
    assert guard.wait(timeout=30) == 0


def test_a_process_that_took_the_servers_pid_is_never_killed(server):
    """The server exited and its pid went to another process: same pid, another start time."""
    process, folder = server
    newcomer_start = watchdog.process_start_time(process.pid)
    guard = _watch(process.pid, newcomer_start - 1, folder)  # the server we watched started earlier
    shutil.rmtree(folder)
    assert guard.wait(timeout=30) == 0  # the watched server is gone: the watchdog leaves
    time.sleep(watchdog.POLL_SECONDS + 0.5)
    assert process.poll() is None


def test_start_times_identify_processes():
    ticks = os.sysconf("SC_CLK_TCK")
    boot = next(int(line.split()[1]) for line in Path("/proc/stat").read_text().splitlines() if line.startswith("btime"))
    child = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE)
    try:
        started = watchdog.process_start_time(child.pid)
        # The start time read is this child's: a moment ago, and after this process's own.
        assert started is not None and abs(boot + started / ticks - time.time()) < 30
        assert watchdog.process_start_time(os.getpid()) <= started
    finally:
        child.stdin.close()
        child.wait()
    assert watchdog.process_start_time(2**22 + 1) is None  # beyond pid_max: no such process


def test_a_zombie_has_no_start_time():
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    deadline = time.monotonic() + 30
    while Path(f"/proc/{child.pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z":
        assert time.monotonic() < deadline
        time.sleep(0.05)
    assert watchdog.process_start_time(child.pid) is None  # exited, not yet reaped
    child.wait()


class _LoadingRedis(socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
    """A Redis server still loading its dataset, as Redis 6 answers then: PING refused with LOADING,
    INFO answered (it is allowed while loading)."""

    daemon_threads = True


class _LoadingHandler(socketserver.StreamRequestHandler):
    def handle(self) -> None:
        while line := self.rfile.readline():
            if not line.startswith(b"*"):
                continue
            words = []
            for _ in range(int(line[1:])):
                self.rfile.readline()  # $length
                words.append(self.rfile.readline().strip().upper())
            if words[0] == b"HELLO":  # allowed while loading; redis-py asks for RESP3
                self.wfile.write(b"%3\r\n+server\r\n+redis\r\n+version\r\n+6.2.12\r\n+proto\r\n:3\r\n")
            elif words[0] == b"INFO":
                body = f"# Server\r\nprocess_id:{os.getpid()}\r\nloading:1\r\n".encode()
                self.wfile.write(b"$%d\r\n%s\r\n" % (len(body), body))
            elif words[0] == b"PING":
                self.wfile.write(b"-LOADING Redis is loading the dataset in memory\r\n")
            else:
                self.wfile.write(b"-ERR unknown subcommand\r\n")


def test_a_redis_still_loading_its_data_counts_as_running():
    data_dir = services_folder()
    (data_dir / "redis").mkdir()
    socket_path = data_dir / "redis" / "redis.sock"
    loading = _LoadingRedis(str(socket_path), _LoadingHandler)
    threading.Thread(target=loading.serve_forever, daemon=True).start()
    try:
        assert redis_pid(data_dir) == os.getpid()
        embedded_redis_start(data_dir)  # finds it running: no second server, its socket left in place
        assert socket_path.exists() and not (data_dir / "redis" / "redis.pid").exists()
    finally:
        loading.shutdown()
        loading.server_close()
        shutil.rmtree(data_dir, ignore_errors=True)
