"""Stops an embedded server whose data folder is gone: `python -I -S config/watchdog.py PID SIGNAL FOLDER DEV:INO`.

A daemonized server outlives whoever started it. If its folder is deleted (or
replaced by a fresh one), nothing can reach or stop it any more: an orphan. This
process, started beside each embedded server, checks every few seconds that the
folder it was started for is still there, and stops the server when it is not.
It exits with the server. Standard library only, so it costs ~9 MB.
"""

from __future__ import annotations

import os
import signal
import sys
import time

POLL_SECONDS = 2.0
KILL_AFTER_SECONDS = 10.0


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # A zombie (a child of ours that exited) counts as gone.
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return True


def _identity(folder: str) -> tuple[int, int] | None:
    try:
        info = os.stat(folder)
    except OSError:
        return None
    return info.st_dev, info.st_ino


def watch(pid: int, stop_signal: int, folder: str, started_for: tuple[int, int]) -> None:
    """Until `pid` exits: if `folder` is no longer the one the server started in (`started_for`, its
    device and inode as the starter saw them), send `stop_signal`, then SIGKILL."""
    while _alive(pid):
        if _identity(folder) != started_for:
            os.kill(pid, stop_signal)
            deadline = time.monotonic() + KILL_AFTER_SECONDS
            while _alive(pid) and time.monotonic() < deadline:
                time.sleep(0.2)
            if _alive(pid):
                os.kill(pid, signal.SIGKILL)
            return
        time.sleep(POLL_SECONDS)


if __name__ == "__main__":
    device, inode = (int(part) for part in sys.argv[4].split(":"))
    watch(int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], (device, inode))
