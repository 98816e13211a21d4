"""Every refusal a person can cause shows its reason where they are looking (static/js/chat.js, the upload page).

A refusal that only the network tab sees is a question silently ignored. Headless Chromium via
Playwright on a live server; screenshots land in test-artifacts/.
"""

from __future__ import annotations

import pytest

from chat.models import Conversation, Message
from tests.browser_support import log_in
from tests.chat.test_browser import ARTIFACTS, browser_page  # noqa: F401 (a fixture)
from tests.chat.test_browser import pytestmark as BROWSER_MARKS
from tests.factories import UserFactory, WorkspaceFactory

pytestmark = BROWSER_MARKS


@pytest.fixture
def conversation(transactional_db, django_db_serialized_rollback):
    user = UserFactory(username="reader")
    workspace = WorkspaceFactory(slug="handbook", name="Handbook", members=[user])
    return Conversation.objects.create(user=user, workspace=workspace, title="Badges")


def _open(page, base_url: str, conversation: Conversation) -> None:
    log_in(page, base_url, "reader", start=f"/chat/{conversation.pk}/")


def _ask_and_read_the_refusal(page, question: str) -> str:
    page.fill("#id_question", question)
    with page.expect_response(lambda response: response.url.endswith("/ask/")) as response:
        page.click("form.ask button[type=submit]")
    assert response.value.status == 429
    refusal = page.locator("#ask-error [role=alert]")
    refusal.wait_for()
    return refusal.inner_text()


def test_a_question_past_the_rate_says_so_under_the_box_and_keeps_the_question(
        browser_page, live_server, conversation, settings):
    settings.CHAT_ASKS_PER_MINUTE = 1
    Message.objects.create(conversation=conversation, role="user", content="Where is the badge office?")
    page = browser_page
    _open(page, live_server.url, conversation)
    reason = _ask_and_read_the_refusal(page, "And on Saturdays?")
    page.screenshot(path=str(ARTIFACTS / "refusal-rate.png"))
    assert reason == "At most 1 questions a minute; ask again in a minute."
    assert page.locator("#id_question").input_value() == "And on Saturdays?"
    # Shown where the person looks: right above the box they typed in.
    error, box = page.locator("#ask-error").bounding_box(), page.locator("#id_question").bounding_box()
    assert 0 <= box["y"] - (error["y"] + error["height"]) < 40


def test_a_question_while_an_answer_is_pending_says_so(browser_page, live_server, conversation):
    Message.objects.create(conversation=conversation, role="user", content="Where is the badge office?")
    Message.objects.create(conversation=conversation, role="assistant", content="",
                           metadata={"pending": True, "started_at": "2999-01-01T00:00:00+00:00"})
    page = browser_page
    _open(page, live_server.url, conversation)
    reason = _ask_and_read_the_refusal(page, "And on Saturdays?")
    assert reason == "The previous answer is still being written; ask again once it is in."


def test_an_answer_waiting_for_a_free_stream_says_so(browser_page, live_server, conversation, settings):
    settings.CHAT_STREAMS_PER_PROCESS = 0  # every stream refused: this web process is "busy"
    Message.objects.create(conversation=conversation, role="user", content="Where is the badge office?")
    Message.objects.create(conversation=conversation, role="assistant", content="",
                           metadata={"pending": True, "started_at": "2999-01-01T00:00:00+00:00"})
    page = browser_page
    _open(page, live_server.url, conversation)
    waiting = page.locator("article.msg-assistant .stream-wait")
    waiting.get_by_text("busy", exact=False).wait_for()
    page.screenshot(path=str(ARTIFACTS / "refusal-stream.png"))
    assert "this answer follows" in waiting.inner_text()


def _upload(page, base_url: str, files: list[dict]) -> None:
    page.goto(f"{base_url}/documents/upload/")
    page.set_input_files("#id_files", files)
    with page.expect_navigation():
        page.click("form[data-file-info] button[type=submit]")


@pytest.mark.parametrize(("limit", "expected"), [
    ("UPLOAD_MAX_BYTES", "limit for one upload"),
    ("INGEST_MAX_FILE_BYTES", "limit for one file"),
    ("WORKSPACE_STORAGE_QUOTA_BYTES", "storage quota"),
])
def test_an_upload_past_a_limit_says_which_on_the_page_it_lands_on(
        browser_page, live_server, conversation, settings, limit, expected):
    setattr(settings, limit, 4096)
    page = browser_page
    log_in(page, live_server.url, "reader", start="/documents/")
    big = {"name": "badges.txt", "mimeType": "text/plain", "buffer": b"The badge office is in room B-214.\n" * 4000}
    _upload(page, live_server.url, [big])
    page.screenshot(path=str(ARTIFACTS / f"refusal-upload-{limit.lower()}.png"), full_page=True)
    alert = page.locator("[role=alert], .error, .message.warning").filter(has_text=expected)
    assert alert.count() >= 1, page.locator("main").inner_text()
    assert alert.first.is_visible()
