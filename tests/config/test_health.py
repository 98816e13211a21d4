from __future__ import annotations

import signal
import time

import pytest

from config.launcher import RESTART_PAUSE_SECONDS, Child, beat_command, children_supervise
from tests.conftest import beat_environment
from tests.factories import UserFactory


def _wait_for(client, check: str, ok: bool, timeout: float = 60) -> dict:
    deadline = time.monotonic() + timeout
    while True:
        body = client.get("/healthz").json()
        if body["checks"][check]["ok"] is ok or time.monotonic() > deadline:
            assert body["checks"][check]["ok"] is ok, body
            return body
        time.sleep(0.3)


@pytest.mark.worker
def test_healthz_all_green_with_a_worker_and_the_scheduler_then_down_when_the_worker_stops(client, start_worker,
                                                                                       start_beat, settings):
    settings.WORKER_HEARTBEAT_SECONDS = 1
    start_beat()
    worker = start_worker()
    _wait_for(client, "scheduler", True)
    response = client.get("/healthz")
    body = response.json()
    assert response.status_code == 200, body
    assert body["status"] == "ok"
    assert {name for name, check in body["checks"].items() if check["ok"]} == {
        "database", "pgvector", "redis", "workers", "scheduler"}

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
    assert anonymous["checks"]["redis"] == {"ok": False}
    assert "secret-location" not in str(anonymous)
    assert any("secret-location" in record.exc_text for record in caplog.records if record.exc_text)

    client.force_login(UserFactory())
    assert "secret-location" not in str(client.get("/healthz").json())
    client.force_login(UserFactory(is_staff=True))
    assert "secret-location" in client.get("/healthz").json()["checks"]["redis"]["error"]


@pytest.mark.worker
def test_a_scheduler_killed_with_sigkill_turns_healthz_down_once_its_last_tick_is_stale(staff_client, start_beat,
                                                                                        settings):
    """Issue 37: a killed beat was never missed: no line, and /healthz stayed "ok"."""
    client = staff_client  # the last tick's age is staff's (issue 49)
    settings.WORKER_HEARTBEAT_SECONDS = 1  # beat ticks every second (tests.conftest.BEAT_ENV): stale after 3 s
    beat = start_beat()
    ticking = _wait_for(client, "scheduler", True)["checks"]["scheduler"]
    assert ticking["last_tick_seconds_ago"] <= 3
    beat.proc.send_signal(signal.SIGKILL)
    beat.proc.wait(timeout=10)
    body = _wait_for(client, "scheduler", False, timeout=15)
    assert client.get("/healthz").status_code == 503 and body["status"] == "down"
    assert body["checks"]["scheduler"]["last_tick_seconds_ago"] >= 3  # stale past 3 s, shown to a tenth


@pytest.mark.worker
def test_make_run_starts_a_scheduler_killed_with_sigkill_again_and_says_so(staff_client, db, tmp_path, settings):
    """Issue 37: `make run`'s beat lived inside the worker; killed, nothing brought it back. Now the launcher
    supervises it as a process of its own (config.launcher.children_supervise, called in its main loop)."""
    client = staff_client
    settings.WORKER_HEARTBEAT_SECONDS = 1
    scheduler = Child("scheduler", beat_command(), tmp_path / "beat.log", beat_environment(tmp_path), restart=True)
    said: list[str] = []
    scheduler.start()
    try:
        _wait_for(client, "scheduler", True)
        first = scheduler.proc
        first.send_signal(signal.SIGKILL)
        first.wait(timeout=10)
        deadline = time.monotonic() + RESTART_PAUSE_SECONDS + 10
        while scheduler.proc is first and time.monotonic() < deadline:
            assert children_supervise([scheduler], say=said.append) is None  # the instance goes on
            time.sleep(0.3)
        assert scheduler.proc is not first and scheduler.proc.poll() is None
        assert said == [f"the scheduler exited with status -9; started it again, log {tmp_path / 'beat.log'}"]
        time.sleep(3.5)  # the killed beat's last tick is stale by now: only the new one can keep the check ok
        assert _wait_for(client, "scheduler", True, timeout=60)["checks"]["scheduler"]["last_tick_seconds_ago"] <= 3
    finally:
        scheduler.proc.terminate()
        scheduler.proc.wait(timeout=20)


@pytest.mark.django_db
def test_anyone_reads_ok_or_not_per_part_the_detail_is_for_staff_or_the_token(client, settings):
    """Issue 49: the public /healthz told anyone the pgvector version and how many worker processes run."""
    settings.METRICS_TOKEN = "monitor-token"
    public = client.get("/healthz").json()
    assert set(public["checks"]) == {"database", "pgvector", "redis", "workers", "scheduler"}
    assert all(set(check) == {"ok"} for check in public["checks"].values()), public
    assert client.get("/healthz", HTTP_AUTHORIZATION="Bearer wrong").json() == public
    token = client.get("/healthz", HTTP_AUTHORIZATION="Bearer monitor-token").json()
    assert token["checks"]["pgvector"]["version"] and "count" in token["checks"]["workers"]
    client.force_login(UserFactory())
    assert client.get("/healthz").json() == public
    client.force_login(UserFactory(is_staff=True))
    assert client.get("/healthz").json()["checks"]["pgvector"]["version"]
