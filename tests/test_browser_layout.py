"""Where things sit on the page (static/css/docent.css), at a phone's, a laptop's and a wide screen's width.

The other browser tests find controls by selector, so a box squeezed into a corner passes them; these
measure boxes. Headless Chromium via Playwright; screenshots land in test-artifacts/ for a person to look at.
"""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Permission

from chat.models import Conversation
from tests.browser_support import log_in
from tests.chat.test_browser import ARTIFACTS, browser_page  # noqa: F401 (a fixture)
from tests.chat.test_browser import pytestmark as BROWSER_MARKS
from tests.factories import UserFactory, WorkspaceFactory

pytestmark = BROWSER_MARKS

WIDTHS = (390, 1366, 1920)


@pytest.fixture
def staff_workspace(transactional_db, django_db_serialized_rollback):
    staff = UserFactory(username="staff", is_staff=True)
    staff.user_permissions.add(Permission.objects.get(codename="add_source"))  # the Sources page's add form
    workspace = WorkspaceFactory(slug="handbook", name="Handbook", members=[staff])
    return Conversation.objects.create(user=staff, workspace=workspace, title="Badges")


def _box(page, selector: str) -> dict:
    box = page.locator(selector).first.bounding_box()
    assert box, f"{selector} is not shown"
    return box


def _no_sideways_scroll(page) -> None:
    assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth + 1"), "the page scrolls sideways"


def _under_or_beside(button: dict, field: dict) -> bool:
    under = button["y"] >= field["y"] + field["height"] - 1
    beside = button["x"] >= field["x"] + field["width"] - 1 and button["y"] < field["y"] + field["height"]
    return under or beside


def _fields_span_their_form(page, form: str, *, share: float) -> None:
    """Each text box of `form` is at least `share` of the form's width, and inside the window."""
    form_box = _box(page, form)
    for control in page.locator(f"{form} textarea:visible, {form} input[type=text]:visible, "
                                f"{form} input[type=url]:visible, {form} input[type=file]:visible").all():
        box = control.bounding_box()
        name = control.get_attribute("name")
        assert box["width"] >= share * form_box["width"] - 1, (name, box, form_box)
        assert box["x"] >= 0 and box["x"] + box["width"] <= page.viewport_size["width"] + 1, (name, box)


@pytest.mark.parametrize("width", WIDTHS)
def test_the_question_box_spans_the_chat_column_and_the_button_sits_under_or_beside_it(
        browser_page, live_server, staff_workspace, width):
    page = browser_page
    page.set_viewport_size({"width": width, "height": 900})
    log_in(page, live_server.url, "staff", start=f"/chat/{staff_workspace.pk}/")
    page.screenshot(path=str(ARTIFACTS / f"layout-chat-{width}.png"))
    column, question, ask = _box(page, "section.chat-main"), _box(page, "#id_question"), _box(page, "form.ask button")
    assert question["width"] >= 0.75 * column["width"], (question, column)
    assert question["x"] <= column["x"] + 1
    assert _under_or_beside(ask, question), (ask, question)
    _no_sideways_scroll(page)


@pytest.mark.parametrize("width", WIDTHS)
def test_documents_upload_and_sources_pages_keep_their_fields_wide_and_buttons_in_reach(
        browser_page, live_server, staff_workspace, width):
    page = browser_page
    page.set_viewport_size({"width": width, "height": 900})
    log_in(page, live_server.url, "staff", start="/documents/")
    for name, path, form, button in (
        ("documents", "/documents/", "form.filters", "form.filters button[type=submit]"),
        ("upload", "/documents/upload/", "form[data-file-info]", "form[data-file-info] button[type=submit]"),
        ("sources", "/documents/sources/", "form.stacked", "form.stacked button.primary"),
    ):
        page.goto(f"{live_server.url}{path}")
        page.screenshot(path=str(ARTIFACTS / f"layout-{name}-{width}.png"), full_page=True)
        _no_sideways_scroll(page)
        if name != "documents":
            _fields_span_their_form(page, form, share=0.5 if width < 600 else 0.3)
        fields = page.locator(f"{form} input:visible, {form} select:visible, {form} textarea:visible").all()
        last = max((field.bounding_box() for field in fields), key=lambda box: box["y"] + box["height"])
        assert _under_or_beside(_box(page, button), last), (name, last)
        if name == "sources":
            minutes = _box(page, "#id_every_minutes")
            assert minutes["height"] >= 30, "the minutes field is styled like the others"


def test_a_failed_documents_page_leads_with_the_failure_and_what_to_do(browser_page, live_server, staff_workspace,
                                                                        tmp_path):
    from rag.jobs.run import job_item_run
    from rag.models import Document
    from rag.uploads import indexing_job_create

    (tmp_path / "handbook.docx").write_bytes(b"this is not a zip, whatever its name says")
    job = indexing_job_create(workspace=staff_workspace.workspace, paths=[tmp_path], enqueue=False)
    for item_id in job.items.values_list("pk", flat=True):
        job_item_run(item_id=item_id)
    document = Document.objects.get(workspace=staff_workspace.workspace)
    page = browser_page
    page.set_viewport_size({"width": 1366, "height": 900})
    log_in(page, live_server.url, "staff", start=f"/documents/{document.pk}/")
    page.screenshot(path=str(ARTIFACTS / "failed-document.png"))
    failed = page.locator("#document-failed")
    assert failed.is_visible() and failed.bounding_box()["y"] < _box(page, "dl.meta")["y"]  # above the details
    assert "This file could not be indexed" in failed.inner_text() and "What to do:" in failed.inner_text()
    shown = page.locator("main").inner_text()
    assert "(from —)" not in shown and "no version label found" not in shown


PHONE = 390  # an iPhone 12-15's width in CSS pixels


@pytest.fixture
def phone_demo(transactional_db, django_db_serialized_rollback, tmp_path):
    """The demo workspace on its trial, with long titles and paths and a source deep in the server's folders."""
    from licensing.services import trial_start
    from rag.models import Source
    from tests.rag.factories import DocumentFactory

    staff = UserFactory(username="staff", is_staff=True, is_superuser=True)
    workspace = WorkspaceFactory(slug="demo", name="Demo", members=[staff], builtin_demo=True)
    assert trial_start(workspace_id=workspace.pk)
    for release in ("2.0", "2.1", "3.0"):
        DocumentFactory(workspace=workspace, title=f"Lumen Gateway {release} Administration and Operations Guide",
                        path=f"/srv/docs/lumen-gateway/releases/{release}/operations/administration-guide-{release}.md")
    share = tmp_path / "shared-documentation" / "lumen-gateway" / "operations-and-administration"
    share.mkdir(parents=True)
    Source.objects.create(workspace=workspace, name="operations-share", kind=Source.Kind.FOLDER, location=str(share),
                          every_minutes=0)
    Conversation.objects.create(user=staff, workspace=workspace, title="An older conversation")
    return Conversation.objects.create(user=staff, workspace=workspace, title="Rate limits per API key")


def _one_line_badge(page) -> None:
    badge = page.locator(".tier-badge")
    lines = page.evaluate("(() => { const b = document.querySelector('.tier-badge'); "
                          "return b.getBoundingClientRect().height / parseFloat(getComputedStyle(b).lineHeight); })()")
    assert badge.is_visible() and lines < 1.6, f"the badge takes {lines:.1f} lines"


def test_on_a_phone_no_page_scrolls_sideways_the_conversation_leads_and_the_badge_is_one_line(
        browser_page, live_server, phone_demo):
    page = browser_page
    page.set_viewport_size({"width": PHONE, "height": 844})
    log_in(page, live_server.url, "staff", start=f"/chat/{phone_demo.pk}/")
    page.wait_for_url(f"**/chat/{phone_demo.pk}/")
    for name, path in (("chat", f"/chat/{phone_demo.pk}/"), ("documents", "/documents/"),
                       ("sources", "/documents/sources/"), ("licenses", "/admin/licensing/license/")):
        page.goto(f"{live_server.url}{path}")
        page.screenshot(path=str(ARTIFACTS / f"phone-{name}.png"), full_page=True)
        width = page.evaluate("document.documentElement.scrollWidth")
        assert width <= PHONE, f"{name}: the page is {width} px wide"
        if name != "licenses":
            _one_line_badge(page)
        if name == "chat":
            # The conversation first; the list below it, one link away.
            assert _box(page, "section.chat-main")["y"] < _box(page, "#conversation-list")["y"]
            assert _box(page, "#id_question")["y"] < _box(page, "#conversation-list")["y"]
            page.click("a.to-conversations")
            assert page.locator("#conversation-list").is_visible()
            assert _box(page, "#conversation-list")["y"] < 844
        if name in ("documents", "sources"):
            # The table scrolls inside its own box; a path breaks at its separators, not a letter a line.
            table = page.locator(".table-scroll").first
            assert table.evaluate("box => box.scrollWidth >= box.clientWidth") and _box(page, ".table-scroll")[
                "width"] <= PHONE
            path = page.locator("table .path").first.bounding_box()
            assert path["width"] >= 100, path


def test_on_a_laptop_the_chat_keeps_its_three_columns(browser_page, live_server, phone_demo):
    page = browser_page
    page.set_viewport_size({"width": 1366, "height": 900})
    log_in(page, live_server.url, "staff", start=f"/chat/{phone_demo.pk}/")
    page.wait_for_url(f"**/chat/{phone_demo.pk}/")
    side, main = _box(page, ".chat-side"), _box(page, "section.chat-main")
    assert side["x"] + side["width"] <= main["x"] and abs(side["y"] - main["y"]) < 40
    assert not page.locator("a.to-conversations").is_visible()
    _one_line_badge(page)
    assert page.locator(".tier-badge").inner_text().startswith("Writer Pro trial · until")
