"""A sibling document as the bytes of a Markdown, text, HTML or Word file, and the text read back from those bytes.

Rendering is deterministic (a .docx is repacked with fixed zip times), so the generator's output can be compared
with the committed corpus byte for byte. `file_text` is what the question checks read: the words a reader of the
file sees, without markup, so a pattern is checked against what the file states, whatever its format.
"""

from __future__ import annotations

import io
import zipfile
from datetime import UTC, datetime
from html import escape
from html.parser import HTMLParser

import docx

from demo.siblings.common import PROVIDER, Block, Doc


def render(doc: Doc) -> bytes:
    return {"md": _markdown, "txt": _text, "html": _html, "docx": _docx}[doc.fmt](doc)


def _markdown(doc: Doc) -> bytes:
    lines = ["---", f"title: {doc.title}", f"date: {doc.frontmatter.get('date', doc.doc_date.isoformat())}"]
    lines += [f"{key}: {value}" for key, value in doc.frontmatter.items() if key != "date"]
    lines += ["---", ""]
    for block in doc.blocks:
        if block[0] == "heading":
            lines += ["#" * block[1] + " " + block[2], ""]
        elif block[0] == "para":
            lines += [block[1], ""]
        elif block[0] == "list":
            lines += [f"- {item}" for item in block[1]] + [""]
        else:
            lines += ["| Item | Value |", "| --- | --- |"] + [f"| {key} | {value} |" for key, value in block[1]] + [""]
    return ("\n".join(lines).rstrip() + "\n").encode("utf-8")


def _text(doc: Doc) -> bytes:
    lines = [doc.title.upper(), "=" * len(doc.title), ""]
    number = 0
    for block in doc.blocks:
        if block[0] == "heading":
            if block[1] == 1:
                continue  # the banner above is the title
            number += 1
            lines += [f"{number}. {block[2].upper()}", ""]
        elif block[0] == "para":
            lines += [block[1], ""]
        elif block[0] == "list":
            lines += [f"  * {item}" for item in block[1]] + [""]
        else:
            width = max(len(key) for key, _ in block[1]) + 2
            lines += [f"  {(key + ':').ljust(width)} {value}" for key, value in block[1]] + [""]
    return ("\n".join(lines).rstrip() + "\n").encode("utf-8")


def _html(doc: Doc) -> bytes:
    parts = ["<!DOCTYPE html>", '<html lang="en">', "<head>", '<meta charset="utf-8">',
             f"<title>{escape(doc.title)}</title>", f'<meta name="date" content="{doc.doc_date.isoformat()}">',
             "<style>body { font-family: sans-serif; max-width: 48em; }</style>", "</head>", "<body>",
             f'<nav><a href="/">{PROVIDER} intranet</a> &middot; <a href="/documents">Documents</a></nav>',
             "<main>"]
    for block in doc.blocks:
        if block[0] == "heading":
            parts.append(f"<h{block[1]}>{escape(block[2])}</h{block[1]}>")
        elif block[0] == "para":
            parts.append(f"<p>{escape(block[1])}</p>")
        elif block[0] == "list":
            parts.append("<ul>" + "".join(f"<li>{escape(item)}</li>" for item in block[1]) + "</ul>")
        else:
            parts.append("<table>" + "".join(f"<tr><th>{escape(key)}</th><td>{escape(value)}</td></tr>"
                                             for key, value in block[1]) + "</table>")
    parts += ["</main>", f"<footer>&copy; {doc.doc_date.year} {PROVIDER}. Internal.</footer>", "</body>", "</html>"]
    return ("\n".join(parts) + "\n").encode("utf-8")


def _docx(doc: Doc) -> bytes:
    document = docx.Document()
    properties = document.core_properties
    stamp = datetime(doc.doc_date.year, doc.doc_date.month, doc.doc_date.day, 9, 30, tzinfo=UTC)
    properties.title, properties.author, properties.last_modified_by = doc.title, PROVIDER, PROVIDER
    properties.created = properties.modified = stamp
    properties.comments, properties.revision = "", 1
    for block in doc.blocks:
        if block[0] == "heading":
            document.add_heading(block[2], level=0 if block[1] == 1 else block[1] - 1)
        elif block[0] == "para":
            document.add_paragraph(block[1])
        elif block[0] == "list":
            for item in block[1]:
                document.add_paragraph(item, style="List Bullet")
        else:
            table = document.add_table(rows=0, cols=2)
            for key, value in block[1]:
                cells = table.add_row().cells
                cells[0].text, cells[1].text = key, value
    written = io.BytesIO()
    document.save(written)
    return _repacked(written.getvalue())


def _repacked(data: bytes) -> bytes:
    """The same zip with fixed entry times: python-docx stamps each entry with the time of writing."""
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(data)) as source, zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as target:
        for info in source.infolist():
            entry = zipfile.ZipInfo(info.filename, date_time=(2000, 1, 1, 0, 0, 0))
            entry.compress_type = zipfile.ZIP_DEFLATED
            target.writestr(entry, source.read(info.filename))
    return out.getvalue()


# --- reading back ----------------------------------------------------------------------------------------


class _VisibleText(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self._hidden = 0

    def handle_starttag(self, tag: str, attrs) -> None:
        if tag in ("style", "script", "title"):
            self._hidden += 1
        self.parts.append(" ")

    def handle_endtag(self, tag: str) -> None:
        if tag in ("style", "script", "title"):
            self._hidden -= 1
        self.parts.append(" ")

    def handle_data(self, data: str) -> None:
        if not self._hidden:
            self.parts.append(data)


def file_text(name: str, data: bytes) -> str:
    """The words of a corpus file, lower-cased with whitespace collapsed (as answer patterns are matched)."""
    if name.endswith(".docx"):
        document = docx.Document(io.BytesIO(data))
        pieces = [paragraph.text for paragraph in document.paragraphs]
        pieces += [cell.text for table in document.tables for row in table.rows for cell in row.cells]
        text = "\n".join(pieces)
    elif name.endswith(".html"):
        parser = _VisibleText()
        parser.feed(data.decode("utf-8"))
        text = "".join(parser.parts)
    else:
        text = data.decode("utf-8")
    return " ".join(text.lower().split())


def block_words(blocks: list[Block]) -> int:
    """How long a document is, in words (the corpus summary)."""
    count = 0
    for block in blocks:
        if block[0] == "heading":
            count += len(block[2].split())
        elif block[0] == "para":
            count += len(block[1].split())
        elif block[0] == "list":
            count += sum(len(item.split()) for item in block[1])
        else:
            count += sum(len(f"{key} {value}".split()) for key, value in block[1])
    return count
