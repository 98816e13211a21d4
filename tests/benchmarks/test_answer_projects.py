"""The question generator of benchmarks/answer_projects.py on a small reference snippet."""

from __future__ import annotations

import random
import sys
from pathlib import Path

# benchmarks/ is no package (and site-packages holds an unrelated "benchmarks"): found by path.
BENCHMARKS = Path(__file__).resolve().parent.parent.parent / "benchmarks"
if str(BENCHMARKS) not in sys.path:
    sys.path.append(str(BENCHMARKS))

from answer_projects import holds, question, source_facts  # noqa: E402

SNIPPET = """\
Settings
========

.. setting:: ALLOWED_HOSTS

``ALLOWED_HOSTS``
-----------------

Default: ``[]`` (Empty list)

A list of strings representing the host/domain names.

.. versionchanged:: 4.1

    Subdomain wildcards are matched case-insensitively.

.. setting:: CACHE_TIMEOUT

``CACHE_TIMEOUT``
-----------------

Default: see below

How long a cached page lives.

.. function:: create_engine(url, *, echo=False, **kwargs)

   Make an engine. The ``pool_size`` defaults to ``5``.

   .. versionadded:: 1.4

Connection pools
----------------

New in version 2.0: pools are recycled after a fork.
"""


def test_each_structural_fact_becomes_a_question_with_its_value_and_source():
    facts = {(fact.kind, fact.subject): fact for fact in source_facts(SNIPPET, "docs/ref/settings.txt")}

    assert facts[("default", "ALLOWED_HOSTS")].values == ("[]",)
    assert facts[("changed", "ALLOWED_HOSTS")].values == ("4.1",)
    assert facts[("parameters", "create_engine")].values == ("url", "echo")
    assert facts[("default", "create_engine")].values == ("5",)  # "defaults to ``5``" inside the entry
    assert facts[("added", "create_engine")].values == ("1.4",)
    assert facts[("added", "Connection pools")].values == ("2.0",)  # outside an entry: the section's title
    assert ("default", "CACHE_TIMEOUT") not in facts  # "see below" is no value
    assert {fact.path for fact in facts.values()} == {"docs/ref/settings.txt"}

    asked = question(facts[("default", "ALLOWED_HOSTS")], pick=random.Random(1))
    assert "ALLOWED_HOSTS" in asked["question"] and "[]" not in asked["question"]
    assert asked["patterns"] == ["[]", "allowed_hosts"]  # a bare value needs its subject beside it
    older = question(facts[("added", "create_engine")], pick=random.Random(1), project="sqlalchemy", release="1.4.54")
    assert older["question"].startswith("In SQLAlchemy 1.4, ") and older["patterns"] == ["1.4"]


def test_a_fact_is_held_only_when_every_value_is_stated():
    assert holds("The ALLOWED_HOSTS setting defaults to [] (an empty list).", ["[]", "allowed_hosts"])
    assert not holds("A list of strings representing the host names: [].", ["[]", "allowed_hosts"])
