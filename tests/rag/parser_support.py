"""Helpers shared by the parser tests."""

from __future__ import annotations

from pathlib import Path

from rag.parsers import ParsedDocument, parse_document

FIXTURES = Path(__file__).parent / "fixtures"
DEMO_CORPUS = Path(__file__).parents[2] / "demo" / "corpus"

LOREM = (
    "Docent keeps every version of a document and prefers the newest one when it answers. "
    "Operators schedule ingestion at night so that the morning questions see fresh text. "
)


def parse_fixture(name: str) -> ParsedDocument:
    path = FIXTURES / name
    return parse_document(path, path.read_bytes())


def paths(parsed: ParsedDocument) -> list[tuple[str, ...]]:
    return [section.heading_path for section in parsed.sections]


def section(parsed: ParsedDocument, heading: str) -> str:
    return next(s.text for s in parsed.sections if s.heading_path[-1] == heading)


def many_entry_zip(entries: int, *, suffix: str = ".txt") -> bytes:
    """A zip of `entries` empty stored files, written by hand in well under a second (zipfile takes ~20 s
    for 200,000): the shape of an archive that attacks a parser with its directory, not its bytes."""
    import struct

    local, directory, offset = [], [], 0
    for number in range(entries):
        name = f"{number:07d}{suffix}".encode()
        header = struct.pack("<4s5H3I2H", b"PK\x03\x04", 20, 0, 0, 0, 0x21, 0, 0, 0, len(name), 0) + name
        directory.append(struct.pack("<4s6H3I5H2I", b"PK\x01\x02", 20, 20, 0, 0, 0, 0x21, 0, 0, 0, len(name),
                                     0, 0, 0, 0, 0, offset) + name)
        local.append(header)
        offset += len(header)
    central = b"".join(directory)
    tail = b""
    if entries >= 0xFFFF:  # zip64: the count no longer fits the end record
        tail = (struct.pack("<4sQ2H2I4Q", b"PK\x06\x06", 44, 45, 45, 0, 0, entries, entries, len(central), offset)
                + struct.pack("<4sIQI", b"PK\x06\x07", 0, offset + len(central), 1))
    shown = min(entries, 0xFFFF)
    end = struct.pack("<4s4H2IH", b"PK\x05\x06", 0, 0, shown, shown, len(central), offset, 0)
    return b"".join(local) + central + tail + end
