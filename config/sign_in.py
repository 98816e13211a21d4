"""Sign-in throttling: django-axes counts failed sign-ins in the shared cache (settings.CACHES, Redis), so that
a guesser is slowed down whichever web process or machine answers.

After LOGIN_FAILURE_LIMIT failures for one user name from one address, both are refused for
LOGIN_LOCKOUT_MINUTES with a 429 and `Retry-After`, on the login page and the admin's alike.
The pair, not the name alone, is locked: a guesser cannot lock the account's owner out. Behind a reverse proxy
every request comes from the proxy's address, so the address counted is the one the proxy names in
TRUSTED_PROXY_HEADER, believed only from TRUSTED_PROXIES (AXES_CLIENT_IP_CALLABLE = `client_address`).
"""

from __future__ import annotations

import ipaddress
from typing import Any

from axes.backends import AxesStandaloneBackend
from axes.helpers import get_cool_off
from django.conf import settings
from django.contrib.auth.forms import AuthenticationForm
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render


class SignInThrottle(AxesStandaloneBackend):
    """django-axes's refusal of a locked-out sign-in, first of AUTHENTICATION_BACKENDS.

    A password checked without a request (a command, `manage.py shell`) is no attempt from the
    network: it is neither counted nor refused, where axes itself would raise.
    """

    def authenticate(self, request: HttpRequest | None, username: str | None = None, password: str | None = None,
                     **kwargs: Any) -> None:
        if request is None:
            return None
        return super().authenticate(request, username=username, password=password, **kwargs)


def lockout_response(request: HttpRequest, original_response: HttpResponse | None = None,
                     credentials: dict | None = None) -> HttpResponse:
    """The login page again, saying how long to wait: 429 with `Retry-After` (AXES_LOCKOUT_CALLABLE)."""
    cool_off = get_cool_off(request)
    minutes = max(1, round(cool_off.total_seconds() / 60)) if cool_off else None
    wait = f"try again in {minutes} minute{'s' if minutes != 1 else ''}" if minutes else "ask an administrator"
    response = render(request, "registration/login.html", {
        "form": AuthenticationForm(request), "next": request.POST.get("next", ""),
        "locked_out": f"Too many failed sign-ins for this user from your address: {wait}.",
    }, status=429)
    if cool_off:
        response["Retry-After"] = str(int(cool_off.total_seconds()))
    return response


def _trusted(address: str) -> bool:
    try:
        parsed = ipaddress.ip_address(address)
    except ValueError:
        return False
    return any(parsed in ipaddress.ip_network(proxy, strict=False) for proxy in settings.TRUSTED_PROXIES)


def client_address(request: HttpRequest) -> str:
    """The address a sign-in is counted against: the direct peer, unless a trusted proxy sent the header.

    A proxy appends the address it saw to X-Forwarded-For, and a client may write anything before it, so the
    header is read from the right: the first hop that is not a trusted proxy is the client. A header that does
    not hold an address is ignored (the proxy's address is counted, as without the header).
    """
    direct = request.META.get("REMOTE_ADDR", "")
    header = settings.TRUSTED_PROXY_HEADER
    if not header or not _trusted(direct):
        return direct
    key = header.upper().replace("-", "_")
    hops = [hop.strip() for hop in request.META.get(key if key.startswith("HTTP_") else f"HTTP_{key}", "").split(",")]
    for hop in reversed([hop for hop in hops if hop]):
        try:
            ipaddress.ip_address(hop)
        except ValueError:
            return direct
        if not _trusted(hop):
            return hop
    return hops[0] if hops and hops[0] else direct
