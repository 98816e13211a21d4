"""Personal API tokens as a user handles them: made on the tokens page, used by a script, revoked there."""

from __future__ import annotations

import json
import urllib.error
import urllib.request

import pytest

from tests.browser_support import log_in
from tests.chat.test_browser import ARTIFACTS, browser_page  # noqa: F401 (a fixture)
from tests.chat.test_browser import pytestmark as BROWSER_MARKS
from tests.factories import UserFactory, WorkspaceFactory
from tests.rag.retrieval_helpers import add_document

pytestmark = BROWSER_MARKS


@pytest.fixture
def reader(transactional_db, django_db_serialized_rollback):
    user = UserFactory(username="scripter")
    workspace = WorkspaceFactory(slug="docs", members=[user])
    add_document(workspace, "/w/tls.md", ["The gateway terminates TLS on port 8443."])
    return user


def test_make_use_and_revoke_a_token(browser_page, live_server, reader):
    page = browser_page
    log_in(page, live_server.url, "scripter", start="/accounts/login/")
    page.click("a.user-tokens")  # "API tokens", beside the user name
    page.fill("#token-name", "nightly check")
    page.click("text=Create token")
    token = page.locator("#new-token").inner_text()
    page.screenshot(path=str(ARTIFACTS / "api-tokens.png"), full_page=True)

    url = f"{live_server.url}/api/v1/search?q=which+port+terminates+TLS&workspace=docs"
    status, body = _script_get(url, token)
    assert status == 200 and body["results"][0]["path"] == "tls.md"  # a member reads the shown path, never the server's

    page.reload()
    assert token not in page.content()  # shown once only, and the reload made no second token
    assert page.locator("table.tokens tbody tr").count() == 1
    page.click("button[aria-label='Revoke nightly check']")
    assert "Revoked nightly check" in page.locator("body").inner_text()
    assert _script_get(url, token)[0] == 401


def _script_get(url: str, token: str) -> tuple[int, dict]:
    """A script's request: the token only, no browser session."""
    request = urllib.request.Request(url, headers={"Authorization": f"Bearer {token}"})
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())
