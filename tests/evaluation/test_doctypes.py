"""`make eval`'s document-type section and the keyword refresh for installs on the first defaults."""

from __future__ import annotations

import importlib
import json
from pathlib import Path

import pytest
from django.apps import apps

from evaluation.doctypes import doc_type_accuracy, doc_type_truth, format_doc_type_table
from rag.ingest.doctypes import DEFAULT_RULES
from rag.models import DocType

pytestmark = pytest.mark.django_db
ROOT = Path(__file__).resolve().parents[2]


def test_truth_comes_from_the_manifest_or_from_hand_labels_by_source_path():
    manifest = json.loads((ROOT / "demo" / "manifest.json").read_text())
    truth = doc_type_truth(manifest)
    assert truth["glossary.txt"] == "user" and len(truth) == len(manifest["files"])
    files = {"ab12-faq.rst": {"path": "doc/faq.rst"}, "cd34-other.rst": {"path": "doc/other.rst"}}
    assert doc_type_truth(files, {"doc/faq.rst": "troubleshooting"}) == {"ab12-faq.rst": "troubleshooting"}
    labels = json.loads((ROOT / "demo" / "real" / "doc_types.json").read_text())["labels"]
    assert labels["doc/faq.rst"] == "troubleshooting" and set(labels.values()) <= {rule.slug for rule in DEFAULT_RULES}


def test_accuracy_counts_right_wrong_and_untyped_per_type(tmp_path):
    (tmp_path / "runbook.md").write_text("# Restore\n\nRestore the backup.\n")  # the path says operations
    (tmp_path / "notes.md").write_text("# Notes\n\nNothing much here.\n")  # no evidence: untyped
    (tmp_path / "api").mkdir()
    (tmp_path / "api" / "ops.md").write_text("# Deploying\n\nDeploy it.\n")  # the path says api
    truth = {"runbook.md": "operations", "notes.md": "user", "api/ops.md": "operations"}
    accuracy = doc_type_accuracy(corpus=tmp_path, truth=truth)
    operations, user = accuracy.per_type["operations"], accuracy.per_type["user"]
    assert (operations.labelled, operations.right, operations.wrong, operations.claimed) == (2, 1, 1, 1)
    assert (user.labelled, user.untyped, user.claimed) == (1, 1, 0)
    assert accuracy.per_type["api"].claimed == 1 and accuracy.per_type["api"].precision == 0.0
    assert accuracy.total.right == 1 and accuracy.evidence == {"path": 2}
    table = format_doc_type_table("t", accuracy)
    assert "operations typed api x1" in table and "types given by: path 2" in table


def test_keywords_on_the_first_defaults_are_refreshed_and_edited_ones_kept():
    migration = importlib.import_module("rag.migrations.0009_dayone_doc_type_keywords")
    DocType.objects.filter(slug="user").update(keywords=migration.FIRST_DEFAULTS["user"])
    DocType.objects.filter(slug="api").update(keywords=["my", "own"])
    migration.refresh(apps, None)
    user = next(rule for rule in DEFAULT_RULES if rule.slug == "user")
    assert DocType.objects.get(slug="user").keywords == list(user.keywords)
    assert "guide" not in DocType.objects.get(slug="user").keywords
    assert DocType.objects.get(slug="api").keywords == ["my", "own"]
