"""A fresh install as a new user finds it: the demo workspace on its built-in Writer Pro trial, with
de-duplicated, newest-version answers and every option switched on. Headless Chromium via Playwright."""

from __future__ import annotations

import pytest

from chat.models import Message
from licensing.models import License
from rag.bootstrap import DEMO_SLUG, demo_corpus_prepare, demo_workspace_bootstrap
from tests.chat.conftest import index_folder
from tests.browser_support import log_in
from tests.chat.test_browser import ARTIFACTS, browser_page  # noqa: F401 (a fixture)
from tests.chat.test_browser import pytestmark as BROWSER_MARKS
from tests.factories import UserFactory, WorkspaceFactory

pytestmark = BROWSER_MARKS


@pytest.fixture
def fresh_install(transactional_db, django_db_serialized_rollback):
    """What `make run` leaves: an admin, the demo workspace indexed, and the bootstrap's trial."""
    admin = UserFactory(username="admin", is_staff=True, is_superuser=True)
    # Marked as the bootstrap marks the demo workspace it creates.
    demo = WorkspaceFactory(slug=DEMO_SLUG, name="Demo", members=[admin], builtin_demo=True)
    index_folder(demo, demo_corpus_prepare())  # indexed here, not queued: no worker in this test
    list(demo_workspace_bootstrap())
    assert not License.objects.exists()
    return demo


def test_the_demo_workspace_shows_its_trial_and_answers_de_duplicated(browser_page, live_server, fresh_install):
    page = browser_page
    log_in(page, live_server.url, "admin")
    page.click("text=New conversation")
    page.wait_for_url("**/chat/*/")

    badge = page.locator(".tier-badge")
    assert badge.inner_text().startswith("Writer Pro trial · until")
    assert page.locator("#id_dedup").is_checked() and page.locator("#id_dedup").is_enabled()
    assert page.locator("#id_provenance").is_enabled() and page.locator("#provenance-tier").count() == 0

    page.fill("#id_question", "What is the rate limit per API key?")
    page.click("form.ask button[type=submit]")
    answer = page.locator("article.msg-assistant").last
    answer.locator(".source-list").wait_for()
    page.screenshot(path=str(ARTIFACTS / "chat-trial.png"), full_page=True)

    message = Message.objects.filter(role="assistant").latest("id")
    search = message.metadata["search"]
    assert search["canonical_filtering"] == "applied"
    assert search["stats"]["provenance"] == "applied"
    records = [c["canonical_record_id"] for c in message.citations if c["canonical_record_id"]]
    assert len(records) == len(set(records))  # one result per merged passage
    assert "come with Writer Pro" not in answer.inner_text()
