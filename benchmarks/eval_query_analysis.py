"""How often the query analysis reads a question as the evaluation ground truths say it should.

    python benchmarks/eval_query_analysis.py

Per ground truth and per kind ("current", "version", "change"): the questions that agree
with the oracle (devkit/query_oracle.py; tests/rag/test_lineage_query.py asserts the same at 95%),
then each disagreement. Pure text analysis: no database.
"""

from __future__ import annotations

import os
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def main() -> None:
    sys.path.insert(0, str(ROOT))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    import django

    django.setup()
    from devkit.query_oracle import ORACLE_WORKSPACES, oracle_results

    for path in ORACLE_WORKSPACES:
        results = oracle_results(path)
        totals, agreed = Counter(kind for kind, _ in results), Counter(kind for kind, problem in results if not problem)
        overall = sum(agreed.values()) / len(results)
        per_kind = ", ".join(f"{kind} {agreed[kind]}/{total}" for kind, total in totals.items())
        print(f"{path}: {overall:.1%} agree ({per_kind})")
        for kind, problem in results:
            if problem:
                print(f"  [{kind}] {problem}")


if __name__ == "__main__":
    main()
