"""What questions read again and again of a workspace, kept in the process until the workspace changes.

Release labels, the calendar, the documents current at each release, the workspace's version labels, subjects,
dictionary and term statistics change only when its documents, chunks, records, lineage, calendar, dictionary,
sources or licenses do, and every such change sets `Workspace.index_generation` anew in the same transaction
(database triggers, migration 0021). So they are kept keyed by (workspace, generation, when the chunk table was
last analysed, what was read): the next question after a change reads afresh, with no time limit to tune and no
write path that must remember to forget. The planner's statistics, which term statistics come from, change with
ANALYZE and no write: hence the last analysis in the key.

In the process, not in Redis: the values are Python structures read on every question, and a round trip with
pickling would cost what the database read it saves. A generation is never handed out twice (a sequence), so a
value read inside a transaction that then rolls back is never served to anyone else.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import TypeVar

from django.db import connection

from rag.models import Chunk, Workspace

T = TypeVar("T")

MAX_ENTRIES = 1024  # a workspace's entries take a few per release and question; old generations age out first

_entries: OrderedDict[tuple, object] = OrderedDict()
_lock = threading.Lock()
# Inside `generation_read_once`: each workspace's generation as first read in the block.
_read_once: ContextVar[dict[int, tuple] | None] = ContextVar("index_generation_read_once", default=None)


def index_generation(*, workspace_id: int) -> tuple:
    """The workspace's generation and the chunk table's last analysis, one read (once per `generation_read_once`
    block); None for the generation of a workspace that is gone."""
    read = _read_once.get()
    if read is not None and workspace_id in read:
        return read[workspace_id]
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT (SELECT index_generation FROM {Workspace._meta.db_table} WHERE id = %s), "
            f"(SELECT greatest(last_analyze, last_autoanalyze) FROM pg_stat_user_tables WHERE relid = %s::regclass)",
            [workspace_id, Chunk._meta.db_table])
        generation = tuple(cursor.fetchone())
    if read is not None:
        read[workspace_id] = generation
    return generation


@contextmanager
def generation_read_once() -> Iterator[None]:
    """Within the block each workspace's generation is read once (a search: it writes nothing, and asks from
    every stage); a block inside another keeps the outer one's reads."""
    if _read_once.get() is not None:
        yield
        return
    token = _read_once.set({})
    try:
        yield
    finally:
        _read_once.reset(token)


def index_cached(what: str, *, workspace_id: int, compute: Callable[[], T], key: Hashable = ()) -> T:
    """`compute()`, kept for the workspace's current generation: callers must not change what it returns."""
    generation = index_generation(workspace_id=workspace_id)
    if generation[0] is None:
        return compute()
    entry = (workspace_id, generation, what, key)
    with _lock:
        if entry in _entries:
            _entries.move_to_end(entry)
            return _entries[entry]  # type: ignore[return-value]
    value = compute()
    with _lock:
        _entries[entry] = value
        while len(_entries) > MAX_ENTRIES:
            _entries.popitem(last=False)
    return value


def index_cache_clear() -> None:
    """Forget every kept read (tests that compare a cold read with a kept one)."""
    with _lock:
        _entries.clear()
