"""Local reads (a folder source's files): through no symbolic link at any step, and only regular files.

A folder is checked when walked, then read later: whatever is swapped in between (a parent folder for a link, a
file for a FIFO) must be refused at the read itself, without waiting on a pipe that nobody writes.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

from rag.storage import file_hash, source_read

SECRET = b"# Keys\n\nThe vault code is 0451.\n"


@pytest.fixture
def swapped(tmp_path, monkeypatch) -> Path:
    """share/sub/page.md as walked, then `sub` swapped for a link to a private folder holding a page.md too; the
    realpath check saw the folder before the swap."""
    page = tmp_path / "share" / "sub" / "page.md"
    page.parent.mkdir(parents=True)
    page.write_bytes(b"# Page\n\nPublic.\n")
    private = tmp_path / "private"
    private.mkdir()
    (private / "page.md").write_bytes(SECRET)
    (tmp_path / "share" / "sub").rename(tmp_path / "share" / "old-sub")
    (tmp_path / "share" / "sub").symlink_to(private)
    monkeypatch.setattr(os.path, "realpath", lambda path, **options: os.path.normpath(path))
    return page


def test_a_parent_folder_swapped_for_a_link_is_not_followed(swapped):
    with pytest.raises(OSError, match="symbolic link"):
        source_read(str(swapped), max_bytes=1_000)


def test_file_hash_follows_no_link_anywhere(swapped, tmp_path):
    with pytest.raises(OSError, match="symbolic link"):
        file_hash(swapped)
    (tmp_path / "link.md").symlink_to(tmp_path / "private" / "page.md")
    with pytest.raises(OSError, match="symbolic link"):
        file_hash(tmp_path / "link.md")
    assert file_hash(tmp_path / "private" / "page.md")  # a plain file still hashes


def _finishes(call) -> tuple[bool, BaseException | None]:
    """Run `call` in a thread for at most 5 s: (finished, what it raised)."""
    raised: list[BaseException | None] = [None]

    def run() -> None:
        try:
            call()
        except BaseException as exc:  # noqa: BLE001 - handed to the test
            raised[0] = exc

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(5)
    return not thread.is_alive(), raised[0]


@pytest.mark.parametrize("reader", ["source_read", "file_hash"])
def test_a_fifo_is_skipped_not_waited_on(reader, tmp_path):
    fifo = tmp_path / "notes.md"
    os.mkfifo(fifo)
    call = (lambda: source_read(str(fifo), max_bytes=1_000)) if reader == "source_read" else (lambda: file_hash(fifo))
    try:
        finished, raised = _finishes(call)
    finally:
        try:  # a reader stuck on the pipe (the bug) gets its end of file and the thread ends
            os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
        except OSError:
            pass
    assert finished, f"{reader} waited on a FIFO"
    assert isinstance(raised, OSError) and "not a regular file" in str(raised)
