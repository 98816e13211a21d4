"""E-mail: .eml through the standard library's `email`, Outlook .msg through extract-msg.

The subject titles the message, the Date header dates it (the sender's mail program wrote
it, so it is trusted like a PDF's ModDate), sender and recipients become metadata, an HTML
body goes through the HTML reader (its headings and tables survive), and attachments are
handed back for the pipeline to index as documents of their own.
"""

from __future__ import annotations

import email
import email.policy
import io
from dataclasses import replace
from datetime import UTC, datetime
from email.message import EmailMessage
from email.utils import parsedate_to_datetime
from typing import Any

import extract_msg
import olefile

from rag.parsers._common import Attachment, ParsedDocument, ParseError, Section, decode_text, squash
from rag.parsers.html import parse_html
from rag.parsers.text import parse_text

_MAX_ATTACHMENTS = 50  # a mail carrying more is a bulk export; its first ones are still indexed


def parse_eml(stem: str, data: bytes) -> ParsedDocument:
    message = email.message_from_bytes(data, policy=email.policy.default)
    if not isinstance(message, EmailMessage) or not (message.keys() or message.get_payload()):
        raise ParseError("not a readable e-mail: no headers")
    if not any(message.get(name) for name in ("From", "To", "Subject", "Date", "Message-ID")):
        raise ParseError("not an e-mail: none of From, To, Subject, Date or Message-ID is set")
    html = plain = None
    for preference in ("html", "plain"):
        part = message.get_body(preferencelist=(preference,))
        if part is not None:
            content = _part_text(part)
            html, plain = (content, plain) if preference == "html" else (html, content)
    attachments = [attachment for part in message.iter_attachments() if (attachment := _eml_attachment(part))]
    return _mail_document(
        stem=stem, doc_format="eml", subject=_header(message, "Subject"), sender=_header(message, "From"),
        to=_header(message, "To"), cc=_header(message, "Cc"), sent=_mail_date(message.get("Date")),
        html=html, plain=plain, attachments=attachments,
    )


def parse_msg(stem: str, data: bytes) -> ParsedDocument:
    if not olefile.isOleFile(io.BytesIO(data)):
        raise ParseError("not a readable .msg: the file is not an Outlook message (no OLE container)")
    try:
        message = extract_msg.openMsg(data, delayAttachments=False)
    except Exception as error:  # noqa: BLE001 - extract-msg and olefile raise many kinds on damaged files
        raise ParseError(f"not a readable .msg: {squash(str(error))[:200] or type(error).__name__}") from error
    try:
        if not isinstance(message, extract_msg.Message):
            raise ParseError(f"unsupported .msg: a {type(message).__name__}, not a mail message")
        html_body = message.htmlBody
        html = decode_text(html_body)[0] if isinstance(html_body, bytes) and html_body.strip() else None
        sent = message.date if isinstance(message.date, datetime) else _mail_date(message.date)
        attachments = [found for attachment in message.attachments[:_MAX_ATTACHMENTS]
                       if (found := _msg_attachment(attachment))]
        return _mail_document(
            stem=stem, doc_format="msg", subject=squash(message.subject or ""), sender=squash(message.sender or ""),
            to=squash(message.to or ""), cc=squash(message.cc or ""),
            sent=sent.astimezone(UTC) if sent and sent.tzinfo else sent, html=html, plain=message.body or None,
            attachments=attachments,
        )
    finally:
        message.close()


def _msg_attachment(attachment: Any) -> Attachment | None:
    """A file attached to a .msg, or a message attached to it (a forward) as .eml bytes: both are indexed."""
    payload = getattr(attachment, "data", None)
    name = attachment.longFilename or attachment.shortFilename
    if isinstance(payload, extract_msg.Message):
        try:
            payload = bytes(payload.asEmailMessage())
        except Exception:  # noqa: BLE001 - a damaged inner message: the outer one is still read
            return None
        title = squash(attachment.data.subject or "") or "attached message"
        name = name if name and name.lower().endswith((".eml", ".msg")) else f"{title[:80]}.eml"
        name = name[:-4] + ".eml" if name.lower().endswith(".msg") else name
    return Attachment(name=str(name), data=payload) if isinstance(payload, bytes) and name else None


def _mail_document(
    *, stem: str, doc_format: str, subject: str, sender: str, to: str, cc: str, sent: datetime | None,
    html: str | None, plain: str | None, attachments: list[Attachment],
) -> ParsedDocument:
    title = subject or stem
    body = parse_html(stem, html) if html and html.strip() else parse_text(stem, plain) if plain and plain.strip() else None
    # The body's own title (an HTML <title>, a first line) gives way to the subject; unless it is the subject
    # again, it stays as the body's first text: a short mail's one line is its whole message.
    sections = [replace(section, heading_path=(title, *section.heading_path[1:])) for section in body.sections] if body else []
    if body and squash(body.title) not in ("", squash(title), squash(stem)):
        sections.insert(0, Section((title,), 0, squash(body.title)))
    header = "\n".join(line for line in (f"From: {sender}" if sender else "", f"To: {to}" if to else "",
                                         f"Cc: {cc}" if cc else "", f"Subject: {subject}" if subject else "") if line)
    if header:
        # Who wrote to whom is part of what a question about a message asks ("what did Ana announce?").
        sections.insert(0, Section((title,), 0, header))
    if not body and not attachments:
        raise ParseError("no text in the message: its body is empty and it has no attachment")
    metadata: dict[str, Any] = {"sender": sender, "recipients": to, "cc": cc, "subject": subject}
    metadata = {key: value for key, value in metadata.items() if value}
    if attachments:
        metadata["attachments"] = [attachment.name for attachment in attachments]
    return ParsedDocument(
        title=title, format=doc_format, sections=sections, metadata=metadata,
        office_dates={"mail_date": sent} if sent else {}, attachments=attachments,
    )


def _header(message: EmailMessage, name: str) -> str:
    value = message.get(name)
    return squash(str(value)) if value is not None else ""


def _mail_date(raw: Any) -> datetime | None:
    if not raw:
        return None
    try:
        value = parsedate_to_datetime(str(raw))
    except (TypeError, ValueError, IndexError):
        return None
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


def _part_text(part: Any) -> str | None:
    try:
        content = part.get_content()
    except (LookupError, ValueError, AssertionError):  # an unknown charset or a broken transfer encoding
        payload = part.get_payload(decode=True)
        content = decode_text(payload)[0] if isinstance(payload, bytes) and payload.strip() else None
    return content if isinstance(content, str) else None


def _eml_attachment(part: Any) -> Attachment | None:
    name = part.get_filename()
    try:
        content = part.get_content()
    except (LookupError, ValueError, AssertionError):
        content = part.get_payload(decode=True)
    if isinstance(content, EmailMessage):  # a forwarded message: indexed as an .eml of its own
        return Attachment(name=f"{squash(str(content.get('Subject', 'message')))[:80] or 'message'}.eml",
                          data=content.as_bytes())
    if isinstance(content, str):
        content = content.encode("utf-8")
    if not name or not isinstance(content, bytes):
        return None
    return Attachment(name=squash(name), data=content)
