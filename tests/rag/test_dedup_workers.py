"""Merges run by several real worker processes at once end in exactly the state a sequential run gives."""

from __future__ import annotations

import random
import shutil
import time
from pathlib import Path

import pytest
from django.core.management import call_command

from rag.models import Contradiction, Document, Workspace
from devkit.synthetic_corpus import _revise, _section, generate, write_markdown
from tests.conftest import WorkerProcess
from tests.factories import WorkspaceFactory
from tests.rag.dedup_support import assert_invariants, partition


def _wait_until_idle(workers, timeout: float = 120) -> None:
    """Until the ingest and merge queues are empty and no worker holds a task, three checks in a row."""
    from config.celery import app
    from rag.jobs.broker import broker_client

    broker = broker_client()
    names = [worker.name for worker in workers]
    deadline = time.monotonic() + timeout
    quiet = 0
    while quiet < 3:
        if time.monotonic() > deadline:
            raise AssertionError("workers still busy")
        busy = broker.llen("ingest") + broker.llen("merge")
        if not busy:
            inspect = app.control.inspect(destination=names, timeout=1.0)
            active, reserved = inspect.active(), inspect.reserved()
            if active is None or reserved is None or len(active) < len(names):
                busy = 1  # a worker that does not answer may be working
            else:
                busy = sum(map(len, active.values())) + sum(map(len, reserved.values()))
        quiet = quiet + 1 if not busy else 0
        time.sleep(0.2)


def _contradiction_pairs(workspace: Workspace) -> set[frozenset]:
    rows = Contradiction.objects.filter(workspace=workspace).values_list(
        "chunk_a__document__path", "chunk_a__chunk_index", "chunk_b__document__path", "chunk_b__chunk_index")
    return {frozenset([(path_a, index_a), (path_b, index_b)]) for path_a, index_a, path_b, index_b in rows}


def _change_corpus(documents, folder: Path) -> None:
    """A second delivery: revised facts, one rewritten file, one deleted file, one new version, one copy, and two
    current pages of one day that disagree (new editions that change a value are versions, not contradictions)."""
    rng = random.Random(5)
    newest = documents[2::3]
    for document in newest[:4]:  # facts change in the newest version
        document.sections = [_revise(s, rng) if s.group is not None else s for s in document.sections]
    rewritten = newest[4]
    rewritten.sections = [_section(rng, "scheduler") for _ in rewritten.sections]
    next_version = generate(chunks=15, sections_per_document=5, duplicate_share=0.4, seed=3)[-1]
    next_version.path, next_version.sections = "/family-x/v4.md", [
        _revise(s, rng) if s.group is not None else s for s in newest[5].sections]
    write_markdown([*newest[:5], next_version], folder)
    (folder / documents[0].path.lstrip("/")).unlink()
    copy = folder / "exports" / Path(documents[4].path).name
    copy.parent.mkdir(exist_ok=True)
    shutil.copy(folder / documents[4].path.lstrip("/"), copy)
    (folder / "kb").mkdir(exist_ok=True)
    page = ("# {title}\n\nThe session backend rejects cookies larger than {size} KB, and the password reset view no "
            "longer reveals whether an account exists.\n")
    (folder / "kb" / "sessions.md").write_text(page.format(title="Session guide", size=4))
    (folder / "kb" / "cookies.md").write_text(page.format(title="Cookie handbook", size=8))


@pytest.fixture
def three_workers(start_worker):
    """Three worker processes started side by side (start_worker waits for each in turn: seconds apiece)."""
    workers = [WorkerProcess(queues="ingest,merge") for _ in range(3)]
    try:
        for worker in workers:
            worker.wait_ready()
        yield workers
    finally:
        for worker in workers:  # all begin their warm shutdown at once
            if worker.proc.poll() is None:
                worker.proc.terminate()
        for worker in workers:
            worker.stop()


@pytest.mark.worker
def test_three_workers_merging_at_once_reach_the_sequential_state(three_workers, tmp_path):
    folder = tmp_path / "corpus"
    documents = generate(chunks=160, sections_per_document=5, duplicate_share=0.4, seed=11)
    write_markdown(documents, folder)
    parallel = WorkspaceFactory(slug="parallel")

    # Indexing and merging interleave: each indexed document queues its merge at once.
    call_command("ingest", str(folder), workspace=parallel.slug, timeout=120, verbosity=0)
    _wait_until_idle(three_workers)
    assert_invariants(parallel)
    # Re-indexing detaches old chunks while other documents merge; a missing file is archived.
    _change_corpus(documents, folder)
    call_command("ingest", str(folder), workspace=parallel.slug, timeout=120, verbosity=0)
    _wait_until_idle(three_workers)
    assert_invariants(parallel)
    assert Document.objects.filter(workspace=parallel, archived=True).count() == 1

    # The same final corpus, indexed and merged one document at a time in this process.
    sequential = WorkspaceFactory(slug="sequential")
    call_command("ingest", str(folder), workspace=sequential.slug, sync=True, verbosity=0)
    assert_invariants(sequential)

    expected = partition(sequential)
    assert len(expected) >= 25 and any(len(members) >= 3 for _, members in expected)
    assert partition(parallel) == expected
    assert _contradiction_pairs(parallel) == _contradiction_pairs(sequential)
    assert _contradiction_pairs(sequential)
