from __future__ import annotations

import pytest

from tests.factories import UserFactory


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


@pytest.mark.django_db
def test_what_failed_is_shown_to_staff_and_logged_but_not_to_anyone_else(client, settings, tmp_path, caplog):
    # A real failure: no Redis listens on this socket, whose path stands for what an error message gives away.
    settings.REDIS_URL = f"redis+socket://{tmp_path}/secret-location/redis.sock"
    with caplog.at_level("WARNING", logger="config.health"):
        anonymous = client.get("/healthz").json()
    assert anonymous["checks"]["redis"] == {"ok": False, "error": "unavailable (details in the server log)"}
    assert "secret-location" not in str(anonymous)
    assert any("secret-location" in record.exc_text for record in caplog.records if record.exc_text)

    client.force_login(UserFactory())
    assert "secret-location" not in str(client.get("/healthz").json())
    client.force_login(UserFactory(is_staff=True))
    assert "secret-location" in client.get("/healthz").json()["checks"]["redis"]["error"]
