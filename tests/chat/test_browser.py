"""The chat as a person uses it: headless Chromium (Debian's) driven by Playwright on a live server.

Screenshots land in test-artifacts/ for a human to look at.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from chat.models import Message
from rag.bootstrap import demo_corpus_prepare
from tests.chat.conftest import index_folder
from tests.factories import UserFactory, WorkspaceFactory
from tests.licensing.factories import LicenseFactory

ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(not Path(CHROMIUM).exists(), reason="Debian's chromium is not installed (.ci/run installs it)"),
]


@pytest.fixture
def browser_page(live_server):
    # Playwright's sync API keeps an event loop around; the ORM calls in this test are still synchronous.
    os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"
    from playwright.sync_api import sync_playwright

    ARTIFACTS.mkdir(exist_ok=True)
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=CHROMIUM,
            args=["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
                  "--disable-sync", "--no-first-run"],
        )
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        page.set_default_timeout(30_000)
        yield page
        browser.close()
    os.environ.pop("DJANGO_ALLOW_ASYNC_UNSAFE", None)


@pytest.fixture
def demo(transactional_db, django_db_serialized_rollback):
    user = UserFactory(username="reader")
    workspace = WorkspaceFactory(slug="demo", name="Demo", members=[user])
    LicenseFactory(workspace=workspace)
    index_folder(workspace, demo_corpus_prepare())
    return workspace


def sign_in_and_start_a_conversation(page, base_url: str) -> None:
    """As "reader": the chat sends an anonymous visitor to the login page first."""
    page.goto(f"{base_url}/chat/")
    assert "/accounts/login/" in page.url
    page.fill("#id_username", "reader")
    page.fill("#id_password", "correct horse battery")
    page.click("button[type=submit]")
    page.click("text=New conversation")
    page.wait_for_url("**/chat/*/")


def test_ask_follow_a_citation_expand_sources_filter_and_reload(browser_page, live_server, demo):
    page = browser_page
    sign_in_and_start_a_conversation(page, live_server.url)
    page.fill("#id_question", "What is the rate limit per API key?")
    page.click("form.ask button[type=submit]")
    answer = page.locator("article.msg-assistant").last
    answer.locator(".source-list").wait_for()
    page.screenshot(path=str(ARTIFACTS / "chat-answer.png"), full_page=True)

    message = Message.objects.filter(role="assistant").latest("id")
    first = message.metadata["citations"][0]
    # [1] leads to the first source entry, which names the cited document and links to its chunk.
    answer.locator("a.cite", has_text="[1]").first.click()
    assert page.url.endswith(f"#m{message.pk}-src-1")
    source = page.locator(f"#m{message.pk}-src-1")
    assert first["document_title"] in source.inner_text()
    href = source.locator("a").first.get_attribute("href")
    assert f"/documents/{first['document_id']}/" in href and f"chunk={first['chunk_id']}" in href

    # Provenance opens from the keyboard.
    toggle = page.locator("button.view-sources").first
    if toggle.count():
        toggle.focus()
        page.keyboard.press("Enter")
        assert toggle.get_attribute("aria-expanded") == "true"
        assert page.locator(f"#{toggle.get_attribute('aria-controls')}").is_visible()
        page.screenshot(path=str(ARTIFACTS / "chat-provenance.png"), full_page=True)

    # The cited sentences are highlighted on the document page.
    with page.expect_navigation():
        source.locator("a").first.click()
    assert page.locator(f"#chunk-{first['chunk_id']} mark.cited").count() >= 1
    page.screenshot(path=str(ARTIFACTS / "document-cited.png"), full_page=True)
    page.go_back()  # the page comes back with the exchange, not a stale cached copy
    page.locator(f"#m{message.pk}-src-1").wait_for()

    # A filter switched in the sidebar applies to the next question.
    with page.expect_response(lambda r: "/options/" in r.url):
        page.select_option("#id_doc_type", "troubleshooting")
    page.fill("#id_question", "What does error 503 mean?")
    page.click("form.ask button[type=submit]")
    page.wait_for_function("document.querySelectorAll('article.msg-assistant').length >= 2")
    latest = Message.objects.filter(role="assistant").latest("id")
    assert latest.metadata["search"]["options"]["doc_type"] == "troubleshooting"

    # Reloading shows the same citations, now read from the database.
    page.reload()
    assert first["document_title"] in page.locator(f"#m{message.pk}-src-1").inner_text()
    page.screenshot(path=str(ARTIFACTS / "chat-reloaded.png"), full_page=True)
