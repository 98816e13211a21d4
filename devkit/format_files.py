"""Real Office, OpenDocument, mail and scanned files, written by the libraries that make them.

The tests read what these write, so each format is checked on a file as the tool saves it,
not on a hand-made imitation. Page images use Pillow's built-in font, so no system font is needed.
"""

from __future__ import annotations

import io
import zipfile
from datetime import datetime
from email.message import EmailMessage

import docx
import openpyxl
import pptx
from docx.oxml import OxmlElement
from docx.oxml.ns import qn
from odf import dc, meta
from odf.opendocument import OpenDocumentText
from odf.table import Table, TableCell, TableRow
from odf.text import H, List, ListItem, P
from pptx.util import Inches

LIMITS = [["Setting", "2.0", "2.1"], ["Rate limit", "600 per minute", "1000 per minute"], ["Token TTL", "12h", "24h"]]


def _saved(document) -> bytes:
    buffer = io.BytesIO()
    document.save(buffer)
    return buffer.getvalue()


def write_docx(*, title: str | None = "Deployment Guide", version: str | None = None, revision: int = 17,
               modified: datetime | None = datetime(2025, 3, 14, 9, 30), title_style: bool = False) -> bytes:
    document = docx.Document()
    properties = document.core_properties
    properties.title = title or ""
    properties.revision = revision
    properties.category = "Guide"
    if modified:
        properties.modified = modified
    if title_style:
        document.add_paragraph("Styled Title", style="Title")
    document.add_heading("Install", level=1)
    document.add_paragraph("Run the installer on every gateway node before the upgrade window.")
    document.add_paragraph("Check the free disk space", style="List Bullet")
    document.add_paragraph("Open port 8443 on the firewall", style="List Bullet")
    document.add_heading("Limits", level=2)
    table = document.add_table(rows=len(LIMITS), cols=3)
    for row_index, row in enumerate(LIMITS):
        for column, value in enumerate(row):
            table.cell(row_index, column).text = value
    outlined = document.add_paragraph("Rollback")  # a heading by outline level, not by style
    outlined._p.get_or_add_pPr().append(_outline_level(0))
    document.add_paragraph("Restore the snapshot taken before the upgrade.")
    data = _saved(document)
    return with_custom_property(data, "version", version) if version else data


def _outline_level(level: int):
    element = OxmlElement("w:outlineLvl")
    element.set(qn("w:val"), str(level))
    return element


def with_custom_property(data: bytes, name: str, value: str) -> bytes:
    """Add docProps/custom.xml as Word writes it (python-docx has no API for custom properties)."""
    custom = (
        '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>'
        '<Properties xmlns="http://schemas.openxmlformats.org/officeDocument/2006/custom-properties" '
        'xmlns:vt="http://schemas.openxmlformats.org/officeDocument/2006/docPropsVTypes">'
        f'<property fmtid="{{D5CDD505-2E9C-101B-9397-08002B2CF9AE}}" pid="2" name="{name}"><vt:lpwstr>{value}</vt:lpwstr>'
        "</property></Properties>"
    )
    source, target = zipfile.ZipFile(io.BytesIO(data)), io.BytesIO()
    with zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as out:
        for member in source.infolist():
            content = source.read(member.filename)
            if member.filename == "[Content_Types].xml":
                content = content.replace(b"</Types>", b'<Override PartName="/docProps/custom.xml" ContentType='
                                          b'"application/vnd.openxmlformats-officedocument.custom-properties+xml"/></Types>')
            out.writestr(member, content)
        out.writestr("docProps/custom.xml", custom)
    return target.getvalue()


def write_pptx(*, title: str = "Release 3.0 Overview", continued: str = "") -> bytes:
    """continued: the title of a third slide that carries on the second ("New limits (cont.)")."""
    presentation = pptx.Presentation()
    presentation.core_properties.title = title
    presentation.core_properties.modified = datetime(2025, 9, 1, 8, 0)
    opening = presentation.slides.add_slide(presentation.slide_layouts[1])
    opening.shapes.title.text = "What changes in 3.0"
    opening.placeholders[1].text_frame.text = "The API base path moves to /api/v3"
    opening.notes_slide.notes_text_frame.text = "Remind operators to update their clients."
    limits = presentation.slides.add_slide(presentation.slide_layouts[5])
    limits.shapes.title.text = "New limits"
    right = limits.shapes.add_textbox(Inches(5), Inches(2), Inches(3), Inches(1))
    right.text_frame.text = "Right column"
    left = limits.shapes.add_textbox(Inches(1), Inches(2), Inches(3), Inches(1))
    left.text_frame.text = "Left column"
    table = limits.shapes.add_table(2, 2, Inches(1), Inches(4), Inches(6), Inches(1)).table
    for (row, column), value in {(0, 0): "Setting", (0, 1): "3.0", (1, 0): "Rate limit", (1, 1): "2000 per minute"}.items():
        table.cell(row, column).text = value
    if continued:
        more = presentation.slides.add_slide(presentation.slide_layouts[5])
        more.shapes.title.text = continued
        more.shapes.add_textbox(Inches(1), Inches(2), Inches(6), Inches(1)).text_frame.text = "Burst: 200 requests."
    return _saved(presentation)


def write_xlsx(*, rows: int = 3, sheets: tuple[str, ...] = ("Limits",)) -> bytes:
    workbook = openpyxl.Workbook(write_only=True)
    workbook.properties.title = "Gateway limits"
    for name in sheets:
        sheet = workbook.create_sheet(name)
        sheet.append(["Setting", "Value", "Since"])
        sheet.append(["Rate limit", 1000, datetime(2025, 2, 1)])
        for number in range(rows - 2):
            sheet.append([f"Key {number}", number, None])
    buffer = io.BytesIO()
    workbook.save(buffer)
    return buffer.getvalue()


def write_odt(*, version: str | None = "4.2") -> bytes:
    document = OpenDocumentText()
    document.meta.addElement(dc.Title(text="Operations Handbook"))
    document.meta.addElement(dc.Date(text="2025-04-01T10:00:00.123456789"))
    document.meta.addElement(meta.CreationDate(text="2024-01-05T08:00:00"))
    document.meta.addElement(meta.EditingCycles(text="31"))
    if version:
        document.meta.addElement(meta.UserDefined(name="Version", text=version))
    document.text.addElement(H(outlinelevel=1, text="Backups"))
    document.text.addElement(P(text="Nightly backups run at 02:00 UTC."))
    items = List()
    for text in ("Check the backup log", "Test a restore monthly"):
        item = ListItem()
        item.addElement(P(text=text))
        items.addElement(item)
    document.text.addElement(items)
    document.text.addElement(H(outlinelevel=2, text="Retention"))
    table = Table()
    for row in (["Data", "Kept"], ["Snapshots", "30 days"]):
        table_row = TableRow()
        table.addElement(table_row)
        for value in row:
            cell = TableCell()
            cell.addElement(P(text=value))
            table_row.addElement(cell)
    document.text.addElement(table)
    buffer = io.BytesIO()
    document.write(buffer)
    return buffer.getvalue()


def write_eml(*, html: bool = True, attachments: dict[str, bytes] | None = None,
              subject: str = "Rate limit raised to 1000 requests per minute") -> bytes:
    message = EmailMessage()
    message["Subject"] = subject
    message["From"] = "Ana Ops <ana@example.com>"
    message["To"] = "gateway-team@example.com, sre@example.com"
    message["Cc"] = "lead@example.com"
    message["Date"] = "Fri, 14 Mar 2025 09:30:00 +0200"
    message.set_content("Hello team,\n\nFrom 1 April the rate limit is 1000 requests per minute per key.\n")
    if html:
        message.add_alternative(
            "<html><body><h2>The change</h2><p>From 1 April the rate limit is <b>1000</b> requests per minute "
            "per key.</p><table><tr><th>Setting</th><th>Value</th></tr><tr><td>Rate limit</td><td>1000</td></tr>"
            "</table><script>alert(1)</script></body></html>",
            subtype="html",
        )
    for name, data in (attachments or {}).items():
        message.add_attachment(data, maintype="application", subtype="octet-stream", filename=name)
    return bytes(message)


def write_huge_xlsx(path, *, target_bytes: int) -> int:
    """A spreadsheet of about target_bytes on disk, its sheet streamed row by row (never held in
    memory) and stored uncompressed, as a tool exporting a big table writes it. Returns the rows."""
    template = zipfile.ZipFile(io.BytesIO(write_xlsx()))
    rows = 0
    with zipfile.ZipFile(path, "w", zipfile.ZIP_STORED) as out:
        for member in template.infolist():
            if member.filename != "xl/worksheets/sheet1.xml":
                out.writestr(member.filename, template.read(member.filename))
        with out.open("xl/worksheets/sheet1.xml", "w", force_zip64=True) as sheet:
            sheet.write(b'<?xml version="1.0" encoding="UTF-8"?><worksheet xmlns="http://schemas.openxmlformats.org/'
                        b'spreadsheetml/2006/main"><sheetData>')
            written = 0
            while written < target_bytes:
                batch = b"".join(
                    b'<row r="%d"><c r="A%d" t="inlineStr"><is><t>Customer %d</t></is></c><c r="B%d"><v>%d</v></c>'
                    b'<c r="C%d" t="inlineStr"><is><t>region-%d</t></is></c></row>'
                    % (row, row, row, row, row * 7, row, row % 13)
                    for row in range(rows + 1, rows + 10_001)
                )
                sheet.write(batch)
                written += len(batch)
                rows += 10_000
            sheet.write(b"</sheetData></worksheet>")
    return rows
