"""Every gate key used in code is declared, and every declared key exists in the database."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from licensing import features
from licensing.models import Feature, LicenseTier

ROOT = Path(__file__).resolve().parents[2]
SCANNED = ["config", "rag", "chat", "licensing"]
GATE_FUNCTIONS = {"has_feature", "tier_for_feature"}
KEY_POSITION = {"has_feature": 1, "tier_for_feature": 0}


def _gate_keys_in(source: str, filename: str) -> list[tuple[str, int, str]]:
    """(key or a problem, line, filename) for every gate call whose key can be read statically."""
    tree = ast.parse(source, filename)
    # `from licensing.features import RETRIEVAL_INTEGRATION [as X]`: local name -> constant name.
    imported = {
        alias.asname or alias.name: alias.name
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and node.module == "licensing.features"
        for alias in node.names
    }
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        name = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else None
        if name not in GATE_FUNCTIONS:
            continue
        position = KEY_POSITION[name]
        arg = next((kw.value for kw in node.keywords if kw.arg == "key"), None)
        if arg is None and len(node.args) > position:
            arg = node.args[position]
        if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
            found.append((arg.value, node.lineno, filename))
        elif isinstance(arg, ast.Attribute) and isinstance(arg.value, ast.Name) and arg.value.id == "features":
            # features.SOME_KEY: the constant must exist and be registered.
            found.append((getattr(features, arg.attr, f"<no constant features.{arg.attr}>"), node.lineno, filename))
        elif isinstance(arg, ast.Name) and arg.id in imported:
            constant = imported[arg.id]
            found.append((getattr(features, constant, f"<no constant features.{constant}>"), node.lineno, filename))
    return found


def _undeclared(paths: list[Path], root: Path = ROOT) -> list[str]:
    return [
        f"{filename}:{line}: {key}"
        for path in paths
        for key, line, filename in _gate_keys_in(path.read_text(), str(path.relative_to(root)))
        if key not in features.REGISTRY
    ]


def test_code_uses_only_declared_gate_keys():
    paths = [path for folder in SCANNED for path in (ROOT / folder).rglob("*.py") if "migrations" not in path.parts]
    assert paths
    assert _undeclared(paths) == []


def test_the_scan_catches_an_undeclared_key(tmp_path: Path):
    sample = tmp_path / "sample.py"
    sample.write_text(
        "from licensing import features\n"
        "from licensing.services import has_feature, tier_for_feature\n"
        "has_feature(1, 'rag.dedup.retrieval_integraton')\n"
        "has_feature(workspace_id=1, key='rag.made_up')\n"
        "tier_for_feature(features.NOT_A_CONSTANT)\n"
        "has_feature(1, features.PROVENANCE)\n"
        "from licensing.features import MISSPELT as GATE, VARIANT_METADATA\n"
        "has_feature(1, GATE)\n"
        "has_feature(1, VARIANT_METADATA)\n"
    )
    problems = _undeclared([sample], root=tmp_path)
    assert [problem.split(": ", 1)[1] for problem in problems] == [
        "rag.dedup.retrieval_integraton", "rag.made_up", "<no constant features.NOT_A_CONSTANT>",
        "<no constant features.MISSPELT>",
    ]


def test_every_module_constant_is_registered():
    constants = {value for name, value in vars(features).items() if name.isupper() and isinstance(value, str)}
    assert constants == set(features.REGISTRY)


@pytest.mark.django_db
def test_every_registered_key_is_a_feature_after_migrations():
    assert set(features.REGISTRY) <= set(Feature.objects.values_list("key", flat=True))


@pytest.mark.django_db
def test_seeded_tiers_and_what_code_fixes_they_grant():
    tiers = {tier.slug: (tier.name, features.license_features(tier.slug)) for tier in LicenseTier.objects.all()}
    assert tiers == {
        "free": ("Free", set()),
        "writer-pro": ("Writer Pro", set(features.REGISTRY)),
        "enterprise": ("Enterprise", set(features.REGISTRY)),
    }
    assert set(features.TIER_FEATURES) == set(tiers)
    assert [tier.slug for tier in LicenseTier.objects.order_by("rank")] == ["free", "writer-pro", "enterprise"]
