"""Stops an embedded server whose data folder is gone:
`python -I -S config/watchdog.py PID:START SIGNAL FOLDER DEV:INO`.

A daemonized server outlives whoever started it. If its folder is deleted (or
replaced by a fresh one), nothing can reach or stop it any more: an orphan. This
process, started beside each embedded server, checks every few seconds that the
folder it was started for is still there, and stops the server when it is not.
It exits with the server. Standard library only, so it costs ~9 MB.

The server is known by its pid and its start time (START, from /proc/PID/stat):
once the server has exited, its pid may be given to any other process, which a
bare pid would have this watchdog kill.
"""

from __future__ import annotations

import os
import signal
import sys
import time

POLL_SECONDS = 2.0
KILL_AFTER_SECONDS = 10.0


def process_start_time(pid: int) -> int | None:
    """When the process started, in clock ticks since boot; None when there is no such process (or a zombie)."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            # The command name (field 2) may hold spaces and parentheses: fields are counted after its last ")".
            fields = stat.read().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    # fields[0] is field 3 (state), so field 22 (starttime) is fields[19].
    return None if fields[0] == "Z" else int(fields[19])


def _alive(pid: int, started: int) -> bool:
    """The very process we were started for is still running (not a zombie, not a newcomer with its pid)."""
    return process_start_time(pid) == started


def _signal(pid: int, started: int, signum: int) -> None:
    """Signal the process only if it is still the one we watch; through a pidfd where the kernel has them,
    which names the process itself, so not even a pid reused in between is hit."""
    try:
        pidfd = os.pidfd_open(pid)
    except (AttributeError, OSError):
        pidfd = None
    try:
        if not _alive(pid, started):
            return
        if pidfd is not None:
            signal.pidfd_send_signal(pidfd, signum)
        else:
            os.kill(pid, signum)
    except ProcessLookupError:
        pass
    finally:
        if pidfd is not None:
            os.close(pidfd)


def _identity(folder: str) -> tuple[int, int] | None:
    try:
        info = os.stat(folder)
    except OSError:
        return None
    return info.st_dev, info.st_ino


def watch(pid: int, started: int, stop_signal: int, folder: str, started_for: tuple[int, int]) -> None:
    """Until the process `pid` that started at `started` exits: if `folder` is no longer the one the server
    started in (`started_for`, its device and inode as the starter saw them), send `stop_signal`, then SIGKILL."""
    while _alive(pid, started):
        if _identity(folder) != started_for:
            _signal(pid, started, stop_signal)
            deadline = time.monotonic() + KILL_AFTER_SECONDS
            while _alive(pid, started) and time.monotonic() < deadline:
                time.sleep(0.2)
            _signal(pid, started, signal.SIGKILL)
            return
        time.sleep(POLL_SECONDS)


if __name__ == "__main__":
    watched_pid, watched_start = (int(part) for part in sys.argv[1].split(":"))
    device, inode = (int(part) for part in sys.argv[4].split(":"))
    watch(watched_pid, watched_start, int(sys.argv[2]), sys.argv[3], (device, inode))
