"""E-mail (.eml written by the standard library; a real Outlook .msg, and damaged ones) and OCR of scans and images."""

from __future__ import annotations

import io
import socket
from datetime import UTC, datetime
from pathlib import Path

import msoffcrypto
import pytest

from rag.ingest.dates import resolve_doc_date
from rag.parsers import ParseError, ParseLimits, parse_document
from rag.parsers.ocr import ocr_engine
from devkit.format_files import write_docx, write_eml
from devkit.scans import PAGE_TEXT, character_accuracy, image_bytes, scanned_page, scanned_pdf
from tests.rag.parser_support import paths


def test_eml_subject_date_people_and_the_html_body() -> None:
    parsed = parse_document(Path("announce.eml"), write_eml(attachments={"guide.docx": write_docx()}))
    assert parsed.title == "Rate limit raised to 1000 requests per minute" and parsed.format == "eml"
    assert parsed.metadata["sender"] == "Ana Ops <ana@example.com>"
    assert parsed.metadata["recipients"] == "gateway-team@example.com, sre@example.com"
    assert parsed.metadata["cc"] == "lead@example.com"
    date = resolve_doc_date(parsed, 0.0)
    assert (date.value, date.source) == (datetime(2025, 3, 14, 7, 30, tzinfo=UTC), "mail_date")
    assert all(path[0] == parsed.title for path in paths(parsed))
    text = parsed.text
    assert "From: Ana Ops <ana@example.com>" in text
    assert "Rate limit: Value: 1000." in text  # the HTML table, read by the HTML reader
    assert "alert(1)" not in text
    assert [(a.name, a.data[:2]) for a in parsed.attachments] == [("guide.docx", b"PK")]


def test_eml_plain_body_when_there_is_no_html() -> None:
    parsed = parse_document(Path("plain.eml"), write_eml(html=False))
    assert "From 1 April the rate limit is 1000 requests per minute per key." in parsed.text


@pytest.mark.parametrize("data", [b"just some words\nwith no headers at all\n", b"\x00\x01garbage"])
def test_a_file_that_is_not_a_mail_fails(data: bytes) -> None:
    with pytest.raises(ParseError):
        parse_document(Path("odd.eml"), data)


FIXTURES = Path(__file__).parent / "fixtures"


def test_a_real_outlook_msg_and_the_message_it_carries() -> None:
    """Written by Outlook (msg-parser's test file, BSD): the forwarded message inside comes back as an .eml."""
    parsed = parse_document(Path("forward.msg"), (FIXTURES / "outlook-forward.msg").read_bytes())
    assert (parsed.title, parsed.format) == ("outer subject", "msg")
    assert parsed.metadata["recipients"] == "outer@foo.bar <outer@foo.bar>"
    assert "Outer body" in parsed.text
    assert [attachment.name for attachment in parsed.attachments] == ["test.eml"]
    inner = parse_document(Path("test.eml"), parsed.attachments[0].data)
    assert (inner.title, inner.format, inner.metadata["recipients"]) == ("test", "eml", "test@foobar.com")
    assert "body" in inner.text


def test_a_damaged_or_foreign_msg_fails_with_a_reason() -> None:
    with pytest.raises(ParseError, match=r"^not a readable \.msg: the file is not an Outlook message"):
        parse_document(Path("mail.msg"), b"From: someone\n\nnot an OLE file")
    encrypted = io.BytesIO()  # an OLE container, but an encrypted Word file, not a message
    msoffcrypto.OfficeFile(io.BytesIO(write_docx())).encrypt("secret", encrypted)
    with pytest.raises(ParseError, match=r"^not a readable \.msg: "):
        parse_document(Path("mail.msg"), encrypted.getvalue())
    with pytest.raises(ParseError, match=r"^not a readable \.msg: "):
        parse_document(Path("mail.msg"), encrypted.getvalue()[:1536])  # cut short


# --- OCR -----------------------------------------------------------------------------------------


def test_a_scanned_pdf_is_read_by_ocr_page_by_page_with_progress() -> None:
    first = scanned_page(PAGE_TEXT, skew=1.5, blur=0.6, noise=8)
    second = scanned_page(["Appendix", "", "Contact the on-call engineer for urgent restores."], skew=-1.0)
    heard: list[str] = []
    parsed = parse_document(Path("notice.pdf"), scanned_pdf([first, second]), progress=heard.append)
    assert heard == ["OCR page 1 of 2 (page 1 of the PDF)", "OCR page 2 of 2 (page 2 of the PDF)"]
    assert parsed.ocr_pages == [1, 2] and parsed.metadata["ocr_pages"] == [1, 2]
    assert parsed.title == "Gateway maintenance notice"  # the biggest line on page one
    text = parsed.text
    assert "The backup window moves to 03:00 UTC on 1 April 2025." in text
    assert "Snapshots are kept for 45 days instead of 30 days." in text
    pages = {section.page for section in parsed.sections if "on-call" in section.text}
    assert pages == {2}


_PRINTED = str.maketrans({"\u2019": "'", "\u2018": "'", "\u201c": '"', "\u201d": '"', "\u2033": '"', "\u2014": "-",
                          "\u2013": "-", "\u2022": None, "\u00b7": None})


def test_a_real_scanned_brochure_page_is_read_accurately() -> None:
    """A 1985 brochure scanned at 300 dpi (CC BY-SA, fixtures/scans/README.md): its full-width top part,
    typed from the image, against what OCR read there; typographic quotes, dashes and bullets folded."""
    scans = FIXTURES / "scans"
    parsed = parse_document(Path("linn.png"), (scans / "linnsequencer-brochure.png").read_bytes())
    expected = (scans / "linnsequencer-brochure.top.txt").read_text(encoding="utf-8")
    text = " ".join(parsed.text.translate(_PRINTED).split())
    top = text[text.index("The LinnSequencer"):text.index("remote control.") + len("remote control.")]
    assert character_accuracy(expected.translate(_PRINTED), top) >= 0.97
    assert "Recording a Sequence" in text and "Linn Electronics" in text  # the columns and the footer too


def test_ocr_pages_are_bounded_and_the_rest_is_said() -> None:
    pages = [scanned_page([f"Page {number} says hello"]) for number in range(3)]
    parsed = parse_document(Path("long.pdf"), scanned_pdf(pages), limits=ParseLimits(max_ocr_pages=1))
    assert parsed.ocr_pages == [1]
    assert parsed.notices == ["OCR read the first 1 of 3 scanned pages; the rest was skipped (bound: OCR_MAX_PAGES)"]


@pytest.mark.parametrize("image_format, suffix", [("PNG", ".png"), ("JPEG", ".jpg"), ("TIFF", ".tiff")])
def test_images_are_read_by_ocr(image_format: str, suffix: str) -> None:
    page = scanned_page(PAGE_TEXT[:4], dpi=150)
    parsed = parse_document(Path("scan" + suffix), image_bytes(page, image_format))
    assert parsed.format == "image" and parsed.ocr_pages == [1]
    assert parsed.title == "Gateway maintenance notice"
    assert "The backup window moves to 03:00 UTC on 1 April 2025." in parsed.text
    assert parsed.sections[0].page == 1


def test_a_broken_image_fails_with_a_reason() -> None:
    with pytest.raises(ParseError, match=r"^not a readable image"):
        parse_document(Path("scan.png"), b"\x89PNG\r\n\x1a\nbroken")


def test_ocr_loads_its_models_from_the_wheel_without_the_network(monkeypatch) -> None:
    def refuse(*_args, **_kwargs):
        raise OSError("no network in this test")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    ocr_engine.cache_clear()  # load the models afresh, with the network gone
    try:
        parsed = parse_document(Path("memo.png"), image_bytes(scanned_page(PAGE_TEXT[:3], dpi=150)))
    finally:
        ocr_engine.cache_clear()
    assert parsed.title == "Gateway maintenance notice"
