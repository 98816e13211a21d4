"""Every model change ships with its migration: a field edited without one (even its help text) would make the
next `makemigrations` on a user's machine write a migration of its own."""

import io

import pytest
from django.core.management import call_command


@pytest.mark.django_db
def test_the_models_match_the_migrations() -> None:
    out = io.StringIO()
    try:
        call_command("makemigrations", check=True, dry_run=True, stdout=out, stderr=out)
    except SystemExit as exit:  # --check exits non-zero when a migration is missing
        pytest.fail(f"models and migrations differ (exit {exit.code}):\n{out.getvalue()}")
