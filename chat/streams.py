"""How many answer streams one web process serves at once.

A stream is a GET that stays open while an answer is written, and it holds one of
the web process's few threads (gunicorn gthread, 4 by default) the whole time; past
CHAT_STREAMS_PER_PROCESS streams a new one is refused at once (the page tries again),
so pages and /healthz always find a free thread.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator

from django.conf import settings

_lock = threading.Lock()
_open = 0


def streams_open() -> int:
    return _open


class StreamSlot:
    """An iterator over a stream's pieces that holds one of the process's slots until it is closed.

    A class, not a generator: the server closes the response even when it never started
    iterating (the client left first), and only close() is sure to run then.
    """

    def __init__(self, pieces: Iterator[str]) -> None:
        self._pieces = pieces
        self._held = True

    def __iter__(self) -> StreamSlot:
        return self

    def __next__(self) -> str:
        return next(self._pieces)

    def close(self) -> None:
        global _open
        if not self._held:
            return
        self._held = False
        with _lock:
            _open -= 1
        close = getattr(self._pieces, "close", None)
        if close is not None:
            close()


def stream_slot_take(pieces: Iterator[str]) -> StreamSlot | None:
    """The pieces wrapped in a held slot, or None when this process already serves its limit of streams."""
    global _open
    with _lock:
        if _open >= settings.CHAT_STREAMS_PER_PROCESS:
            return None
        _open += 1
    return StreamSlot(pieces)
