"""Decide which date a document carries.

Retrieval prefers the newest version of a fact, so every document needs a
date, and the most trustworthy one: dates the author's tools wrote into the
file beat dates a person typed, which beat the file's modification time
(copying a file changes that). Every result is timezone-aware UTC.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta, timezone

from rag.dates import as_utc, parse_loose_date
from rag.parsers import ParsedDocument

# AsciiDoc attributes and reST docinfo belong in the document header; a date set far
# below is more likely an example in the text than the document's own date.
HEADER_DATE_MAX_LINE = 50

# Dates an office suite (core properties, meta.xml) or a mail program (the Date header) wrote,
# best first: like a PDF's ModDate, the tool recorded them, no person typed them.
OFFICE_DATE_SOURCES = {
    "odf": (("modified", "odf_modified"), ("created", "odf_created")),
    "ooxml": (("modified", "office_modified"), ("created", "office_created")),
    "mail": (("mail_date", "mail_date"),),
}
_OFFICE_FAMILY = {"odt": "odf", "docx": "ooxml", "pptx": "ooxml", "xlsx": "ooxml", "eml": "mail", "msg": "mail"}

# HTML <meta> names and properties that date a page, best first: a modification time
# says more about the text than a publication time.
HTML_DATE_META = ("article:modified_time", "date", "dcterms.date", "dc.date", "article:published_time")


@dataclass(frozen=True)
class DocDate:
    """A document's date and where it came from, so a surprising date can be explained."""

    value: datetime | None
    # pdf_moddate, pdf_creationdate, office_modified, office_created, odf_modified, odf_created,
    # mail_date, frontmatter, asciidoc_revdate, asciidoc_date, rst_date, html_meta_date, mtime,
    # upload_time, unknown
    source: str


_PDF_DATE = re.compile(
    r"(?:D:)?(?P<year>\d{4})(?P<month>\d{2})?(?P<day>\d{2})?(?P<hour>\d{2})?(?P<minute>\d{2})?(?P<second>\d{2})?"
    r"(?P<zone>Z(?:00'?00'?)?|[+-]\d{2}(?:'?\d{2}'?)?)?'?"
)


def parse_pdf_date(raw: str) -> datetime | None:
    """Parse a PDF date string (`D:20250314093000+02'00'`, `D:2025`, ...) to UTC; None if garbage.

    Missing parts default to the start of the period and a missing offset means UTC,
    which is what the PDF specification says a reader should assume.
    """
    match = _PDF_DATE.fullmatch(raw.strip()) if isinstance(raw, str) else None
    if match is None:
        return None
    parts = match.groupdict()
    zone = parts["zone"] or "Z"
    offset = timedelta(0)
    if not zone.startswith("Z"):
        digits = zone[1:].replace("'", "")
        offset = timedelta(hours=int(digits[:2]), minutes=int(digits[2:4] or 0))
        if zone[0] == "-":
            offset = -offset
    try:
        value = datetime(
            int(parts["year"]),
            int(parts["month"] or 1),
            int(parts["day"] or 1),
            int(parts["hour"] or 0),
            int(parts["minute"] or 0),
            int(parts["second"] or 0),
            tzinfo=timezone(offset),
        )
    except ValueError:  # month 13, offset of 24 hours and the like
        return None
    return value.astimezone(UTC)


def resolve_doc_date(parsed: ParsedDocument, mtime: float | None, *, mtime_source: str = "mtime") -> DocDate:
    """The best date for a document and where it came from; unparsable sources are skipped.

    mtime_source: "upload_time" when `mtime` is only when the file reached us (a browser that
    sent no lastModified), the least trustworthy date of all.
    """
    for key, source in (("ModDate", "pdf_moddate"), ("CreationDate", "pdf_creationdate")):
        raw = parsed.pdf_dates.get(key)
        if raw and (value := parse_pdf_date(raw)) is not None:
            return DocDate(value, source)
    for key, source in OFFICE_DATE_SOURCES.get(_OFFICE_FAMILY.get(parsed.format, ""), ()):
        if (value := parse_loose_date(parsed.office_dates.get(key))) is not None and not _template_date(parsed, value):
            return DocDate(value, source)
    if parsed.format == "markdown" and (value := parse_loose_date(parsed.metadata.get("date"))) is not None:
        return DocDate(value, "frontmatter")
    if parsed.format == "asciidoc":
        for name, source in (("revdate", "asciidoc_revdate"), ("date", "asciidoc_date")):
            if (value := _header_date(parsed, name)) is not None:
                return DocDate(value, source)
    if parsed.format == "rst" and (value := _header_date(parsed, "date")) is not None:
        return DocDate(value, "rst_date")
    if parsed.format == "html":
        # Meta names are case-insensitive in practice: DC.date, dc.date and DC.Date all occur.
        meta = {str(key).casefold(): value for key, value in parsed.metadata.items()}
        for name in HTML_DATE_META:
            if (value := parse_loose_date(meta.get(name))) is not None:
                return DocDate(value, "html_meta_date")
    if mtime is not None:
        return DocDate(datetime.fromtimestamp(mtime, tz=UTC), mtime_source)
    return DocDate(None, "unknown")


# The package's own time stamp has no time zone: a core date this much older is still the same save.
_PACKAGE_STAMP_SLACK = timedelta(days=1)
# The core dates python-docx's and python-pptx's default templates carry: copied into every file they write
# and never updated, so a file made with them today says 2013 unless its maker set a date.
LIBRARY_TEMPLATE_DATES = frozenset({
    datetime(2013, 12, 23, 23, 15, tzinfo=UTC),  # python-docx default.docx: created and modified
    datetime(2013, 1, 27, 9, 14, 16, tzinfo=UTC),  # python-pptx default.pptx: created
    datetime(2013, 1, 27, 9, 15, 58, tzinfo=UTC),  # python-pptx default.pptx: modified
})


def _template_date(parsed: ParsedDocument, value: datetime) -> bool:
    """A library template's core date in a package zipped later: the file's other evidence (its modification
    time, the upload) wins over it. A date its maker set is kept, and so is any date in a package without
    time stamps (Word, LibreOffice), where nothing says it is wrong."""
    written = parsed.office_dates.get("package_written")
    return (as_utc(value) in LIBRARY_TEMPLATE_DATES and isinstance(written, datetime)
            and as_utc(value) < as_utc(written) - _PACKAGE_STAMP_SLACK)


def _header_date(parsed: ParsedDocument, name: str) -> datetime | None:
    line = parsed.metadata_lines.get(name)
    if line is None or line > HEADER_DATE_MAX_LINE:
        return None
    return parse_loose_date(parsed.metadata.get(name))
