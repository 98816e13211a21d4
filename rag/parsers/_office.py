"""What the Office Open XML formats (.docx, .pptx, .xlsx) and OpenDocument share: opening the
zip safely, and reading the properties an office suite writes (title, dates, custom version).

Every one of these files is a zip, so every one can be a zip bomb, a renamed file, an old
binary .doc, or an encrypted package (an OLE file, not a zip at all); each gets a reason a
person can act on before any library reads it.
"""

from __future__ import annotations

import io
import struct
import zipfile
from collections.abc import Callable
from datetime import UTC, datetime
from typing import IO, Any, TypeVar
from xml.etree import ElementTree

from rag.parsers._common import Block, Heading, ParseError, optional_str, squash, take_title_heading

_OLE_MAGIC = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"
_ENCRYPTED_STREAM = "EncryptedPackage".encode("utf-16-le")

# A zip member that expands past this many times its compressed size, to more than
# _BOMB_MIN_BYTES, is a bomb: real XML compresses 5-20x, a few members reach 100x.
_BOMB_RATIO = 200
_BOMB_MIN_BYTES = 50 * 1024 * 1024
_CUSTOM_NS = "{http://schemas.openxmlformats.org/officeDocument/2006/custom-properties}"
# Parts of an Office file, counted before zipfile reads its directory: a long report has a few hundred
# (one per image), a workbook one per sheet; a million tiny entries is an attack on the parser's memory.
_MAX_PARTS = 20_000

_END_OF_DIRECTORY = b"PK\x05\x06"  # the end-of-central-directory record: 22 bytes, then a comment of up to 64 KB
_ZIP64_LOCATOR, _ZIP64_END = b"PK\x06\x07", b"PK\x06\x06"
_DIRECTORY_ENTRY = b"PK\x01\x02"

LEGACY_NAMES = {"docx": ".doc", "pptx": ".ppt", "xlsx": ".xls", "odt": ".sxw"}


def zip_entry_count(file: IO[bytes]) -> int:
    """How many entries a zip holds, read from its end record and its directory's bytes, never parsed.

    zipfile.ZipFile builds an object for every entry of the central directory before anyone can
    count them: a 1 GB zip of millions of tiny entries costs seconds and gigabytes before any
    member cap applies. The count is the larger of what the end record declares (zip64 too) and
    the entry signatures in the directory's bytes, so a record that understates it gains nothing.
    Raises zipfile.BadZipFile when there is no end record. The file's position is left anywhere.
    """
    size = file.seek(0, io.SEEK_END)
    tail_start = max(0, size - 22 - 0xFFFF)
    file.seek(tail_start)
    tail = file.read()
    at = tail.rfind(_END_OF_DIRECTORY)
    if at < 0 or len(tail) - at < 22:
        raise zipfile.BadZipFile("no end of central directory record: not a zip archive")
    entries, directory_size = struct.unpack("<H2xI", tail[at + 10:at + 18])
    directory_end = tail_start + at
    file.seek(max(0, directory_end - 20))
    locator = file.read(20)
    if locator.startswith(_ZIP64_LOCATOR) and directory_end >= 20:
        file.seek(struct.unpack("<Q", locator[8:16])[0])
        record = file.read(56)
        if record.startswith(_ZIP64_END) and len(record) == 56:
            entries, directory_size = struct.unpack("<QQ", record[32:48])
            directory_end -= 20 + 12 + struct.unpack("<Q", record[4:12])[0]  # the directory ends where it starts
    signatures, position = 0, max(0, directory_end - directory_size)
    file.seek(position)
    carry = b""
    while position < directory_end:
        piece = file.read(min(1024 * 1024, directory_end - position))
        if not piece:
            break
        position += len(piece)
        signatures += (carry + piece).count(_DIRECTORY_ENTRY)
        carry = piece[-3:]  # a signature split between two reads is counted once, in the second
    return max(entries, signatures)


def checked_zip(data: bytes, kind: str, *, max_unpacked_bytes: int, streamed: tuple[str, ...] = ()) -> zipfile.ZipFile:
    """The file as a zip, once it is known to be one that unpacks to a sane size.

    streamed: member prefixes a parser reads as a stream under its own bound (the sheets of
    a workbook), left out of the total but still held to the ratio test.
    """
    if data.startswith(_OLE_MAGIC):
        if _ENCRYPTED_STREAM in data:
            raise ParseError(f"password-protected .{kind}: remove the password in the office suite and upload it again")
        legacy = LEGACY_NAMES.get(kind, "binary")
        raise ParseError(f"old binary Office file ({legacy}) named .{kind}: save it as .{kind} and upload it again")
    try:
        if (parts := zip_entry_count(io.BytesIO(data))) > _MAX_PARTS:
            raise ParseError(f"refused .{kind}: {parts} parts, over the {_MAX_PARTS} an office file may hold")
        bundle = zipfile.ZipFile(io.BytesIO(data))
        members = bundle.infolist()
    except (zipfile.BadZipFile, ValueError, EOFError) as error:
        raise ParseError(f"not a readable .{kind}: the file is damaged or not a .{kind} at all ({error})") from error
    total = 0
    for member in members:
        if member.file_size > _BOMB_MIN_BYTES and member.file_size > _BOMB_RATIO * max(member.compress_size, 1):
            raise ParseError(
                f"refused .{kind}: {member.filename} would unpack to {member.file_size / 1024 / 1024:.0f} MB from "
                f"{member.compress_size / 1024:.0f} KB (a zip bomb)"
            )
        if not member.filename.startswith(streamed):
            total += member.file_size
    if total > max_unpacked_bytes:
        raise ParseError(
            f"refused .{kind}: it would unpack to {total / 1024 / 1024:.0f} MB, over the "
            f"{max_unpacked_bytes / 1024 / 1024:.0f} MB limit"
        )
    return bundle


Package = TypeVar("Package")


def open_package(open_with: Callable[[io.BytesIO], Package], data: bytes, kind: str) -> Package:
    """The file through its library (python-docx, python-pptx, openpyxl), any failure a ParseError."""
    try:
        return open_with(io.BytesIO(data))
    except (KeyError, ValueError, zipfile.BadZipFile) as error:
        raise ParseError(f"not a readable .{kind}: {squash(str(error)) or type(error).__name__}") from error
    except Exception as error:  # noqa: BLE001 - the libraries and lxml raise their own errors on damaged files
        raise ParseError(f"not a readable .{kind}: the file is damaged ({type(error).__name__})") from error


def core_metadata(properties: Any, bundle: zipfile.ZipFile | None = None) -> tuple[dict[str, str], dict[str, datetime]]:
    """Metadata and dates from OOXML core properties (python-docx, python-pptx and openpyxl
    name them alike, openpyxl in camelCase). The revision is kept as metadata only: it counts
    saves, it is not a release. With the package, "package_written" is when its parts were
    zipped, which rag.ingest.dates weighs the core dates against (a template's stay behind)."""
    metadata: dict[str, str] = {}
    for key, names in (
        ("title", ("title",)), ("subject", ("subject",)), ("author", ("author", "creator")),
        ("last_modified_by", ("last_modified_by", "lastModifiedBy")), ("revision", ("revision",)),
        ("keywords", ("keywords",)), ("category", ("category",)), ("description", ("comments", "description")),
    ):  # fmt: skip
        for name in names:
            if (value := optional_str(getattr(properties, name, None))) is not None:
                metadata[key] = value
                break
    dates = {
        key: value
        for key, value in (("modified", getattr(properties, "modified", None)),
                           ("created", getattr(properties, "created", None)))
        if isinstance(value, datetime)
    }  # fmt: skip
    if bundle is not None and (written := package_written(bundle)) is not None:
        dates["package_written"] = written
    return metadata, dates


def package_written(bundle: zipfile.ZipFile) -> datetime | None:
    """The newest time stamp of the package's parts, or None where the writer stamps none.

    Libraries (python-docx, python-pptx, openpyxl) stamp each part with the time they zip it;
    Word and LibreOffice leave the DOS epoch (1980), which says nothing. The stamp has no
    time zone: it is read as UTC, a day's slack is left for that where it is compared.
    """
    stamps = [member.date_time for member in bundle.infolist() if member.date_time[0] > 1980]
    if not stamps:
        return None
    try:
        return datetime(*max(stamps), tzinfo=UTC)
    except ValueError:  # a damaged stamp (month 0, day 31 of a 30-day month)
        return None


def custom_properties(bundle: zipfile.ZipFile) -> dict[str, str]:
    """docProps/custom.xml as name -> text ("version" -> "2.1"): python-docx has no API for it."""
    try:
        raw = bundle.read("docProps/custom.xml")
    except KeyError:
        return {}
    try:
        root = ElementTree.fromstring(raw)
    except ElementTree.ParseError:
        return {}
    found: dict[str, str] = {}
    for prop in root.iter(f"{_CUSTOM_NS}property"):
        name = prop.get("name")
        value = next((optional_str(child.text) for child in prop), None)
        if name and value:
            found[name] = value
    return found


def with_custom_version(metadata: dict[str, Any], custom: dict[str, str]) -> None:
    """Custom properties join the metadata; a "version" one (any case) is the version label's source."""
    for name, value in custom.items():
        key = "version" if name.casefold() in ("version", "docversion", "document version") else name
        metadata.setdefault(key, value)


def placeholder_free(title: str | None) -> str | None:
    """Office tools leave "PowerPoint Presentation" or "Document1" as a title; the content says more."""
    if title is None:
        return None
    lowered = title.casefold()
    if lowered in ("powerpoint presentation", "presentation", "document", "untitled", "slide 1") or (
        lowered.startswith(("document", "presentation", "book")) and lowered[-1:].isdigit() and len(lowered) < 14
    ):
        return None
    return title


def office_title(blocks: list[Block], explicit: str | None) -> tuple[str | None, list[Block]]:
    """The title and the outline without it. In a word processor "Heading 1" starts a chapter and
    the title has its own style or property, so with an explicit title a first heading goes only
    when it repeats it; without one, the lone opening H1 titles the document as in Markdown."""
    if explicit is None:
        return take_title_heading(blocks, None)
    first = next((index for index, block in enumerate(blocks) if isinstance(block, Heading)), None)
    if first is not None and squash(blocks[first].text).casefold() == squash(explicit).casefold():  # type: ignore[union-attr]
        return explicit, [*blocks[:first], *blocks[first + 1 :]]
    return explicit, list(blocks)
