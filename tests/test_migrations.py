"""Every model change ships with its migration: a field edited without one (even its help text) would make the
next `makemigrations` on a user's machine write a migration of its own."""

import io
import re
from pathlib import Path

import pytest
from django.core.management import call_command
from django.db.migrations.loader import MigrationLoader


@pytest.mark.django_db
def test_the_models_match_the_migrations() -> None:
    out = io.StringIO()
    try:
        call_command("makemigrations", check=True, dry_run=True, stdout=out, stderr=out)
    except SystemExit as exit:  # --check exits non-zero when a migration is missing
        pytest.fail(f"models and migrations differ (exit {exit.code}):\n{out.getvalue()}")


def test_the_readme_counts_the_migrations_a_fresh_start_applies() -> None:
    graph = MigrationLoader(None, ignore_no_migrations=True).graph
    plan = {node for leaf in graph.leaf_nodes() for node in graph.forwards_plan(leaf)}
    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text()
    said = re.search(r"database: applying (\d+) migration\(s\)", readme)
    assert said and int(said.group(1)) == len(plan)
