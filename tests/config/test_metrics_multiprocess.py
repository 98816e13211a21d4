"""/metrics under several web processes: one figure per metric, the sum of every process's (search's figures and
django-prometheus's HTTP and database ones alike)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
COUNT_SCRIPT = """
import sys, django
django.setup()
from django_prometheus.db import execute_total
from rag.retrieval.metrics import VARIANTS_FILTERED
VARIANTS_FILTERED.inc(int(sys.argv[1]))
execute_total.labels("default", "postgresql").inc(int(sys.argv[1]))
"""


def _counter(body: str, name: str) -> float:
    return next(float(line.split()[-1]) for line in body.splitlines() if line.startswith(name + " "))


@pytest.mark.django_db
def test_metrics_add_up_the_counters_of_two_processes(tmp_path, monkeypatch, staff_client):
    from config.launcher import metrics_dir_prepare

    (tmp_path / "metrics").mkdir()
    (tmp_path / "metrics" / "counter_999.db").write_bytes(b"left over from an earlier run")
    folder = metrics_dir_prepare(tmp_path)
    assert list(folder.iterdir()) == []

    env = {**os.environ, "PROMETHEUS_MULTIPROC_DIR": str(folder), "DJANGO_SETTINGS_MODULE": "config.settings"}
    processes = [subprocess.Popen([sys.executable, "-c", COUNT_SCRIPT, str(n)], cwd=ROOT, env=env) for n in (3, 4)]
    assert [process.wait(timeout=120) for process in processes] == [0, 0]
    assert len(list(folder.glob("counter_*.db"))) == 2  # one file per process

    monkeypatch.setenv("PROMETHEUS_MULTIPROC_DIR", str(folder))
    response = staff_client.get("/metrics")
    assert response.status_code == 200
    assert _counter(response.content.decode(), "docent_search_variants_filtered_total") == 7
    assert _counter(response.content.decode(), 'django_db_execute_total{alias="default",vendor="postgresql"}') == 7
