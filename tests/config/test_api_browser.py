"""The API's docs page in a browser against a running server: Swagger UI from our static files draws every
route, and the Content-Security-Policy blocks nothing (browser_page fails the test on any violation)."""

from __future__ import annotations

import pytest

from rag.tokens import api_token_create
from tests.chat.test_browser import ARTIFACTS, browser_page  # noqa: F401 (a fixture)
from tests.chat.test_browser import pytestmark as BROWSER_MARKS
from tests.factories import UserFactory, WorkspaceFactory
from tests.rag.retrieval_helpers import add_document

pytestmark = BROWSER_MARKS


@pytest.fixture
def token(transactional_db, django_db_serialized_rollback) -> str:
    user = UserFactory(username="integrator")
    workspace = WorkspaceFactory(slug="docs", members=[user])
    add_document(workspace, "/w/tls.md", ["The gateway terminates TLS on port 8443."])
    return api_token_create(user=user, name="bot")[1]


def test_the_docs_page_renders_every_route(browser_page, live_server, token):
    page = browser_page
    page.goto(f"{live_server.url}/api/v1/docs")
    page.wait_for_selector(".opblock-summary-path[data-path='/api/v1/answers']")
    for path in ("/api/v1/search", "/api/v1/conversations/{conversation_id}/messages"):
        assert page.locator(f".opblock-summary-path[data-path='{path}']").count() >= 1
    page.screenshot(path=str(ARTIFACTS / "api-docs.png"), full_page=True)
