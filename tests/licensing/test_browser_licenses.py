"""Admin → Licenses as staff see it on a fresh install: the installation ID readable, the running trial named."""

from __future__ import annotations


from licensing.services import installation_id, trial_start
from tests.browser_support import log_in
from tests.chat.test_browser import ARTIFACTS, browser_page  # noqa: F401 (a fixture)
from tests.chat.test_browser import pytestmark as BROWSER_MARKS
from tests.factories import UserFactory, WorkspaceFactory

pytestmark = BROWSER_MARKS


def _overlap(a: dict, b: dict) -> bool:
    return a["x"] < b["x"] + b["width"] and b["x"] < a["x"] + a["width"] and \
        a["y"] < b["y"] + b["height"] and b["y"] < a["y"] + a["height"]


def test_the_licenses_page_shows_the_installation_id_uncovered_and_the_running_trial(
        browser_page, live_server, transactional_db, django_db_serialized_rollback):
    admin = UserFactory(username="admin", is_staff=True, is_superuser=True)
    demo = WorkspaceFactory(slug="demo", name="Demo", members=[admin], builtin_demo=True)
    assert trial_start(workspace_id=demo.pk)
    page = browser_page
    log_in(page, live_server.url, "admin", start="/admin/licensing/license/")
    page.wait_for_url("**/admin/licensing/license/")
    page.screenshot(path=str(ARTIFACTS / "admin-licenses.png"))

    button = page.get_by_role("link", name="Install a license key").bounding_box()
    sentence = page.locator(".license-installation").bounding_box()
    assert not _overlap(button, sentence)
    assert installation_id() in page.locator(".license-installation").inner_text()
    assert "Demo runs the built-in Writer Pro trial until" in page.locator(".license-trial").inner_text()
    listing = page.locator("#changelist").inner_text()
    assert "0 licenses" not in listing and "No license keys installed: Demo is on the Writer Pro trial" in listing
