"""Which keys a license may be signed by, and what a license each of them verifies is worth.

Genuine licenses verify against the vendor's public keys, built in here so that no
setting or `.env` can make an installation trust a key of its own. The one
exception is `LICENSE_DEVELOPMENT_KEY`, for developers and the test suite: it is
honoured only while the instance serves this machine alone (`SERVES_NETWORK`
false), and whatever it verifies is labelled `DEVELOPMENT_NOTICE` wherever the
license is shown.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from django.conf import settings

from licensing.keys import LicenseKeyError, LicensePayload, load_public_key, verify_license_key

# The vendor's Ed25519 public keys (base64 of the 32 raw bytes), newest first. To rotate, add the new
# key in front and keep the old one until no license it signed is still in force.
VENDOR_PUBLIC_KEYS: tuple[str, ...] = (
    "78a03kcsxSF3wok8LXRNhvWQJj7zkP78QbiWJ64aido=",
)

DEVELOPMENT_NOTICE = "development key: not a genuine license"
DEVELOPMENT_REFUSED = (
    f"{DEVELOPMENT_NOTICE}; it grants nothing on an instance that serves the network "
    "(ALLOWED_HOSTS, DOCENT_HOST or DOCENT_SERVES_NETWORK)"
)


@dataclass(frozen=True)
class VerifiedKey:
    """A key whose signature holds, and whether the development key (not a vendor key) made it hold."""

    payload: LicensePayload
    development: bool


def development_key() -> str:
    return (getattr(settings, "LICENSE_DEVELOPMENT_KEY", "") or "").strip()


def development_key_honoured() -> bool:
    """A development license grants its tier only on an instance nobody else can reach."""
    return not getattr(settings, "SERVES_NETWORK", True)


@lru_cache(maxsize=1024)
def _verify(key: str, vendor_keys: tuple[str, ...], development_text: str) -> VerifiedKey | str:
    # Keys never change once installed, so a verdict is remembered per process (per key set, so a
    # rotation or a test's own key is never answered from another set's verdict).
    # (The refusal is kept as its message: a cached exception instance would grow a traceback per raise.)
    refusal = "no license key is trusted here"
    for public_text in vendor_keys:
        try:
            return VerifiedKey(verify_license_key(key, load_public_key(public_text)), development=False)
        except LicenseKeyError as exc:
            refusal = str(exc)
    if development_text:
        try:
            public_key = load_public_key(development_text)
        except LicenseKeyError:
            return "LICENSE_DEVELOPMENT_KEY is not a readable Ed25519 public key"
        try:
            return VerifiedKey(verify_license_key(key, public_key), development=True)
        except LicenseKeyError as exc:
            refusal = str(exc)
    return refusal


def license_key_verify(key: str) -> VerifiedKey:
    """The payload of a key signed by a vendor key or the development key; LicenseKeyError otherwise.

    A development key verifies here whether or not it is honoured: callers decide
    what it grants (see `development_key_honoured`), so it can be named, not
    mistaken for a forgery.
    """
    verdict = _verify("".join(key.split()), VENDOR_PUBLIC_KEYS, development_key())
    if isinstance(verdict, str):
        raise LicenseKeyError(verdict)
    return verdict
