"""Chat and versions: sources say which version they come from; "answer as of" is kept per conversation."""

from __future__ import annotations

import pytest

from chat.answering import citation_for
from chat.models import Message
from chat.search import chat_search_options
from rag.retrieval import SearchResult
from tests.rag.factories import DocumentFactory

pytestmark = pytest.mark.django_db


def _citation(n: int, **version) -> dict:
    return {"n": n, "chunk_id": n, "document_id": n, "document_title": f"API reference {n}", "path": f"/a{n}.md",
            "doc_date": "2025-01-01T00:00:00+00:00", "doc_type": "api", "heading_path": "", "relevance": 0.5,
            "position": n, "sentence_ids": [], "variant_count": 0, "has_contradictions": False, "provenance": [],
            "role": "answer", **version}


def test_sources_say_current_superseded_or_only_in(logged_in_client, conversation):
    citations = [
        _citation(1, family_id=4, version_label="3.0", is_latest_version=True, lineage="", superseded_by_label=""),
        _citation(2, family_id=4, version_label="2.1", is_latest_version=False, lineage="superseded",
                  superseded_by_label="3.0"),
        _citation(3, family_id=4, version_label="2.1", is_latest_version=False, lineage="retired",
                  superseded_by_label=""),
        _citation(4, family_id=None, version_label="", is_latest_version=True, lineage="", superseded_by_label=""),
        _citation(5),  # stored before versions were kept
        _citation(6, family_id=None, version_label="2.1", is_latest_version=True, lineage="", superseded_by_label=""),
    ]
    Message.objects.create(conversation=conversation, role="assistant", content="A [1] [2] [3] [4] [5] [6]",
                           metadata={"citations": citations, "mode": "extractive"})
    html = logged_in_client.get(f"/chat/{conversation.pk}/").content.decode()
    assert "3.0 · current" in html
    assert "2.1 · superseded by 3.0" in html
    assert "2.1 · only in 2.1" in html
    sources = html[html.index('class="source-list"'):]
    for n in (4, 5):
        item = sources[sources.index(f"-src-{n}\""):]
        item = item[:item.index("</li>")]
        assert "source-version" not in item  # unknown label: nothing extra
    alone = sources[sources.index('-src-6"'):]
    assert '<span class="source-version badge">2.1</span>' in alone[:alone.index("</li>")]  # no family: no "current"


def test_citations_keep_the_version_fields():
    result = SearchResult(chunk_id=7, document_id=3, path="/a.md", title="API 2.1", doc_date=None, doc_type="api",
                          heading_path="", text="x", score=0.5, family_id=4, version_label="2.1", is_latest_version=False,
                          lineage="superseded", superseded_by=9, superseded_by_label="3.0")
    citation = citation_for(result, n=1, position=1, relevance=0.5, sentence_ids=[])
    keys = ("family_id", "version_label", "is_latest_version", "lineage", "superseded_by_label")
    assert {k: citation[k] for k in keys} == {"family_id": 4, "version_label": "2.1", "is_latest_version": False,
                                              "lineage": "superseded", "superseded_by_label": "3.0"}


@pytest.fixture
def labelled(workspace):
    for label in ("2.0", "10.0", "3.0", "3.0"):
        DocumentFactory(workspace=workspace, version_label=label, version_key=f"k{int(float(label)):03d}")
    return workspace


def test_answer_as_of_offers_the_workspace_labels_newest_first(logged_in_client, conversation, labelled):
    html = logged_in_client.get(f"/chat/{conversation.pk}/").content.decode()
    select = html[html.index('name="as_of_version"'):]
    select = select[:select.index("</select>")]
    assert select.index(">Latest<") < select.index(">10.0<") < select.index(">3.0<") < select.index(">2.0<")
    assert select.count(">3.0<") == 1


def test_answer_as_of_is_kept_per_conversation(logged_in_client, conversation, labelled):
    response = logged_in_client.post(f"/chat/{conversation.pk}/options/", {"date": "any", "as_of_version": "3.0"},
                                     headers={"HX-Request": "true"})
    assert response.status_code == 200 and "<html" not in response.content.decode()
    conversation.refresh_from_db()
    assert conversation.search_options["as_of_version"] == "3.0" and "as_of_date" not in conversation.search_options
    assert '<option value="3.0" selected>' in response.content.decode()
    logged_in_client.post(f"/chat/{conversation.pk}/options/", {"date": "any", "as_of_date": "2025-03-15"})
    conversation.refresh_from_db()
    assert "as_of_version" not in conversation.search_options
    assert conversation.search_options["as_of_date"] == "2025-03-15"
    logged_in_client.post(f"/chat/{conversation.pk}/options/", {"date": "any", "as_of_version": ""})
    conversation.refresh_from_db()
    assert not {"as_of_version", "as_of_date"} & set(conversation.search_options)  # back to the latest


@pytest.mark.parametrize("posted, message", [
    ({"as_of_version": "9.9"}, "Select a valid choice"),
    ({"as_of_date": "someday"}, "Enter a valid date"),
    ({"as_of_version": "3.0", "as_of_date": "2025-03-15"}, "not both"),
])
def test_bad_answer_as_of_is_an_inline_message(logged_in_client, conversation, labelled, posted, message):
    response = logged_in_client.post(f"/chat/{conversation.pk}/options/", {"date": "any", **posted},
                                     headers={"HX-Request": "true"})
    html = response.content.decode()
    assert response.status_code == 422 and "<html" not in html and 'id="options"' in html
    assert message in html and 'role="alert"' in html
    conversation.refresh_from_db()
    assert not conversation.search_options.get("as_of_version") and not conversation.search_options.get("as_of_date")


def test_the_chat_options_pass_answer_as_of(workspace):
    options = chat_search_options(workspace=workspace, options={"as_of_version": "2.1", "as_of_date": "2025-03-15"},
                                  top_k=3)
    assert options.as_of_version == "2.1"
    assert options.as_of_date.date().isoformat() == "2025-03-15" and options.as_of_date.hour == 23
