"""In the browser: a table answer is quoted as a readable row with its headers, and an abstention looks like one."""

from __future__ import annotations

from pathlib import Path

import pytest

from chat.models import Message
from tests.chat.conftest import index_folder
from tests.chat.test_browser import ARTIFACTS, CHROMIUM, browser_page, sign_in_and_start_a_conversation  # noqa: F401
from tests.factories import UserFactory, WorkspaceFactory

pytestmark = [pytest.mark.browser, pytest.mark.skipif(not Path(CHROMIUM).exists(), reason="Debian's chromium is not installed (.ci/run installs it)")]

LIMITS = """# Gateway limits

The defaults changed between releases.

| Setting | 2.0 | 2.1 |
|---|---|---|
| Rate limit per API key | 600 requests per minute | 1000 requests per minute |
| Upstream timeout | 30 seconds | 45 seconds |
"""


@pytest.fixture
def limits(transactional_db, django_db_serialized_rollback, tmp_path):
    user = UserFactory(username="reader")
    workspace = WorkspaceFactory(slug="limits", name="Limits", members=[user])
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "limits.md").write_text(LIMITS)
    index_folder(workspace, folder)
    return workspace


def test_a_table_row_is_quoted_cleanly_and_an_off_topic_question_abstains(browser_page, live_server, limits):  # noqa: F811
    page = browser_page
    sign_in_and_start_a_conversation(page, live_server.url)
    page.fill("#id_question", "What is the rate limit per API key?")
    page.click("form.ask button[type=submit]")
    answer = page.locator("article.msg-assistant").last
    answer.locator(".source-list").wait_for()
    body = answer.locator(".msg-body").inner_text()
    # A row of releases answers a question about now with its newest cell, and says which release that is.
    assert body.startswith("Rate limit per API key (2.1): 1000 requests per minute.") and "600" not in body
    assert "|" not in body and "---" not in body
    page.screenshot(path=str(ARTIFACTS / "chat-table-answer.png"), full_page=True)

    page.fill("#id_question", "How do I bake sourdough bread at home?")
    page.click("form.ask button[type=submit]")
    page.locator("article.msg-assistant").nth(1).wait_for()
    abstention = page.locator("article.msg-assistant").last
    assert abstention.locator(".abstention").is_visible()
    assert "don't answer that" in abstention.locator(".msg-body").inner_text()
    assert "Closest matches" in abstention.inner_text()
    assert abstention.locator(".closest-list a").first.inner_text() == "Gateway limits"
    assert abstention.locator(".source-list").count() == 0 and abstention.locator("a.cite").count() == 0
    page.screenshot(path=str(ARTIFACTS / "chat-abstention.png"), full_page=True)
    latest = Message.objects.filter(role="assistant").latest("id")
    assert latest.metadata["abstained"] is True and latest.metadata["citations"] == []
