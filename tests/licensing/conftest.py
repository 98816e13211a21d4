"""Wire licensing's middleware and context processor into the request stack, as settings will."""

from __future__ import annotations

import copy

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from licensing import trust
from licensing.keys import generate_keypair, load_private_key

MIDDLEWARE = "licensing.middleware.FeatureCacheMiddleware"
CONTEXT_PROCESSOR = "licensing.context_processors.workspace_tier"


@pytest.fixture
def licensing_wired(settings):
    if MIDDLEWARE not in settings.MIDDLEWARE:
        settings.MIDDLEWARE = [*settings.MIDDLEWARE, MIDDLEWARE]
    templates = copy.deepcopy(settings.TEMPLATES)
    processors = templates[0]["OPTIONS"]["context_processors"]
    if CONTEXT_PROCESSOR not in processors:
        processors.append(CONTEXT_PROCESSOR)
        settings.TEMPLATES = templates
    return settings


@pytest.fixture
def vendor_key(monkeypatch) -> Ed25519PrivateKey:
    """A stand-in for the vendor's signing key, trusted as if built in (the real private key exists nowhere
    the suite can reach, so only this fixture can make a genuine license)."""
    private_pem, public_text = generate_keypair()
    monkeypatch.setattr(trust, "VENDOR_PUBLIC_KEYS", (public_text, *trust.VENDOR_PUBLIC_KEYS))
    return load_private_key(private_pem)
