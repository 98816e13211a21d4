"""Code blocks in chunk text: shown as code on the document page, the stored text unchanged, every piece escaped."""

from __future__ import annotations

import pytest

from rag.chunk_blocks import ChunkBlock, chunk_blocks
from rag.jobs.run import job_item_run
from rag.models import Chunk, Document
from rag.uploads import indexing_job_create

TEXT = "Install\nRun the installer:\n```\npip install lumen\nlumen --port 8080\n```\nThen open the dashboard."


def test_prose_and_code_are_separate_blocks_without_their_fences():
    assert chunk_blocks(TEXT) == [
        ChunkBlock(is_code=False, pieces=[("Install\nRun the installer:", False)]),
        ChunkBlock(is_code=True, pieces=[("pip install lumen\nlumen --port 8080", False)]),
        ChunkBlock(is_code=False, pieces=[("Then open the dashboard.", False)]),
    ]


def test_a_cited_sentence_is_marked_inside_its_block_only():
    start = TEXT.index("Run")
    end = TEXT.index("8080") + 4  # a citation running into the code is cut at the code's edge, fences never shown
    blocks = chunk_blocks(TEXT, [(start, end)])
    assert blocks[0].pieces == [("Install\n", False), ("Run the installer:", True)]
    assert blocks[1].pieces == [("pip install lumen\nlumen --port 8080", True)]
    assert "```" not in "".join(piece for block in blocks for piece, _ in block.pieces)


def test_a_code_block_cut_by_the_chunk_end_is_still_code():
    assert chunk_blocks("Example:\n```\nSELECT 1;") == [
        ChunkBlock(is_code=False, pieces=[("Example:", False)]),
        ChunkBlock(is_code=True, pieces=[("SELECT 1;", False)]),
    ]


@pytest.mark.django_db
def test_the_document_page_shows_code_as_code_escaped_and_stores_the_text_unchanged(
        logged_in_client, workspace, tmp_path):
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "embed.md").write_text("# Embedding\n\n## Widget\n\nPaste this into your page:\n\n"
                                     "```html\n<script src=\"/lumen.js\"></script>\n```\n\nIt loads in one second.\n")
    job = indexing_job_create(workspace=workspace, paths=[folder], enqueue=False)
    job_item_run(item_id=job.items.get().pk)
    chunk = Chunk.objects.get(document__workspace=workspace)
    assert "```\n<script" in chunk.text  # stored as the parser wrote it
    document = Document.objects.get(workspace=workspace)
    page = logged_in_client.get(f"/documents/{document.pk}/").content.decode()
    assert '<pre class="chunk-code"><code>&lt;script src=&quot;/lumen.js&quot;&gt;&lt;/script&gt;</code></pre>' in page
    assert "```" not in page and '<script src="/lumen.js">' not in page
