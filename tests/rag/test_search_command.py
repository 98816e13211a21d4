"""`manage.py search`: the command-line contract other tools drive."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from tests.rag.retrieval_helpers import add_document, chunk_of, license_workspace, make_record
from tests.rag.retrieval_helpers import retrieval_isolation  # noqa: F401 (an autouse fixture)

pytestmark = pytest.mark.django_db

CONTRACT_FIELDS = {"chunk_id", "document_id", "path", "title", "doc_date", "doc_type", "heading_path", "score",
                   "canonical_record_id", "variant_count", "has_contradictions", "text"}


@pytest.fixture
def docs(workspace):
    old = add_document(workspace, "/d/backup-2024.md", ["Backups run nightly at 02:00 and are kept 14 days."],
                       doc_date=datetime(2024, 1, 10, tzinfo=UTC), doc_type="operations")
    new = add_document(workspace, "/d/backup-2025.md", ["Backups run nightly at 03:00 and are kept 30 days."],
                       doc_date=datetime(2025, 2, 1, tzinfo=UTC), doc_type="operations")
    add_document(workspace, "/d/api.md", ["The export endpoint returns a signed download URL."],
                 doc_date=None, doc_type="api")
    license_workspace(workspace)
    make_record(chunk_of(new), chunk_of(old))
    return workspace


def run(*args: str) -> str:
    out = StringIO()
    call_command("search", *args, stdout=out)
    return out.getvalue()


def test_json_prints_one_value_with_the_contract_fields(docs, settings):
    settings.PUBLIC_URL = "https://docs.example.com"
    output = run("how long are backups kept", "--workspace", docs.slug, "--json")
    value = json.loads(output)
    assert value["canonical_filtering"] == "applied"
    first = value["results"][0]
    assert CONTRACT_FIELDS <= set(first)
    assert first["path"] == "/d/backup-2025.md"
    assert first["doc_date"] == "2025-02-01T00:00:00+00:00"
    assert first["variant_count"] == 1
    assert first["url"] == (f"https://docs.example.com/documents/{first['document_id']}/"
                            f"?chunk={first['chunk_id']}#chunk-{first['chunk_id']}")
    assert all(r["path"] != "/d/backup-2024.md" for r in value["results"])
    undated = json.loads(run("export endpoint download", "--workspace", docs.slug, "--json"))["results"][0]
    assert undated["path"] == "/d/api.md" and undated["doc_date"] is None


def test_queries_file_prints_json_lines_in_order(docs, tmp_path, monkeypatch):
    from rag import embeddings
    from rag.encoders import choice

    built = []
    monkeypatch.setitem(choice._ENCODER_FACTORIES, "hashing",
                        lambda batch_size, threads: built.append(batch_size) or embeddings.HashingEncoder())
    embeddings.reset_encoder()
    queries = tmp_path / "queries.txt"
    queries.write_text("backup retention\n\nexport endpoint download\nnightly backup time\n")
    lines = run("--queries-file", str(queries), "--workspace", docs.slug, "--json", "--top-k", "2").splitlines()
    assert [json.loads(line)["query"] for line in lines] == [
        "backup retention", "export endpoint download", "nightly backup time"]
    assert json.loads(lines[1])["results"][0]["path"] == "/d/api.md"
    assert len(built) == 1  # one encoder for every query of the file
    embeddings.reset_encoder()


def test_include_variants_and_no_dedup_show_older_versions(docs):
    value = json.loads(run("backups kept", "--workspace", docs.slug, "--json", "--include-variants", "--no-dedup"))
    assert value["canonical_filtering"] == "off"
    assert {"/d/backup-2024.md", "/d/backup-2025.md"} <= {r["path"] for r in value["results"]}
    assert value["options"]["dedup"] is False


def test_mode_created_after_and_doc_type(docs):
    value = json.loads(run("backups", "--workspace", docs.slug, "--json", "--mode", "lexical",
                           "--created-after", "2025-01-01", "--doc-type", "api"))
    assert value["options"]["mode"] == "lexical"
    assert value["stats"]["doc_types_boosted"] == ["api"] and value["stats"]["doc_type_source"] == "user"
    assert [r["path"] for r in value["results"]] == ["/d/backup-2025.md"]
    assert value["filters"]["created_after"] == "2025-01-01T00:00:00+00:00"


def test_plain_output_is_readable(docs):
    output = run("how long are backups kept", "--workspace", docs.slug)
    assert "backup-2025.md" in output and "2025-02-01" in output and "1 older version(s)" in output


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ((), "either a query or --queries-file"),
        (("q", "--queries-file", "x.txt"), "either a query or --queries-file"),
        (("q", "--created-after", "yesterday-ish"), "created_after"),
        (("q", "--when", "next tuesday"), "unknown date phrase"),
        (("q", "--top-k", "0"), "top_k"),
    ],
)
def test_bad_input_is_a_command_error(docs, args, message):
    with pytest.raises(CommandError, match=message):
        run(*args, "--workspace", docs.slug)


def test_unknown_workspace(db):
    with pytest.raises(CommandError, match="no workspace"):
        run("q", "--workspace", "nope")


def test_printed_version_notes_read_as_the_chat_sources_do():
    from rag.management.commands.search import _version_note
    from rag.retrieval import SearchResult

    def result(**fields) -> SearchResult:
        return SearchResult(chunk_id=1, document_id=1, path="/a.md", title="A", doc_date=None, doc_type="api",
                            heading_path="A", text="t", score=1.0, **fields)

    assert _version_note(result(version_label="3.0", family_id=7)) == "3.0 · current"
    assert _version_note(result(version_label="2.1")) == "2.1"  # no other versions: nothing to be current among
    assert _version_note(result(version_label="2.1", family_id=7, is_latest_version=False, lineage="superseded",
                                superseded_by_label="3.0")) == "2.1 · superseded by 3.0"
    assert _version_note(result(version_label="1.0", family_id=7, is_latest_version=False,
                                lineage="retired")) == "1.0 · only in 1.0"
