"""What questions read again and again of a workspace, kept in the process until the workspace changes.

Release labels, the calendar, the documents current at each release, the workspace's version labels, subjects,
dictionary and term statistics change only when its documents, chunks, records, lineage, calendar, dictionary,
sources or licenses do, and every such change sets `Workspace.index_generation` anew when its transaction
commits (database triggers, migration 0021). So they are kept keyed by (workspace, generation, when the chunk
table was last analysed, what was read): the next question after a change reads afresh, with no time limit to
tune and no write path that must remember to forget. The planner's statistics, which term statistics come
from, change with ANALYZE and no write: hence the last analysis in the key. A transaction that has changed the
workspace and not yet committed (its generation not yet set) reads afresh and keeps nothing for others; within
one search it still reads each thing once.

In the process, not in Redis: the values are Python structures read on every question, and a round trip with
pickling would cost what the database read it saves.
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


class _Block:
    """One `generation_read_once` block: each workspace's generation as first read, and what was read while the
    transaction held uncommitted changes of it."""

    def __init__(self) -> None:
        self.generations: dict[int, tuple] = {}
        self.unshared: dict[tuple, object] = {}


_block: ContextVar[_Block | None] = ContextVar("index_generation_block", default=None)


def index_generation(*, workspace_id: int) -> tuple:
    """(generation, the chunk table's last analysis, whether this transaction changed the workspace and has not
    committed), one read (once per `generation_read_once` block); a None generation: the workspace is gone."""
    block = _block.get()
    if block is not None and workspace_id in block.generations:
        return block.generations[workspace_id]
    with connection.cursor() as cursor:
        # The pending note of another transaction is invisible here; this one's own is not.
        cursor.execute(
            f"SELECT (SELECT index_generation FROM {Workspace._meta.db_table} WHERE id = %s), "
            f"(SELECT greatest(last_analyze, last_autoanalyze) FROM pg_stat_user_tables WHERE relid = %s::regclass), "
            f"EXISTS (SELECT 1 FROM rag_index_generation_pending WHERE workspace_id = %s)",
            [workspace_id, Chunk._meta.db_table, workspace_id])
        generation = tuple(cursor.fetchone())
    if block is not None:
        block.generations[workspace_id] = generation
    return generation


@contextmanager
def generation_read_once() -> Iterator[None]:
    """Within the block each workspace's generation is read once (a search: it writes nothing, and asks from
    every stage); a block inside another keeps the outer one's reads."""
    if _block.get() is not None:
        yield
        return
    token = _block.set(_Block())
    try:
        yield
    finally:
        _block.reset(token)


def index_cached(what: str, *, workspace_id: int, compute: Callable[[], T], key: Hashable = ()) -> T:
    """`compute()`, kept for the workspace's current generation: callers must not change what it returns."""
    generation, analysed, uncommitted = index_generation(workspace_id=workspace_id)
    entry = (workspace_id, generation, analysed, what, key)
    if generation is None or uncommitted:
        block = _block.get()
        if block is None:
            return compute()
        if entry not in block.unshared:
            block.unshared[entry] = compute()
        return block.unshared[entry]  # type: ignore[return-value]
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

