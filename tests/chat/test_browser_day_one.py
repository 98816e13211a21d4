"""The chat on a user's first day: nothing typed is lost, a conversation opens where it left off and is named at once.

Headless Chromium via Playwright on a live server; each test asserts what the page shows.
"""

from __future__ import annotations

import re

from chat.models import Conversation, Message
from tests.chat.test_browser import (  # noqa: F401 (fixtures)
    ARTIFACTS,
    _ask,
    browser_page,
    lumen,
    sign_in_and_start_a_conversation,
)
from tests.chat.test_browser import pytestmark as BROWSER_MARKS

pytestmark = BROWSER_MARKS

FIRST = "What is the rate limit per API key?"


def _hold_asks(page) -> list:
    """Hold every question's POST until the test lets it go, as a slow answer would."""
    held: list = []
    page.route(re.compile(r"/chat/\d+/ask/$"), lambda route: held.append(route))
    return held


def _wait_for(page, held: list) -> None:
    for _ in range(200):
        if held:
            return
        page.wait_for_timeout(50)
    raise AssertionError("the question was never sent")


def test_text_typed_while_an_answer_is_pending_stays_in_the_box(browser_page, live_server, lumen):
    page = browser_page
    sign_in_and_start_a_conversation(page, live_server.url)
    held = _hold_asks(page)
    box = page.locator("#id_question")

    # Typed over the question just sent: the new question is left whole.
    box.fill(FIRST)
    page.click("form.ask button[type=submit]")
    _wait_for(page, held)
    box.fill("What port does the admin API listen on?")
    held.pop().continue_()
    page.locator("article.msg-assistant").first.locator(".source-list").wait_for()
    assert box.input_value() == "What port does the admin API listen on?"

    # Typed on after it: only the sent text leaves the box.
    box.fill("Which header says when to retry?")
    page.click("form.ask button[type=submit]")
    _wait_for(page, held)
    box.press("End")
    box.press_sequentially(" And how long is the wait?")
    held.pop().continue_()
    page.locator("article.msg-assistant").nth(1).wait_for()
    assert page.locator("article.msg-assistant").count() == 2
    page.screenshot(path=str(ARTIFACTS / "chat-typed-while-pending.png"))
    assert box.input_value() == "And how long is the wait?"
    asked = list(Message.objects.filter(role="user").values_list("content", flat=True))
    assert asked == [FIRST, "Which header says when to retry?"]


def test_the_first_question_names_the_conversation_at_once(browser_page, live_server, lumen):
    page = browser_page
    pk = sign_in_and_start_a_conversation(page, live_server.url)
    assert page.locator("h1.chat-title").inner_text() == f"Conversation {pk}"
    _ask(page, FIRST)
    assert page.locator("h1.chat-title").inner_text() == FIRST
    assert page.locator(".conversation-list a[aria-current=page]").inner_text() == FIRST
    assert page.title().startswith(FIRST)


def test_a_reopened_conversation_shows_its_latest_answer(browser_page, live_server, lumen):
    conversation = Conversation.objects.create(user=lumen.members.get(), workspace=lumen, title="Rate limits")
    for n in range(1, 13):
        Message.objects.create(conversation=conversation, role="user", content=f"Question {n}?")
        Message.objects.create(conversation=conversation, role="assistant", metadata={"mode": "extractive"},
                               content=f"Answer {n}. " + "A long answer that takes room on the page. " * 12)
    page = browser_page
    sign_in_and_start_a_conversation(page, live_server.url)
    page.goto(f"{live_server.url}/chat/{conversation.pk}/")
    page.wait_for_load_state("load")
    page.screenshot(path=str(ARTIFACTS / "chat-reopened.png"))
    latest = page.locator("article.msg-assistant").last
    assert latest.locator(".msg-body").inner_text().startswith("Answer 12.")
    assert latest.evaluate("e => { const r = e.getBoundingClientRect(); return r.top >= 0 && r.top < innerHeight; }")
    assert not page.locator("article.msg-user").first.evaluate("e => e.getBoundingClientRect().bottom > 0")
