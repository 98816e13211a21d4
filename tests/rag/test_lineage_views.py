"""Version lineage in the browser, the API and the CLI: the family timeline, the compare page, as-of options."""

from __future__ import annotations

from datetime import UTC, datetime
from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from rag.models import Document, DocumentFamily
from rag.retrieval import SearchResultSet
from tests.factories import WorkspaceFactory
from tests.rag.factories import ChunkFactory, DocumentFactory

pytestmark = pytest.mark.django_db


def _member(family: DocumentFamily, label: str, position: int, sections: dict[str, str], **fields) -> Document:
    title = f"Lumen API Reference {label}"
    fields = {"is_latest_version": False, **fields}
    document = DocumentFactory(workspace=family.workspace, family=family, family_position=position, title=title,
                               path=f"/api/api-{label}-{position}.md", version_label=label, version_source="title",
                               chunk_count=len(sections), **fields)
    for index, (heading, text) in enumerate(sections.items()):
        ChunkFactory(document=document, text=text, chunk_index=index, total_chunks=len(sections),
                     heading_path=f"{title} > {heading}")
    return document


@pytest.fixture
def versions(workspace) -> dict[str, Document]:
    family = DocumentFamily.objects.create(workspace=workspace, name="Lumen API Reference")
    old = _member(family, "2.1", 0, {
        "Rate limits": "Each API key may send 600 requests per minute.",
        "Authentication": "Send the key in the X-Lumen-Key header.",
        "Legacy tokens": "Session tokens from 1.x still work until 2025.",
        "Escaping": "Write <script>alert('old')</script> as text.",
    }, doc_date=datetime(2025, 5, 2, tzinfo=UTC), date_source="upload_time",
        lineage_note="version 2.1 is dated 2025-05-02, after 3.0 (2025-03-01): the version label decides the order")
    new = _member(family, "3.0", 1, {
        "Rate limits": "Each API key may send 1200 requests per minute.",
        "Authentication": "Send the key in the X-Lumen-Key header.",
        "Webhooks (new in 3.0)": "Webhooks retry five times.",
        "Escaping": "Write <script>alert('new')</script> as text.",
    }, doc_date=datetime(2025, 3, 1, tzinfo=UTC), date_source="frontmatter", is_latest_version=True)
    copy = _member(family, "3.0", 2, {"Rate limits": "Each API key may send 1200 requests per minute."},
                   doc_date=datetime(2025, 6, 1, tzinfo=UTC), date_source="mtime", is_latest_version=True)
    Document.objects.filter(pk=copy.pk).update(copy_of=new, title="api-copy.md")
    return {"old": old, "new": new, "copy": copy}


def test_document_page_shows_the_family_timeline(logged_in_client, versions):
    html = logged_in_client.get(f"/documents/{versions['new'].pk}/").content.decode()
    assert "3.0 <span class=\"muted\">(from title)</span>" in html
    timeline = html[html.index('class="timeline"'):]
    # Newest first: the copy, this document, then 2.1; each links to its page.
    assert timeline.index("api-copy.md") < timeline.index("(this document)") < timeline.index("Reference 2.1")
    assert f'href="/documents/{versions["old"].pk}/"' in timeline and f'href="/documents/{versions["copy"].pk}/"' in timeline
    assert timeline.count('<span class="badge ok">current</span>') == 2  # 3.0 and its copy
    assert f'copy of <a href="/documents/{versions["new"].pk}/">3.0</a>' in timeline
    assert "date from upload time (no date in or on the file)" in timeline and 'class="date-weak"' in timeline
    assert "date from frontmatter" in timeline or "date from Markdown frontmatter" in timeline
    assert "the version label decides the order" in timeline
    assert f'href="/documents/{versions["new"].pk}/compare/">Compare with previous version (2.1)' in html


def test_a_document_without_family_has_no_timeline(logged_in_client, workspace):
    document = DocumentFactory(workspace=workspace)
    html = logged_in_client.get(f"/documents/{document.pk}/").content.decode()
    assert 'class="timeline"' not in html and "Compare with previous version" not in html
    assert "no version label found" in html


def test_compare_page_lists_added_removed_and_changed_sections(logged_in_client, versions):
    response = logged_in_client.get(f"/documents/{versions['new'].pk}/compare/")
    html = response.content.decode()
    assert response.status_code == 200
    assert "Changes from 2.1 to 3.0" in html
    assert "1 added · 1 removed · 2 changed · 1 unchanged" in html
    added, removed = html[html.index('id="added"'):html.index('id="removed"')], html[html.index('id="removed"'):]
    assert "Webhooks (new in 3.0)" in added and "Webhooks retry five times." in added
    assert "Legacy tokens" in removed and "Session tokens from 1.x" in removed
    changed = html[html.index('id="changed"'):html.index('id="added"')]
    assert "<del>600</del>" in changed and "<ins>1200</ins>" in changed
    assert "Authentication" not in changed  # unchanged sections are only counted


def test_compare_escapes_document_text(logged_in_client, versions):
    html = logged_in_client.get(f"/documents/{versions['new'].pk}/compare/").content.decode()
    assert "<script>alert" not in html
    assert "<del>&lt;script&gt;alert(&#x27;old&#x27;)&lt;/script&gt;</del>" in html
    assert "<ins>&lt;script&gt;alert(&#x27;new&#x27;)&lt;/script&gt;</ins>" in html


def test_compare_with_a_chosen_member_reads_older_to_newer(logged_in_client, versions):
    html = logged_in_client.get(f"/documents/{versions['old'].pk}/compare/?with={versions['new'].pk}").content.decode()
    assert "Changes from 2.1 to 3.0" in html and "<ins>1200</ins>" in html


def test_the_oldest_version_has_nothing_to_compare_with(logged_in_client, versions):
    html = logged_in_client.get(f"/documents/{versions['old'].pk}/compare/").content.decode()
    assert "has no earlier version to compare with" in html


def test_the_copy_compares_with_the_version_before_its_original(logged_in_client, versions):
    html = logged_in_client.get(f"/documents/{versions['copy'].pk}/compare/").content.decode()
    assert "Changes from 2.1 to 3.0" in html


def test_other_workspaces_documents_are_404(logged_in_client, versions):
    stranger = DocumentFactory(workspace=WorkspaceFactory())
    mine = versions["new"].pk
    assert logged_in_client.get(f"/documents/{stranger.pk}/compare/").status_code == 404
    assert logged_in_client.get(f"/documents/{mine}/compare/?with={stranger.pk}").status_code == 404
    assert logged_in_client.get(f"/documents/{mine}/compare/?with=abc").status_code == 400


# --- as-of options through the API and the CLI -------------------------------------------------------


@pytest.fixture
def captured(monkeypatch) -> list:
    """The SearchOptions each search was called with; no search runs."""
    calls: list = []

    def fake_search(query, options):
        calls.append(options)
        return SearchResultSet([], query=query, canonical_filtering="off", options={}, filters={},
                               stats={"duration_ms": 0.0, "doc_types_boosted": [], "recency": False})

    monkeypatch.setattr("rag.api.search", fake_search)
    monkeypatch.setattr("rag.management.commands.search.search", fake_search)
    return calls


def test_api_reads_as_of_and_version_aware(logged_in_client, workspace, captured):
    response = logged_in_client.get("/api/v1/search", {"q": "rate limit", "as_of_version": "2.1",
                                                       "as_of_date": "2025-03-15", "version_aware": "false"})
    assert response.status_code == 200
    options = captured[0]
    assert options.as_of_version == "2.1" and options.version_aware is False
    assert options.as_of_date.date().isoformat() == "2025-03-15" and options.as_of_date.hour == 23


@pytest.mark.parametrize("params, message", [
    ({"as_of_date": "March 2025"}, "as_of_date"),
    ({"version_aware": "perhaps"}, "version_aware: Input should be a valid boolean"),
    ({"as_of_version": "x" * 60}, "as_of_version: String should have at most 50 characters"),
])
def test_api_bad_as_of_values_are_400(logged_in_client, workspace, captured, params, message):
    response = logged_in_client.get("/api/v1/search", {"q": "rate limit", **params})
    assert response.status_code == 400 and message in response.json()["error"]
    assert not captured


def test_cli_reads_as_of_version_and_date(workspace, captured):
    call_command("search", "rate limit", "--workspace", workspace.slug, "--mode", "lexical",
                 "--as-of-version", "2.1", "--as-of-date", "2025-03-15", stdout=StringIO())
    assert captured[0].as_of_version == "2.1" and captured[0].as_of_date.date().isoformat() == "2025-03-15"


def test_cli_bad_as_of_date_is_a_command_error(workspace, captured):
    with pytest.raises(CommandError, match="as_of_date: Input should be a valid date or datetime"):
        call_command("search", "rate limit", "--workspace", workspace.slug, "--as-of-date", "15/03/2025",
                     stdout=StringIO())
