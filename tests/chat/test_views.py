"""Chat pages over the test client: HTMX and plain POST, options, gating, isolation, escaping."""

from __future__ import annotations


import json
import re

import pytest
from django.core.management import call_command

from chat.models import Conversation, Message
from tests.chat.conftest import index_folder
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db
QUESTION = "How many requests per minute may an API key send?"


def test_home_redirects_to_the_latest_conversation_and_new_creates_one(logged_in_client, workspace, conversation):
    assert logged_in_client.get("/")["Location"] == f"/chat/{conversation.pk}/"
    response = logged_in_client.post("/chat/new/")
    newest = Conversation.objects.exclude(pk=conversation.pk).get()
    assert response["Location"] == f"/chat/{newest.pk}/"
    assert b"New conversation" in logged_in_client.get("/chat/?all=1").content


def test_htmx_ask_appends_the_exchange_with_persisted_citations(logged_in_client, conversation, api_versions, licensed):
    response = logged_in_client.post(f"/chat/{conversation.pk}/ask/", {"question": QUESTION},
                                     headers={"HX-Request": "true"})
    html = response.content.decode()
    assert response.status_code == 200 and "<html" not in html
    reply = conversation.messages.get(role="assistant")
    citations = reply.metadata["citations"]
    assert citations and set(citations[0]) >= {"n", "chunk_id", "document_id", "document_title", "path", "doc_date",
                                                 "relevance", "position", "sentence_ids", "variant_count",
                                                 "has_contradictions"}
    assert reply.metadata["search"]["canonical_filtering"] == "applied"
    assert "search_ms" in reply.metadata["timings"]
    assert f'href="#m{reply.pk}-src-1"' in html and f'id="m{reply.pk}-src-1"' in html
    first = citations[0]
    assert f"/documents/{first['document_id']}/?chunk={first['chunk_id']}&amp;s={first['sentence_ids'][0]}" in html
    # The page reloaded from the database shows the same citations.
    page = logged_in_client.get(f"/chat/{conversation.pk}/").content.decode()
    assert f'id="m{reply.pk}-src-1"' in page and first["document_title"] in page


def test_plain_post_without_javascript_redirects_to_the_answer(logged_in_client, conversation, api_versions, licensed):
    response = logged_in_client.post(f"/chat/{conversation.pk}/ask/", {"question": QUESTION})
    reply = conversation.messages.get(role="assistant")
    assert response.status_code == 302 and response["Location"] == f"/chat/{conversation.pk}/#m{reply.pk}"
    assert conversation.messages.count() == 2


def test_empty_question_is_a_400(logged_in_client, conversation):
    assert logged_in_client.post(f"/chat/{conversation.pk}/ask/", {"question": "  "}).status_code == 400
    assert logged_in_client.post(f"/chat/{conversation.pk}/ask/", {"question": ""},
                                 headers={"HX-Request": "true"}).status_code == 400


def test_options_are_kept_per_conversation_and_validated(logged_in_client, conversation, licensed):
    response = logged_in_client.post(f"/chat/{conversation.pk}/options/",
                                     {"dedup": "on", "provenance": "on", "date": "this_year", "doc_type": "api"},
                                     headers={"HX-Request": "true"})
    assert response.status_code == 200 and b'id="options"' in response.content
    conversation.refresh_from_db()
    assert conversation.search_options == {"dedup": True, "include_archived": False, "provenance": True,
                                           "date": "this_year", "after": "", "doc_type": "api", "doc_type_mode": "boost"}
    bad = logged_in_client.post(f"/chat/{conversation.pk}/options/", {"date": "after"})
    assert bad.status_code == 400 and b"after" in bad.content
    assert logged_in_client.post(f"/chat/{conversation.pk}/options/", {"date": "someday"}).status_code == 400


def test_free_workspace_keeps_dedup_on_and_says_what_writer_pro_adds(logged_in_client, conversation):
    page = logged_in_client.get(f"/chat/{conversation.pk}/").content.decode()
    assert 'name="dedup" id="id_dedup" checked aria-describedby="dedup-tier">' in page
    assert "near-duplicates hidden on every plan. Writer Pro also merges" in page
    assert 'id="id_provenance" disabled aria-describedby="provenance-tier">' in page
    assert "With Writer Pro, each source lists every document version" in page


def test_licensed_workspace_has_dedup_on(logged_in_client, conversation, licensed):
    page = logged_in_client.get(f"/chat/{conversation.pk}/").content.decode()
    assert 'name="dedup" id="id_dedup" checked>' in page
    assert 'id="id_provenance">' in page and "provenance-tier" not in page


def test_free_answer_is_version_aware_and_names_what_writer_pro_adds(logged_in_client, conversation, api_versions):
    logged_in_client.post(f"/chat/{conversation.pk}/ask/", {"question": QUESTION})
    reply = conversation.messages.get(role="assistant")
    assert reply.metadata["search"]["canonical_filtering"] == "unlicensed"
    assert reply.metadata["search"]["options"]["dedup"] is True
    assert "1200 requests" in reply.content.split("Note:")[0]  # the newest version leads on Free too
    page = logged_in_client.get(f"/chat/{conversation.pk}/").content.decode()
    assert "newest versions, near-duplicates hidden; merged passages come with Writer Pro" in page


def test_conversations_of_others_are_404(client, conversation, workspace):
    intruder = UserFactory()
    workspace.members.add(intruder)  # same workspace, still not their conversation
    reply = Message.objects.create(conversation=conversation, role="assistant", content="secret")
    client.force_login(intruder)
    for url in (f"/chat/{conversation.pk}/", f"/chat/messages/{reply.pk}/", f"/chat/messages/{reply.pk}/stream/"):
        assert client.get(url).status_code == 404, url
    assert client.post(f"/chat/{conversation.pk}/ask/", {"question": "hi"}).status_code == 404
    assert client.post(f"/chat/{conversation.pk}/options/", {"date": "any"}).status_code == 404


def test_document_text_in_answers_is_escaped(logged_in_client, conversation, api_versions, licensed):
    logged_in_client.post(f"/chat/{conversation.pk}/ask/", {"question": "escape sequence script alert"})
    page = logged_in_client.get(f"/chat/{conversation.pk}/").content.decode()
    assert "<script>alert(" not in page
    assert "&lt;script&gt;alert(" in page


def test_old_messages_without_metadata_still_render(logged_in_client, conversation):
    Message.objects.create(conversation=conversation, role="assistant", content="An answer from before [1].")
    page = logged_in_client.get(f"/chat/{conversation.pk}/").content.decode()
    assert "An answer from before [1]." in page


def test_ask_command_prints_json_and_json_lines(workspace, api_versions, licensed, capsys, tmp_path):
    call_command("ask", QUESTION, workspace=workspace.slug, as_json=True)
    data = json.loads(capsys.readouterr().out)
    assert data["mode"] == "extractive" and "1200" in data["answer"]
    assert set(data["citations"][0]) >= {"n", "chunk_id", "document_id", "path", "title", "doc_date", "relevance",
                                         "sentence_ids"}
    questions = tmp_path / "q.txt"
    questions.write_text(f"{QUESTION}\nHow is the API key sent?\n")
    call_command("ask", workspace=workspace.slug, as_json=True, queries_file=questions)
    lines = capsys.readouterr().out.strip().splitlines()
    assert [json.loads(line)["question"] for line in lines] == [QUESTION, "How is the API key sent?"]


COPIED = "Rotate every API key at least every 90 days, and revoke a key at once when a laptop that held it is lost."


@pytest.fixture
def copied_passage(workspace, tmp_path):
    """Two unrelated guides that carry one paragraph word for word: a duplicate, not a version."""
    folder = tmp_path / "guides"
    folder.mkdir()
    security = ["## Audit logs\n\nAudit logs are kept for one year in the control plane database.",
                "## TLS\n\nThe proxy accepts TLS 1.2 and 1.3 only; older clients are refused during the handshake.",
                "## Secrets\n\nSecrets live in the vault and are mounted read-only into each gateway replica."]
    onboarding = ["## First day\n\nNew staff get a laptop, a badge and a buddy who walks them through the office.",
                  "## Payroll\n\nSalaries are paid on the last working day of each month by bank transfer.",
                  "## Holidays\n\nEveryone has twenty-five days of paid leave a year, booked in the HR portal."]
    for name, title, sections in (("security.md", "Lumen Security Guide", security),
                                  ("onboarding.md", "Lumen Onboarding Handbook", onboarding)):
        body = "\n\n".join([sections[0], f"## Keys\n\n{COPIED}", *sections[1:]])
        (folder / name).write_text(f"# {title}\n\n{body}\n")
    index_folder(workspace, folder)


def test_hide_duplicate_passages_says_what_it_hid_and_unticked_shows_them(
        logged_in_client, conversation, copied_passage, licensed):
    question = "How often should an API key be rotated?"
    page = logged_in_client.get(f"/chat/{conversation.pk}/").content.decode()
    assert '<label for="id_dedup">Hide duplicate passages</label>' in page
    logged_in_client.post(f"/chat/{conversation.pk}/ask/", {"question": question})
    stats = conversation.messages.filter(role="assistant").last().metadata["search"]["stats"]
    hidden = stats["variants_filtered"] + stats["near_duplicates_removed"]
    assert hidden >= 1
    page = logged_in_client.get(f"/chat/{conversation.pk}/").content.decode()
    assert f"{hidden} duplicate passage{'s' if hidden > 1 else ''} hidden" in page

    logged_in_client.post(f"/chat/{conversation.pk}/options/", {"date": "any"})  # the box unticked
    logged_in_client.post(f"/chat/{conversation.pk}/ask/", {"question": question})
    reply = conversation.messages.filter(role="assistant").last()
    stats = reply.metadata["search"]["stats"]
    assert stats["variants_filtered"] == stats["near_duplicates_removed"] == 0
    page = logged_in_client.get(f"/chat/{conversation.pk}/").content.decode()
    # Nothing was hidden: no duplicates line under the second answer (the first one's line stays; issue 36).
    assert len(re.findall(r"\d+ duplicate passages? hidden", page)) == 1 and "duplicate passages shown" not in page


def test_answers_name_sections_once_slides_as_slides_and_say_when_provenance_has_nothing(logged_in_client,
                                                                                           conversation):
    Message.objects.create(
        conversation=conversation, role="assistant", content="Nothing in the documents answers that.",
        metadata={"mode": "extractive", "abstained": True, "closest": [
            {"chunk_id": 1, "document_id": 1, "document_title": "Gateway Guide", "heading_path": "Gateway Guide > Limits"},
            {"chunk_id": 2, "document_id": 2, "document_title": "Release 3.0 Overview",
             "heading_path": "Release 3.0 Overview"}]})
    cited = {"n": 1, "chunk_id": 3, "document_id": 3, "document_title": "Release 3.0 Overview", "page": 1,
             "path": "uploads/overview.pptx", "doc_date": "2025-01-01", "sentence_ids": ["3.0"], "provenance": []}
    Message.objects.create(
        conversation=conversation, role="assistant", content="The release ships in March [1].",
        metadata={"mode": "extractive", "citations": [cited],
                  "search": {"options": {"provenance": True}, "stats": {"provenance": "applied"}}})
    page = logged_in_client.get(f"/chat/{conversation.pk}/").content.decode()
    closest = page[page.index('class="closest-list"'):page.index("</ul>", page.index('class="closest-list"'))]
    assert "Gateway Guide</a> <span class=\"muted\">· Limits</span>" in closest
    assert "· Gateway Guide" not in closest and "· Release 3.0 Overview" not in closest
    assert '<span class="muted">slide 1</span>' in page and "p. 1" not in page
    assert "Provenance: each of these sources comes from one document" in page
