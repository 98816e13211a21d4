"""Tables, definition lists and code blocks as answers need them, per format, on the demo's real files."""

from __future__ import annotations

from pathlib import Path

from fpdf import FPDF

from rag.parsers import parse_document
from rag import sentences
from rag.sentences import sentence_spans
from tests.rag.parser_support import DEMO_CORPUS, section


def demo(name: str):
    path = DEMO_CORPUS / name
    return parse_document(path, path.read_bytes())


def test_markdown_pipe_table_rows_read_with_their_headers() -> None:
    parsed = demo("release-notes/release-notes-2.1.md")
    rows = section(parsed, "Changed defaults").split("\n\n")
    assert "Rate limit per API key: 2.0: 600 requests per minute; 2.1: 1000 requests per minute." in rows
    assert "|" not in parsed.text and "---" not in parsed.text


def test_markdown_table_cells_come_from_a_commonmark_parser() -> None:
    text = "# T\n\n| Key | Value |\n|---|---|\n| `a\\|b` | **bold** and [link](http://x) |\n\nAfter.\n"
    parsed = parse_document(Path("t.md"), text.encode())
    assert parsed.sections[0].text == "a|b: Value: bold and link.\n\nAfter."


def test_asciidoc_table_and_definition_list() -> None:
    parsed = demo("upgrade-guide-3.0.adoc")
    rows = section(parsed, "Changed defaults").split("\n\n")
    assert "Rate limit per API key: 2.1: 1000 requests per minute; 3.0: 1200 requests per minute." in rows
    assert "Database pool size: 2.1: 10; 3.0: 20." in rows
    prerequisites = section(parsed, "Prerequisites").split("\n\n")
    assert "Redis 7.0: Multi-node deployments need Redis 7.0 or later, or Valkey 7.2 or later." in prerequisites
    assert "|===" not in parsed.text and "::" not in parsed.text


def test_asciidoc_table_with_header_option_and_code_cells() -> None:
    parsed = demo("ops_runbook.adoc")
    assert "db_pool_size: Default: 10; Notes: Connections per process." in section(parsed, "Configuration defaults")


def test_rst_simple_table_definition_list_and_code_block() -> None:
    parsed = demo("configuration-reference-v3.rst")
    assert "token_ttl: 3.0 key: auth.token_ttl." in section(parsed, "Renamed keys").split("\n\n")
    assert "=====" not in parsed.text
    security = section(parsed, "Security").split("\n\n")
    assert "auth.token_ttl: Default 12h. Lifetime of Admin API access tokens." in security
    example = section(parsed, "Example")
    assert example.startswith("```\nproxy:\n  listen:") and example.endswith("\n```")
    assert [span.kind for span in sentence_spans(example)] == ["code"]


def test_rst_grid_table_and_sphinx_object_with_default() -> None:
    text = (
        "Settings\n========\n\n+---------+---------+\n| Key     | Default |\n+=========+=========+\n"
        "| ``a``   | 1       |\n+---------+---------+\n| b       | two     |\n|         | lines   |\n"
        "+---------+---------+\n\n.. confval:: html_theme\n   :type: :code-py:`str`\n   :default: ``'alabaster'``\n\n"
        "   The theme the output uses.\n\nExample::\n\n   make html\n"
    )
    parsed = parse_document(Path("conf.rst"), text.encode())
    assert parsed.text.split("\n\n") == [
        "a: Default: 1.",
        "b: Default: two lines.",
        "html_theme: Default: 'alabaster'; Type: str. The theme the output uses.",
        "Example:",
        "```\nmake html\n```",  # the "::" lead-in keeps its code block
    ]


def test_html_table_and_definition_list() -> None:
    parsed = demo("operations/operations-guide-3.0.html")
    assert "storage.pool_size: Default: 20; Notes: Connections per process." in section(
        parsed, "Configuration defaults").split("\n\n")
    text = "<h1>T</h1><dl><dt>token_ttl</dt><dd>Default 12h.</dd><dd>Lifetime of tokens.</dd></dl><p>After.</p>"
    assert parse_document(Path("t.html"), text.encode()).sections[0].text == (
        "token_ttl: Default 12h. Lifetime of tokens.\n\nAfter.")


def test_pdf_ruled_table_rows_read_with_their_headers() -> None:
    pdf = FPDF()
    pdf.add_page()
    pdf.set_font("Helvetica", size=20)
    pdf.cell(0, 12, "Limits", new_x="LMARGIN", new_y="NEXT")
    pdf.set_font("Helvetica", size=11)
    pdf.multi_cell(0, 6, "The defaults changed between releases.")
    with pdf.table() as table:
        for cells in [("Setting", "2.0", "2.1"), ("Rate limit per API key", "600 requests per minute",
                                                   "1000 requests per minute"), ("Upstream timeout", "30s", "45s")]:
            row = table.row()
            for cell in cells:
                row.cell(cell)
    pdf.multi_cell(0, 6, "After the table.")
    parsed = parse_document(Path("limits.pdf"), bytes(pdf.output()))
    assert parsed.sections[0].text.split("\n\n") == [
        "The defaults changed between releases.",
        "Rate limit per API key: 2.0: 600 requests per minute; 2.1: 1000 requests per minute.",
        "Upstream timeout: 2.0: 30s; 2.1: 45s.",
        "After the table.",
    ]


def test_pdf_framed_code_is_not_a_table() -> None:
    parsed = demo("v2.0/api_reference.pdf")
    assert "POST /api/v1/auth/token" in parsed.text
    assert ": POST" not in parsed.text


def test_each_line_is_a_paragraph_list_lines_are_items_and_code_is_one_span() -> None:
    spans = sentence_spans("Keys changed:\n- one. Two.\n- three\n\n```\na: 1\n\nb: 2\n```\n\nAfter.")
    assert [(span.text, span.kind, span.paragraph) for span in spans] == [
        ("Keys changed:", "prose", 0), ("- one.", "item", 1), ("Two.", "item", 1), ("- three", "item", 2),
        ("```\na: 1\n\nb: 2\n```", "code", 3), ("After.", "prose", 4),
    ]


def test_plain_text_glossary_terms_keep_their_definitions() -> None:
    parsed = demo("glossary.txt")
    assert "Admin API: The REST API of the control plane, used by the dashboard, by lumenctl and by automation " \
           "to manage routes, upstreams, consumers and keys." in parsed.text.split("\n\n")
    config = demo("archive/configuration-reference-2.0.txt")
    assert "db_pool_size default 10: Maximum number of database connections per process." in config.text


def test_a_chunk_split_again_comes_from_the_cache_and_a_caller_cannot_change_it() -> None:
    """Answers split the same popular chunks question after question: the second split is not pysbd's work."""
    text = "Keys rotate every 90 days. The old key stays valid for 24 hours.\n- list item one"
    first = sentences.sentence_spans(text)
    first.clear()  # a caller's list is its own
    before = sentences._sentence_spans.cache_info().hits
    again = sentences.sentence_spans(text)

    assert sentences._sentence_spans.cache_info().hits == before + 1
    assert [(s.text, s.kind) for s in again] == [("Keys rotate every 90 days.", "prose"),
                                                 ("The old key stays valid for 24 hours.", "prose"),
                                                 ("- list item one", "item")]
