"""Wire licensing's middleware and context processor into the request stack, as settings will."""

from __future__ import annotations

import copy

import pytest

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
