"""Sign-in throttling (config/sign_in.py, django-axes on the shared Redis cache): a guesser is refused with a 429,
on the login page and the admin's, whichever process answers; the account's owner elsewhere is not."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from datetime import timedelta
from pathlib import Path

import pytest
from django.contrib.auth import authenticate
from django.test import Client, RequestFactory

from config.sign_in import client_address

from tests.factories import UserFactory

pytestmark = pytest.mark.django_db

ROOT = Path(__file__).resolve().parents[2]
PASSWORD = "correct horse battery"
GUESSER, OWNER = "198.51.100.7", "203.0.113.9"  # documentation addresses, as REMOTE_ADDR only

# Run in another process: whether that process's Django would let the guesser try again.
OTHER_PROCESS = """
from axes.handlers.proxy import AxesProxyHandler
from django.test import RequestFactory
request = RequestFactory().post("/accounts/login/", REMOTE_ADDR="{address}")
print(AxesProxyHandler.is_allowed(request, {{"username": "{username}"}}))
"""


def _sign_in(client: Client, username: str, password: str, address: str, url: str = "/accounts/login/"):
    return client.post(url, {"username": username, "password": password}, REMOTE_ADDR=address)


def _allowed_in_another_process(username: str, address: str) -> bool:
    result = subprocess.run(
        [sys.executable, "manage.py", "shell", "-v", "0", "-c", OTHER_PROCESS.format(username=username,
                                                                                    address=address)],
        cwd=ROOT, capture_output=True, text=True, timeout=120, env={**os.environ, "DOCENT_EMBEDDED_START": "false"})
    assert result.returncode == 0, result.stderr
    return {"True": True, "False": False}[result.stdout.strip().splitlines()[-1]]


def test_after_five_failures_the_guesser_is_refused_even_the_right_password_and_every_process_knows(settings):
    """Issue 37: nothing limited sign-in attempts."""
    user = UserFactory(username="alice")
    client = Client()
    for _ in range(settings.AXES_FAILURE_LIMIT - 1):
        assert _sign_in(client, "alice", "wrong", GUESSER).status_code == 200
    locked = _sign_in(client, "alice", "wrong", GUESSER)
    assert locked.status_code == 429
    assert int(locked["Retry-After"]) == 15 * 60
    assert ("Too many failed sign-ins for this user from your address: try again in 15 minutes."
            in locked.content.decode())
    right = _sign_in(client, "alice", PASSWORD, GUESSER)
    assert right.status_code == 429 and "_auth_user_id" not in client.session
    assert _sign_in(Client(), "alice", PASSWORD, GUESSER, url="/admin/login/").status_code == 429
    assert not _allowed_in_another_process("alice", GUESSER)  # counted in Redis, not in this process

    owner = Client()
    assert _sign_in(owner, "alice", PASSWORD, OWNER).status_code == 302  # the owner, elsewhere, is not locked out
    assert owner.session["_auth_user_id"] == str(user.pk)


def test_the_lockout_ends_after_its_cool_off(settings):
    settings.AXES_COOLOFF_TIME = timedelta(seconds=2)
    UserFactory(username="bob")
    client = Client()
    for _ in range(settings.AXES_FAILURE_LIMIT):
        _sign_in(client, "bob", "wrong", GUESSER)
    assert _sign_in(client, "bob", PASSWORD, GUESSER).status_code == 429
    time.sleep(2.5)
    assert _sign_in(client, "bob", PASSWORD, GUESSER).status_code == 302


def test_a_password_checked_without_a_request_is_no_attempt_from_the_network():
    UserFactory(username="carol")
    assert authenticate(username="carol", password=PASSWORD) is not None
    assert authenticate(username="carol", password="wrong") is None


PROXY = "10.0.0.2"  # a reverse proxy on the private network: every request reaches the server from it


def _via_proxy(client: Client, username: str, password: str, client_address: str):
    return client.post("/accounts/login/", {"username": username, "password": password}, REMOTE_ADDR=PROXY,
                       HTTP_X_FORWARDED_FOR=client_address)


def test_behind_a_proxy_a_stranger_never_locks_the_owner_out(settings):
    """Issue 49: behind a reverse proxy every client had the proxy's address, so five bad passwords from anyone
    locked the owner out; the proxy's header, when configured and sent by a trusted proxy, names the client."""
    settings.TRUSTED_PROXY_HEADER, settings.TRUSTED_PROXIES = "X-Forwarded-For", [PROXY]
    user = UserFactory(username="dora")
    stranger = Client()
    for _ in range(settings.AXES_FAILURE_LIMIT):
        _via_proxy(stranger, "dora", "wrong", GUESSER)
    assert _via_proxy(stranger, "dora", PASSWORD, GUESSER).status_code == 429
    owner = Client()
    assert _via_proxy(owner, "dora", PASSWORD, OWNER).status_code == 302
    assert owner.session["_auth_user_id"] == str(user.pk)


def test_the_header_is_believed_only_from_a_trusted_proxy_and_only_its_last_hop(settings):
    settings.TRUSTED_PROXY_HEADER, settings.TRUSTED_PROXIES = "X-Forwarded-For", ["10.0.0.0/24"]
    factory = RequestFactory()
    assert client_address(factory.get("/", REMOTE_ADDR=PROXY, HTTP_X_FORWARDED_FOR=OWNER)) == OWNER
    # A client writes what it likes on the left; the proxy appends the address it saw.
    forged = factory.get("/", REMOTE_ADDR=PROXY, HTTP_X_FORWARDED_FOR=f"{OWNER}, {GUESSER}")
    assert client_address(forged) == GUESSER
    assert client_address(factory.get("/", REMOTE_ADDR=GUESSER, HTTP_X_FORWARDED_FOR=OWNER)) == GUESSER  # not a proxy
    assert client_address(factory.get("/", REMOTE_ADDR=PROXY, HTTP_X_FORWARDED_FOR="not an address")) == PROXY
    settings.TRUSTED_PROXY_HEADER = ""  # the default: the direct address, whatever is sent
    assert client_address(factory.get("/", REMOTE_ADDR=PROXY, HTTP_X_FORWARDED_FOR=OWNER)) == PROXY
