"""What the Office Open XML formats (.docx, .pptx, .xlsx) and OpenDocument share: opening the
zip safely, and reading the properties an office suite writes (title, dates, custom version).

Every one of these files is a zip, so every one can be a zip bomb, a renamed file, an old
binary .doc, or an encrypted package (an OLE file, not a zip at all); each gets a reason a
person can act on before any library reads it.
"""

from __future__ import annotations

import io
import zipfile
from collections.abc import Callable
from datetime import datetime
from typing import Any, TypeVar
from xml.etree import ElementTree

from rag.ingest.parsers._common import Block, Heading, ParseError, optional_str, squash, take_title_heading

_OLE_MAGIC = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"
_ENCRYPTED_STREAM = "EncryptedPackage".encode("utf-16-le")

# A zip member that expands past this many times its compressed size, to more than
# _BOMB_MIN_BYTES, is a bomb: real XML compresses 5-20x, a few members reach 100x.
_BOMB_RATIO = 200
_BOMB_MIN_BYTES = 50 * 1024 * 1024
_CUSTOM_NS = "{http://schemas.openxmlformats.org/officeDocument/2006/custom-properties}"

LEGACY_NAMES = {"docx": ".doc", "pptx": ".ppt", "xlsx": ".xls", "odt": ".sxw"}


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


def core_metadata(properties: Any) -> tuple[dict[str, str], dict[str, datetime]]:
    """Metadata and dates from OOXML core properties (python-docx, python-pptx and openpyxl
    name them alike, openpyxl in camelCase). The revision is kept as metadata only: it counts
    saves, it is not a release."""
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
    return metadata, dates


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
