from __future__ import annotations

import pytest


@pytest.mark.worker
def test_healthz_all_green_with_a_worker_then_down_when_it_stops(client, start_worker):
    worker = start_worker()
    response = client.get("/healthz")
    body = response.json()
    assert response.status_code == 200, body
    assert body["status"] == "ok"
    assert {name for name, check in body["checks"].items() if check["ok"]} == {"database", "pgvector", "redis", "workers"}

    worker.stop()
    response = client.get("/healthz")
    body = response.json()
    assert response.status_code == 503
    assert body["checks"]["workers"]["ok"] is False
    assert body["checks"]["database"]["ok"] is True


@pytest.mark.django_db
def test_healthz_needs_no_login_and_is_never_cached(client):
    response = client.get("/healthz")
    assert response.status_code in (200, 503)
    assert "no-cache" in response["Cache-Control"]
