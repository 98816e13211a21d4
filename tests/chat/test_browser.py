"""The chat as a person uses it: headless Chromium (Debian's) driven by Playwright on a live server.

Every step asserts what the reader sees on the page, not what the database stored.
Screenshots land in test-artifacts/ for a human to look at.
"""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

import pytest
from playwright.sync_api import expect

from chat.models import Conversation, Message
from rag import embeddings
from tests.chat.conftest import V2, V3, index_folder
from tests.factories import UserFactory, WorkspaceFactory
from tests.licensing.factories import LicenseFactory

ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(not Path(CHROMIUM).exists(), reason="Debian's chromium is not installed (.ci/run installs it)"),
]

TROUBLESHOOTING = """---
title: Lumen Troubleshooting
date: 2025-11-01
doc_type: troubleshooting
---
# Lumen Troubleshooting

## Too many requests

When a client sends more requests per minute than its API key allows, the gateway answers HTTP 429.
Wait for the number of seconds in the Retry-After header, then send the request again.
"""

OPERATIONS = """---
title: Lumen Capacity Planning
date: 2023-03-01
doc_type: operations
---
# Lumen Capacity Planning

## Request volume

Plan one gateway replica for every 5000 requests per minute that your API keys send at peak.
"""


@pytest.fixture
def browser_page(live_server):
    # Playwright's sync API keeps an event loop around; the ORM calls in this test are still synchronous.
    os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"
    from playwright.sync_api import sync_playwright

    ARTIFACTS.mkdir(exist_ok=True)
    blocked: list[str] = []
    try:
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(
                executable_path=CHROMIUM,
                args=["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
                      "--disable-sync", "--no-first-run"],
            )
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            page.set_default_timeout(30_000)
            # Whatever the Content-Security-Policy blocked (an inline script, handler or style) is a broken page.
            page.on("console", lambda message: blocked.append(f"{message.text} at {message.location}")
                    if message.type == "error" and "Content Security Policy" in message.text else None)
            yield page
            browser.close()
    finally:  # a launch that failed must not leave async safety off for the tests after this one
        os.environ.pop("DJANGO_ALLOW_ASYNC_UNSAFE", None)
    assert blocked == [], blocked


@pytest.fixture
def lumen(transactional_db, django_db_serialized_rollback, tmp_path):
    """Two API versions that agree on authentication (one merged passage) and disagree on the rate
    limit (a contradiction), a troubleshooting page and an old operations page; Writer Pro licensed."""
    return lumen_indexed(tmp_path, {"api-2.0.md": V2, "api-3.0.md": V3, "troubleshooting.md": TROUBLESHOOTING,
                                    "capacity.md": OPERATIONS})


def lumen_indexed(tmp_path, files: dict[str, str]):
    """The workspace "lumen", Writer Pro licensed, its reader "reader", `files` (name -> text) indexed and merged."""
    embeddings.reset_encoder()
    user = UserFactory(username="reader")
    workspace = WorkspaceFactory(slug="lumen", name="Lumen", members=[user])
    LicenseFactory(workspace=workspace)
    folder = tmp_path / "lumen"
    folder.mkdir()
    for name, text in files.items():
        (folder / name).write_text(text)
    index_folder(workspace, folder)
    return workspace


def _log_in(page, url: str) -> None:
    page.goto(f"{url}/chat/")
    assert "/accounts/login/" in page.url
    page.fill("#id_username", "reader")
    page.fill("#id_password", "correct horse battery")
    page.click("button[type=submit]")


def _new_conversation(page) -> int:
    with page.expect_navigation():
        page.click("text=New conversation")
    return int(re.search(r"/chat/(\d+)/", page.url).group(1))


def sign_in_and_start_a_conversation(page, base_url: str) -> int:
    """As "reader": the chat sends an anonymous visitor to the login page first."""
    _log_in(page, base_url)
    return _new_conversation(page)


def _ask(page, question: str):
    before = page.locator("article.msg-assistant").count()
    page.fill("#id_question", question)
    page.click("form.ask button[type=submit]")
    # Locators, not wait_for_function: Playwright evaluates its string with eval, which the policy refuses.
    page.locator("article.msg-assistant").nth(before).wait_for()
    answer = page.locator("article.msg-assistant").last
    answer.locator(".source-list").wait_for()
    return answer


def _cited_titles(answer) -> list[str]:
    """The titles of the answer's sources as shown: "[1] Lumen Troubleshooting (2025-11-01)"."""
    return [re.sub(r"^\[\d+\]\s*", "", link.inner_text()).rsplit(" (", 1)[0]
            for link in answer.locator("li.source > a:first-child").all()]


def _set_option(page, action) -> None:
    """Change one control of the options panel and wait for the panel the server sends back."""
    with page.expect_response(lambda r: "/options/" in r.url):
        action()
    # The panel is swapped after the response: a control changed before htmx settles is the old one.
    page.locator("#options").wait_for()
    expect(page.locator(".htmx-request, .htmx-swapping, .htmx-settling")).to_have_count(0)


def test_ask_follow_a_citation_open_provenance_filter_by_type_and_reload(browser_page, live_server, lumen, settings):
    # The tiny test encoder scores passages far lower than the model: no abstention here (tested on its own).
    settings.ANSWER_RELEVANCE_FLOOR = 0.0
    page = browser_page
    _log_in(page, live_server.url)
    _new_conversation(page)

    answer = _ask(page, "How is the API key sent with each request?")
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

    # The authentication passage is the same in 2.0 and 3.0: one source, merged, saying so to screen readers.
    badge = answer.locator(".badge", has_text="Merged from").first
    assert badge.is_visible() and badge.inner_text() == "Merged from 2 sources"
    assert badge.get_attribute("aria-label") == "Merged from 2 source documents"

    # Its provenance list is closed, and opens from the keyboard.
    toggle = answer.locator("button.view-sources").first
    listing = page.locator(f"#{toggle.get_attribute('aria-controls')}")
    assert toggle.get_attribute("aria-expanded") == "false" and listing.is_hidden()
    toggle.focus()
    page.keyboard.press("Enter")
    assert toggle.get_attribute("aria-expanded") == "true" and toggle.inner_text() == "Hide sources"
    assert listing.is_visible()
    listed = listing.inner_text()
    assert "Lumen API Reference 2.0" in listed and "Lumen API Reference 3.0" in listed
    assert "/tmp/" not in listed and "api-2.0.md" in listed  # file names, never the server's folders
    page.screenshot(path=str(ARTIFACTS / "chat-provenance.png"), full_page=True)

    # The rate limit changed between the versions: a change, not a disagreement, so no "Documents disagree" warning
    # (issue 36: the flag only for a pending or decided contradiction among the cited passages).
    conflict = _ask(page, "How many requests per minute may an API key send?")
    assert "1200" in conflict.inner_text() and conflict.locator("button.warn-icon").count() == 0

    # The cited sentences are highlighted on the document page; back comes back with the exchange.
    with page.expect_navigation():
        source.locator("a").first.click()
    assert page.locator(f"#chunk-{first['chunk_id']} mark.cited").count() >= 1
    assert "/tmp/" not in page.locator("dd.path").inner_text()
    page.screenshot(path=str(ARTIFACTS / "document-cited.png"), full_page=True)
    page.go_back()
    page.locator(f"#m{message.pk}-src-1").wait_for()

    # Choosing a document type, "only this type", changes which documents are cited.
    question = "What happens to requests over the limit?"
    before = _cited_titles(_ask(page, question))
    assert any(title.startswith("Lumen API Reference") for title in before), before
    _set_option(page, lambda: page.select_option("#id_doc_type", "troubleshooting"))
    _set_option(page, lambda: page.check("#id_doc_type_mode_filter"))
    assert page.locator("#id_doc_type").input_value() == "troubleshooting"
    assert page.locator("#id_doc_type_mode_filter").is_checked()
    after = _cited_titles(_ask(page, question))
    assert after and set(after) == {"Lumen Troubleshooting"}
    page.screenshot(path=str(ARTIFACTS / "chat-doc-type-filter.png"), full_page=True)

    # Reloading shows the same citations, now read from the database.
    page.reload()
    assert first["document_title"] in page.locator(f"#m{message.pk}-src-1").inner_text()
    assert _cited_titles(page.locator("article.msg-assistant").last) == after


def test_options_belong_to_one_conversation(browser_page, live_server, lumen):
    page = browser_page
    _log_in(page, live_server.url)
    first = _new_conversation(page)
    _set_option(page, lambda: page.check("#id_include_archived"))
    _set_option(page, lambda: page.select_option("#id_doc_type", "api"))
    _set_option(page, lambda: page.select_option("#id_date", "this_year"))

    second = _new_conversation(page)
    assert second != first
    # A new conversation starts from the defaults, not from the last one's choices.
    assert not page.locator("#id_include_archived").is_checked()
    assert page.locator("#id_doc_type").input_value() == ""
    assert page.locator("#id_date").input_value() == "any"
    assert page.locator("#id_dedup").is_checked()
    _set_option(page, lambda: page.check("#id_provenance"))
    page.screenshot(path=str(ARTIFACTS / "chat-options-second.png"), full_page=True)

    page.goto(f"{live_server.url}/chat/{first}/")
    assert page.locator("#id_include_archived").is_checked()
    assert page.locator("#id_doc_type").input_value() == "api"
    assert page.locator("#id_date").input_value() == "this_year"
    assert not page.locator("#id_provenance").is_checked()  # the second conversation's choice stays there

    # "Make these my defaults" is how a choice reaches new conversations.
    with page.expect_response(lambda r: "/options/default/" in r.url):
        page.click("text=Make these my defaults")
    assert page.locator("#options [role=status]", has_text="New conversations will start").is_visible()
    _new_conversation(page)
    assert page.locator("#id_doc_type").input_value() == "api"
    assert page.locator("#id_include_archived").is_checked()


def test_after_a_date_asks_for_the_date_inline_then_applies_it(browser_page, live_server, lumen):
    page = browser_page
    _log_in(page, live_server.url)
    conversation = _new_conversation(page)
    chat_url = page.url

    _set_option(page, lambda: page.select_option("#id_date", "after"))
    # The panel says what is missing; the rest of the page stays as it was.
    alert = page.locator("#options [role=alert]")
    assert alert.inner_text() == "Pick the date to search after."
    assert page.url == chat_url and page.locator("form.ask").is_visible()
    assert page.locator(".chat-side").is_visible() and page.locator("#id_date").input_value() == "after"
    page.screenshot(path=str(ARTIFACTS / "chat-after-date-missing.png"), full_page=True)
    assert Conversation.objects.get(pk=conversation).search_options["date"] == "any"  # nothing stored yet

    _set_option(page, lambda: page.fill("#id_after", "2025-01-01"))
    assert page.locator("#options [role=alert]").count() == 0
    assert page.locator("#id_date").input_value() == "after" and page.locator("#id_after").input_value() == "2025-01-01"
    titles = _cited_titles(_ask(page, "How many gateway replicas per requests per minute?"))
    assert titles and "Lumen Capacity Planning" not in titles  # dated 2023: before the chosen date
    page.screenshot(path=str(ARTIFACTS / "chat-after-date-applied.png"), full_page=True)
