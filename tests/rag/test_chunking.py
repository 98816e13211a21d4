"""Heading-aware chunking: sizes, overlap, top-level boundaries, sentence boundaries (the citations'), positions."""

from __future__ import annotations

from pathlib import Path

import pytest

from rag.chunking import ChunkDraft, chunk_document
from rag.parsers import ParsedDocument, Section, parse_document
from rag.sentences import sentence_spans

FIXTURES = Path(__file__).parent / "fixtures"
TITLE = "Guide"


def words(count: int, word: str = "alpha") -> str:
    """`count` distinct-looking words in sentences of ten, so sentence splitting has seams."""
    tokens = [f"{word}{n}" for n in range(count)]
    sentences = [" ".join(tokens[i : i + 10]) for i in range(0, count, 10)]
    return " ".join(sentence[0].upper() + sentence[1:] + "." for sentence in sentences)


def sec(*path: str, level: int | None = None, body: str = "") -> Section:
    return Section((TITLE, *path), len(path) if level is None else level, body)


def doc(*sections: Section) -> ParsedDocument:
    return ParsedDocument(title=TITLE, format="markdown", sections=list(sections))


def word_count(chunk: ChunkDraft) -> int:
    return len(chunk.text.split())


def test_empty_document_has_no_chunks() -> None:
    assert chunk_document(doc()) == []
    assert chunk_document(doc(sec(level=0, body="  "), sec("Appendix", body=""))) == []


def test_single_small_document_is_one_only_chunk() -> None:
    chunks = chunk_document(doc(sec(level=0, body="Docent answers questions.")))
    assert chunks == [ChunkDraft("Docent answers questions.", "Guide", 0, 1, "only")]


def test_section_heading_line_starts_its_text() -> None:
    kubernetes = sec("Kubernetes", body="Run it on Kubernetes.")
    chunks = chunk_document(doc(kubernetes, sec("Kubernetes", "Health checks", body="Probe /healthz.")))
    assert len(chunks) == 1
    assert chunks[0].text == "Kubernetes\nRun it on Kubernetes.\n\nHealth checks\nProbe /healthz."
    assert chunks[0].heading_path == "Guide > Kubernetes"  # the first section's path


def test_every_top_level_section_starts_a_new_chunk() -> None:
    chunks = chunk_document(
        doc(
            sec(level=0, body=words(50, "intro")),
            sec("Install", body=words(50, "install")),
            sec("Install", "Linux", body=words(50, "linux")),
            sec("Upgrade", body=words(50, "upgrade")),
        )
    )
    assert [c.heading_path for c in chunks] == ["Guide", "Guide > Install", "Guide > Upgrade"]
    assert "Linux\nLinux0" in chunks[1].text
    assert "Upgrade0" not in chunks[1].text


def test_subsections_fill_chunks_up_to_max_words_without_crossing_top_level() -> None:
    subsections = [sec("Operations", f"Task {n}", body=words(90, f"task{n}x")) for n in range(7)]
    chunks = chunk_document(
        doc(sec("Operations", body=words(20, "ops")), *subsections, sec("Faq", body=words(60, "faq")))
    )
    assert all(word_count(c) <= 300 for c in chunks)
    operations = [c for c in chunks if c.heading_path.startswith("Guide > Operations")]
    # 21 + 3 x 93 words fill the first chunk exactly to 300; the rest follow in order.
    assert [c.heading_path for c in operations] == [
        "Guide > Operations",
        "Guide > Operations > Task 3",
        "Guide > Operations > Task 6",
    ]
    assert operations[1].text.startswith("Task 3\n")
    assert chunks[-1].heading_path == "Guide > Faq" and "task" not in chunks[-1].text.lower()
    # Nothing lost, nothing repeated: whole sections need no overlap.
    for n in range(7):
        assert sum(f"Task {n}\n" in c.text for c in chunks) == 1


def test_long_section_is_split_with_overlap() -> None:
    body = "\n\n".join(words(120, f"para{n}x") for n in range(8))  # 960 words, 8 paragraphs
    chunks = chunk_document(doc(sec("Reference", body=body)), target_words=250, max_words=300, overlap_words=30)
    assert len(chunks) >= 4
    assert all(c.heading_path == "Guide > Reference" for c in chunks)
    assert all(c.text.startswith("Reference\n") for c in chunks)
    assert all(word_count(c) <= 300 for c in chunks)
    assert all(word_count(c) >= 200 for c in chunks[:-1])  # about target_words, not a paragraph each
    for previous, current in zip(chunks, chunks[1:], strict=False):
        previous_body = previous.text.split("\n", 1)[1].split()
        current_body = current.text.split("\n", 1)[1].split()
        assert current_body[:30] == previous_body[-30:]
    # Apart from the overlap, every body word appears exactly once, in order.
    stitched = chunks[0].text.split()[1:]
    for chunk in chunks[1:]:
        stitched += chunk.text.split()[1 + 30 :]
    assert stitched == body.split()


def test_long_paragraph_splits_on_sentences() -> None:
    body = words(700, "sent")  # one paragraph of 70 ten-word sentences
    chunks = chunk_document(doc(sec("Log", body=body)), overlap_words=0)
    assert len(chunks) >= 3
    for chunk in chunks:
        assert chunk.text.endswith(".")  # cut between sentences, never inside one
        assert word_count(chunk) <= 300


def test_parts_end_where_citations_end_a_sentence_and_keep_their_lines() -> None:
    # rag.sentences cuts here as citations do: not after "e.g." or "approx.", and a list line is a
    # unit of its own, so a part is a slice of the section and its sentences are the section's.
    prose = " ".join(f"Step {n} reads a setting, e.g. Timeout {n}, and waits approx. {n} s before it retries."
                     for n in range(40))
    items = "\n".join(f"* #{n}: Fix the writer when a table holds a caption" for n in range(60))
    body = f"{prose}\n\n{items}"
    chunks = chunk_document(doc(sec("Changes", body=body)), target_words=90, max_words=120, overlap_words=0)

    section_sentences = {span.text for span in sentence_spans(body)}
    assert len(chunks) >= 8
    parts = [part.strip("\n") for chunk in chunks for part in chunk.text.split("Changes\n") if part.strip()]
    for part in parts:  # a tiny last part joins the chunk before, under its heading again
        assert part in body
        assert {span.text for span in sentence_spans(part)} <= section_sentences


def test_run_on_text_without_sentences_still_respects_max_words() -> None:
    body = " ".join(f"token{n}" for n in range(1000))
    chunks = chunk_document(doc(sec(level=0, body=body)))
    assert len(chunks) >= 4
    assert all(word_count(c) <= 300 for c in chunks)


def test_tiny_trailing_chunk_merges_into_previous_of_same_top_level() -> None:
    notes = sec("Install", "Notes", body="Reboot after installing.")
    chunks = chunk_document(doc(sec("Install", body=words(280, "inst")), notes))
    assert len(chunks) == 1
    assert chunks[0].text.endswith("Notes\nReboot after installing.")


def test_tiny_chunk_never_merges_across_top_level_sections() -> None:
    chunks = chunk_document(doc(sec("Install", body=words(280, "inst")), sec("License", body="MIT.")))
    assert [c.text for c in chunks[1:]] == ["License\nMIT."]


def test_small_but_not_tiny_trailing_chunk_stays_separate() -> None:
    notes = sec("Install", "Notes", body=words(60, "note"))
    chunks = chunk_document(doc(sec("Install", body=words(280, "inst")), notes))
    assert [c.heading_path for c in chunks] == ["Guide > Install", "Guide > Install > Notes"]


def test_positions_indices_and_totals() -> None:
    chunks = chunk_document(doc(*(sec(f"Part {n}", body=words(60, f"p{n}x")) for n in range(4))))
    assert [(c.chunk_index, c.total_chunks, c.chunk_position) for c in chunks] == [
        (0, 4, "start"),
        (1, 4, "middle"),
        (2, 4, "middle"),
        (3, 4, "end"),
    ]
    two = chunk_document(doc(sec("A", body=words(50)), sec("B", body=words(50))))
    assert [c.chunk_position for c in two] == ["start", "end"]


def test_pdf_pages_without_headings_are_one_stretch_of_text() -> None:
    pages = [sec(level=0, body=words(40, f"page{n}x")) for n in range(3)]
    chunks = chunk_document(doc(*pages))
    assert len(chunks) == 1
    assert chunks[0].heading_path == "Guide"
    assert chunks[0].text.startswith("Page0x0")  # no heading line for untitled text


def test_heading_without_body_joins_its_subsections() -> None:
    chunks = chunk_document(doc(sec("Kubernetes"), sec("Kubernetes", "Probes", body=words(30))))
    assert len(chunks) == 1
    assert chunks[0].text.startswith("Kubernetes\n\nProbes\nAlpha0")


def test_invalid_sizes_are_rejected() -> None:
    with pytest.raises(ValueError):
        chunk_document(doc(sec(level=0, body="x")), target_words=300, max_words=250)
    with pytest.raises(ValueError):
        chunk_document(doc(sec(level=0, body="x")), target_words=100, overlap_words=100)


def test_chunks_of_a_real_markdown_file() -> None:
    path = FIXTURES / "deployment-guide.md"
    chunks = chunk_document(parse_document(path, path.read_bytes()))
    assert [c.heading_path for c in chunks] == [
        "Deployment Guide",
        "Deployment Guide > Kubernetes",
        "Deployment Guide > Backups",
    ]
    assert "Health checks\nThe liveness probe" in chunks[1].text
    assert "Scaling\n- Add replicas" in chunks[1].text
