"""Sign-in throttling: django-axes counts failed sign-ins in the shared cache (settings.CACHES, Redis), so that
a guesser is slowed down whichever web process or machine answers.

After LOGIN_FAILURE_LIMIT failures for one user name from one address, both are refused for
LOGIN_LOCKOUT_MINUTES with a 429 and `Retry-After`, on the login page and the admin's alike.
The pair, not the name alone, is locked: a guesser cannot lock the account's owner out.
"""

from __future__ import annotations

from typing import Any

from axes.backends import AxesStandaloneBackend
from axes.helpers import get_cool_off
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
