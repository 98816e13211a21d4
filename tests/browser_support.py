"""Steps every browser test takes (used with the `browser_page` fixture of tests/chat/test_browser.py)."""

from __future__ import annotations

from typing import Any

PASSWORD = "correct horse battery"  # tests.factories.UserFactory's


def log_in(page: Any, base_url: str, username: str, *, start: str = "/chat/") -> None:
    """Open `start`, get sent to the login form, and log in as `username`; returns once the page signed in to has
    loaded (a screenshot or a measure taken while the redirect is in flight fails or reads the login form)."""
    page.goto(f"{base_url}{start}")
    page.fill("#id_username", username)
    page.fill("#id_password", PASSWORD)
    page.click("button[type=submit]")
    page.wait_for_url(lambda url: "/accounts/login/" not in url)
    page.wait_for_load_state()
