"""The newest copy of a slide deck and of a scanned PDF ranks above its older copy (issue 54, item 9).

A .pptx is dated by its core properties, a scanned PDF (no text layer: read by OCR) by the date its scanner wrote;
two copies that differ in the figure a question asks for must give the newer copy's figure first. The whole pipeline
(parsers, OCR, dates, families, merge) and the real MiniLM encoder.
"""

from __future__ import annotations

import io
from datetime import datetime

import pptx
import pytest
from pptx.util import Inches

from devkit.scans import scanned_page, scanned_pdf
from rag.retrieval import SearchOptions, search
from tests.chat.conftest import index_folder
from tests.rag.retrieval_helpers import encoder, minilm, retrieval_isolation  # noqa: F401 (fixtures)

pytestmark = [pytest.mark.django_db, pytest.mark.real_encoder]

OLD, NEW = datetime(2024, 3, 4, 9, 0), datetime(2025, 6, 2, 9, 0)


def _deck(*, limit: int, modified: datetime) -> bytes:
    """The operations briefing deck as a team keeps it: one slide of limits, saved again with the new figure."""
    presentation = pptx.Presentation()
    presentation.core_properties.title = "Lumen Gateway Operations Briefing"
    presentation.core_properties.modified = modified
    opening = presentation.slides.add_slide(presentation.slide_layouts[1])
    opening.shapes.title.text = "Lumen Gateway Operations Briefing"
    opening.placeholders[1].text_frame.text = "What operators need to know this quarter"
    limits = presentation.slides.add_slide(presentation.slide_layouts[5])
    limits.shapes.title.text = "Rate limits"
    limits.shapes.add_textbox(Inches(1), Inches(2), Inches(7), Inches(1)).text_frame.text = (
        f"Each API key may send {limit} requests per minute before the gateway answers HTTP 429.")
    buffer = io.BytesIO()
    presentation.save(buffer)
    return buffer.getvalue()


def _scan(*, days: int, scanned_at: datetime) -> bytes:
    page = scanned_page(["Security Advisory LGSA-7", "",
                         f"Rotate every administrator API key at least every {days} days.",
                         "Revoke a key at once when the person who holds it leaves the team."], dpi=150)
    return scanned_pdf([page], dpi=150, scanned_at=scanned_at)


@pytest.fixture
def copies(workspace, tmp_path, encoder):
    folder = tmp_path / "shared"
    for place, when, limit, days in (("2024", OLD, 600, 180), ("current", NEW, 1200, 90)):
        (folder / place).mkdir(parents=True)
        (folder / place / "operations-briefing.pptx").write_bytes(_deck(limit=limit, modified=when))
        (folder / place / "security-advisory.pdf").write_bytes(_scan(days=days, scanned_at=when))
    (folder / "backups.md").write_text("# Backups\n\nBackups are written to object storage every night and kept "
                                       "for thirty days.\n")
    (folder / "dashboard.md").write_text("# Dashboard\n\nThe dashboard shows CPU and memory per node, refreshed "
                                         "every ten seconds.\n")
    index_folder(workspace, folder)
    return workspace


@pytest.mark.parametrize(("question", "name", "newer", "older"), [
    ("How many requests per minute may an API key send?", "operations-briefing.pptx", "1200", "600"),
    ("How often must administrator API keys be rotated?", "security-advisory.pdf", "90 days", "180 days"),
])
def test_the_newest_copy_is_in_the_top_five_above_the_older(copies, question, name, newer, older):
    documents = {document.path: document for document in copies.documents.all()}
    current = next(document for path, document in documents.items() if path.endswith(f"current/{name}"))
    past = next(document for path, document in documents.items() if path.endswith(f"2024/{name}"))
    assert current.doc_date > past.doc_date, (current.date_source, current.doc_date, past.date_source, past.doc_date)
    if name.endswith(".pdf"):
        assert current.metadata.get("ocr_pages") == [1]  # read by OCR: no text layer
    assert any(older in text for text in past.chunks.values_list("text", flat=True))  # the copies differ there

    # As the chat searches by default, and with "Hide duplicate passages" off (the older copy may then be shown).
    for dedup in (True, False):
        results = search(question, SearchOptions(workspace=copies.pk, top_k=5, dedup=dedup))
        shown = [(result.path.rsplit("shared/", 1)[-1], round(result.score, 3), result.text[:60]) for result in results]
        found = [index for index, result in enumerate(results) if result.document_id == current.pk]
        assert found, shown  # the newest copy is in the top 5
        assert newer in results[found[0]].text, shown
        stale = [index for index, result in enumerate(results) if result.document_id == past.pk]
        assert not stale or found[0] < stale[0], shown  # and above the older copy wherever that is shown
