"""Citation compliance of generated answers, from a loopback OpenAI-compatible server scripted three ways."""

from __future__ import annotations

import pytest

from chat import services
from chat.citations import citation_compliance
from chat.models import Conversation, Message
from chat.selectors import citation_compliance_by_week
from devkit.llm_server import FakeLLM

pytestmark = pytest.mark.django_db

GOOD = ("The default limit is 1200 requests per minute per API key [1]. Older releases allowed "
        "600 requests per minute [2].")
BAD = ("The default limit is 1200 requests per minute per API key. Requests over the limit get HTTP 429 with "
       "a Retry-After header. The 2.0 reference says something else [2].")
INVENTED = "The default limit is 1200 requests per minute per API key [7]. Keys go in the X-Lumen-Key header [1]."


def test_compliance_counts_sentences_markers_and_unused_sources() -> None:
    figures = citation_compliance("One fact here [1]. Another fact there. A third one [9].\n\nSources:", sources=3)
    assert figures["sentences"] == 3 and figures["cited_sentences"] == 1 and figures["cited_share"] == 0.333
    assert figures["invalid_markers"] == [9] and figures["uncited_sources"] == [2, 3]
    text = "One fact here [1]. Another fact there. A third one [9].\n\nSources:"
    assert [text[start:end] for start, end in figures["uncited_spans"]] == ["Another fact there.", "A third one [9]."]


def test_a_marker_after_the_full_stop_belongs_to_its_sentence() -> None:
    figures = citation_compliance("The limit is 1200 requests per minute. [1] Keys expire after 90 days. [2]", sources=2)
    assert figures["cited_share"] == 1.0 and figures["uncited_spans"] == [] and figures["uncited_sources"] == []


def _ask(workspace, user, reply: str, settings) -> Message:
    conversation = Conversation.objects.create(workspace=workspace, user=user)
    with FakeLLM(reply) as llm:
        settings.LLM_BASE_URL, settings.LLM_MODEL = llm.url, "test-model"
        _, message = services.message_ask(conversation=conversation,
                                          question="How many requests per minute may an API key send?")
    message.refresh_from_db()
    return message


@pytest.fixture
def member(user):
    return user  # the workspace fixture's member


def test_a_well_cited_answer_is_fully_compliant(workspace, member, api_versions, settings):
    compliance = _ask(workspace, member, GOOD, settings).metadata["compliance"]
    assert compliance["sentences"] == 2 and compliance["cited_share"] == 1.0
    assert compliance["invalid_markers"] == [] and 1 not in compliance["uncited_sources"]


def test_a_badly_cited_answer_is_measured_and_its_uncited_sentences_marked(workspace, member, api_versions, settings,
                                                                           client):
    message = _ask(workspace, member, BAD, settings)
    compliance = message.metadata["compliance"]
    assert compliance["sentences"] == 3 and compliance["cited_sentences"] == 1 and compliance["cited_share"] == 0.333
    assert 1 in compliance["uncited_sources"]
    client.force_login(member)
    page = client.get(f"/chat/messages/{message.pk}/").content.decode()
    assert page.count('class="uncited"') == 2
    assert "1 of 3 sentences cite a source" in page


def test_invented_markers_are_flagged_not_linked(workspace, member, api_versions, settings, client):
    message = _ask(workspace, member, INVENTED, settings)
    compliance = message.metadata["compliance"]
    assert compliance["invalid_markers"] == [7] and compliance["cited_sentences"] == 1
    assert [c["n"] for c in message.citations] == [1]
    client.force_login(member)
    page = client.get(f"/chat/messages/{message.pk}/").content.decode()
    assert '<span class="cite-invalid" title="No source 7 was given">[7]?</span>' in page
    assert f'href="#m{message.pk}-src-1"' in page


def test_the_admin_shows_the_workspace_rate_per_week(workspace, member, api_versions, settings, staff_client):
    for reply in (GOOD, BAD, INVENTED):
        _ask(workspace, member, reply, settings)
    weeks = citation_compliance_by_week(messages=Message.objects.all())
    assert len(weeks) == 1 and weeks[0]["answers"] == 3
    assert weeks[0]["sentences"] == 7 and weeks[0]["cited"] == 4 and weeks[0]["invalid"] == 1  # 2/2, 1/3, 1/2
    page = staff_client.get("/admin/chat/llmanswer/").content.decode()
    assert "Citation compliance per workspace and week" in page and "4/7" in page and "57%" in page
