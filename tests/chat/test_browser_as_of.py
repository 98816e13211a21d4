""""Answer as of" as a person uses it (issue 54): it offers release lines, and the answer names the line and the
newest patch of it that answered. Headless Chromium via Playwright on a live server."""

from __future__ import annotations

import pytest

from tests.chat.conftest import V2
from tests.chat.test_browser import ARTIFACTS, _ask, _log_in, _new_conversation, _set_option, lumen_indexed
from tests.chat.test_browser import browser_page  # noqa: F401 (a fixture)
from tests.chat.test_browser import pytestmark as BROWSER_MARKS

pytestmark = BROWSER_MARKS

V21 = V2.replace("2.0", "2.1").replace("2024-05-10", "2025-02-20").replace("600 requests", "1000 requests")
V30 = V2.replace("2.0", "3.0").replace("2024-05-10", "2025-10-02").replace("600 requests", "1200 requests")
PATCH = """---
title: Lumen Gateway 2.1.2 Maintenance Runbook
date: 2025-03-11
doc_type: operations
---
# Lumen Gateway 2.1.2 Maintenance Runbook

## Readiness

After an upgrade to 2.1.2 the readiness endpoint reports ready only after the first configuration load.
"""


@pytest.fixture
def lines(transactional_db, django_db_serialized_rollback, tmp_path):
    return lumen_indexed(tmp_path, {"api-2.0.md": V2, "api-2.1.md": V21, "runbook-2.1.2.md": PATCH, "api-3.0.md": V30})


def test_answer_as_of_offers_lines_and_the_answer_names_the_patch_that_answered(browser_page, live_server, lines,
                                                                                settings):
    settings.ANSWER_RELEVANCE_FLOOR = 0.0  # the tiny test encoder scores passages far below the model
    page = browser_page
    _log_in(page, live_server.url)
    _new_conversation(page)
    offered = page.locator("#id_as_of_version option").all_inner_texts()
    assert offered == ["Latest", "3.0", "2.1", "2.0"]  # 2.1.2 is the 2.1 line's newest patch, not a line of its own

    _set_option(page, lambda: page.select_option("#id_as_of_version", "2.1"))
    answer = _ask(page, "How many requests per minute may an API key send?")
    body = answer.locator(".msg-body").inner_text()
    page.screenshot(path=str(ARTIFACTS / "chat-as-of-line.png"), full_page=True)
    assert body.startswith("In 2.1 (2.1.2):"), body
    assert "1000" in body and "1200" not in body
