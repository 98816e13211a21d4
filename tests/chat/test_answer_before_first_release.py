"""An answer as of a date before the workspace's first release says why it found nothing (issue 54)."""

from __future__ import annotations

import datetime as dt

import pytest

from chat.answering import answer
from rag.models import Release
from rag.releases import version_key

pytestmark = pytest.mark.django_db
QUESTION = "How many requests per minute may an API key send?"


@pytest.fixture
def calendar(workspace, api_versions):
    for version, day in [("2.0", dt.date(2024, 4, 10)), ("3.0", dt.date(2025, 10, 2))]:
        Release.objects.create(workspace=workspace, version=version, version_key=version_key(version), date=day,
                               source=Release.Source.STAFF)


def test_as_of_a_date_before_the_first_release_names_the_earliest_release(workspace, calendar):
    result = answer(QUESTION, workspace=workspace, options={"as_of_date": "2024-03-15"})
    assert result.abstained
    assert result.text.endswith("The earliest release in this workspace is 2.0, of April 2024.")


def test_as_of_a_date_after_the_first_release_does_not_name_it(workspace, calendar):
    result = answer(QUESTION, workspace=workspace, options={"as_of_date": "2024-06-01"})
    assert "earliest release" not in result.text
