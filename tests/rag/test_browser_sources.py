"""The Sources page follows a sync as it runs (issue 54): headless Chromium, a real Celery worker, no reload.

A source is read when it is added, whatever its schedule; "Sync now" and the first sync show in the row while a
worker runs them, the table asking again until the job is done (as a job's page does).
"""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from rag.models import Source
from tests.browser_support import log_in
from tests.chat.test_browser import ARTIFACTS, browser_page  # noqa: F401 (a fixture)
from tests.chat.test_browser import pytestmark as BROWSER_MARKS
from tests.factories import UserFactory, WorkspaceFactory

pytestmark = BROWSER_MARKS


@pytest.fixture
def handbook(transactional_db, django_db_serialized_rollback, tmp_path):
    staff = UserFactory(username="staff", is_staff=True, is_superuser=True)  # superuser: the add form's permission
    workspace = WorkspaceFactory(slug="handbook", name="Handbook", members=[staff])
    folder = tmp_path / "handbook"
    folder.mkdir()
    (folder / "leave.md").write_text("# Leave\n\nEvery employee has 28 days of paid leave a year.\n")
    (folder / "travel.md").write_text("# Travel\n\nBook trains for journeys under four hours.\n")
    return workspace, folder


def _worker(start_worker, settings) -> None:
    """A real worker that may read the test's folders (the suite's roots, tests/conftest.py's `source_roots`)."""
    start_worker(extra_env={"SOURCE_FOLDER_ROOTS": ",".join(settings.SOURCE_FOLDER_ROOTS)})


def _no_reload(page) -> None:
    """A mark a reload would wipe out: the row must change under it."""
    page.evaluate("window.stillThisPage = true")


def _same_page(page) -> bool:
    return page.evaluate("window.stillThisPage === true")


def test_sync_now_changes_the_row_from_never_synced_without_a_reload(browser_page, live_server, handbook, start_worker,
                                                                    settings):
    workspace, folder = handbook
    source = Source.objects.create(workspace=workspace, name="handbook", kind=Source.Kind.FOLDER,
                                   location=str(folder), every_minutes=0)  # never synced, as before issue 54
    _worker(start_worker, settings)
    page = browser_page
    log_in(page, live_server.url, "staff", start="/documents/sources/")
    page.wait_for_url("**/documents/sources/")
    row = page.locator(f"#source-{source.pk}")
    expect(row.locator(".last-sync")).to_contain_text("never synced")
    _no_reload(page)
    row.get_by_role("button", name="Sync now").click()
    expect(page.locator(f"#source-{source.pk} .last-sync")).to_contain_text("2 indexed", timeout=90_000)
    assert _same_page(page)
    assert "never synced" not in page.locator(f"#source-{source.pk}").inner_text()
    page.screenshot(path=str(ARTIFACTS / "sources-synced-live.png"), full_page=True)


def test_a_source_added_on_demand_is_read_at_once_by_a_worker(browser_page, live_server, handbook, start_worker,
                                                             settings):
    workspace, folder = handbook
    _worker(start_worker, settings)
    page = browser_page
    log_in(page, live_server.url, "staff", start="/documents/sources/")
    page.wait_for_url("**/documents/sources/")
    page.fill("#id_name", "handbook")
    page.select_option("#id_kind", "folder")
    page.fill("#id_location", str(folder))
    page.fill("#id_every_minutes", "0")  # on demand: before issue 54 it sat "never synced" until pressed
    page.click("form.stacked button.primary")
    page.wait_for_url("**/documents/sources/")
    assert "its first sync is queued" in page.locator(".messages").inner_text()
    source = Source.objects.get(workspace=workspace, name="handbook")
    _no_reload(page)
    expect(page.locator(f"#source-{source.pk} .last-sync")).to_contain_text("2 indexed", timeout=90_000)
    assert _same_page(page)
    source.refresh_from_db()
    assert source.last_job is not None and source.last_job.finished_at is not None
    assert workspace.documents.filter(status="indexed").count() == 2
    page.screenshot(path=str(ARTIFACTS / "sources-added-synced.png"), full_page=True)
