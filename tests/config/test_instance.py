"""An instance's ground rules, checked before anything starts: one launcher per data folder, a free port,
no network bind that ALLOWED_HOSTS does not cover, one private secret key."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from config.instance import (
    InstanceError,
    bind_check,
    data_dir_lock,
    port_check,
    secret_key_read_or_create,
    web_bind_check,
)

ROOT = Path(__file__).resolve().parents[2]


def _launch(data_dir: Path, **environment: str) -> subprocess.CompletedProcess:
    """`make run` as a user starts it; every case here must be refused before any service starts."""
    inherited = {key: value for key, value in os.environ.items()
                 if key not in ("DATABASE_URL", "REDIS_URL", "ALLOWED_HOSTS", "DOCENT_HOST", "DOCENT_PORT")}
    return subprocess.run([sys.executable, "-m", "config.launcher"], cwd=ROOT, capture_output=True, text=True,
                          timeout=60, env={**inherited, "DATA_DIR": str(data_dir), **environment})


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_a_second_launcher_on_a_held_data_folder_is_refused_before_starting_anything(tmp_path: Path):
    held = data_dir_lock(tmp_path)
    try:
        refused = _launch(tmp_path, DOCENT_PORT=str(_free_port()))
    finally:
        held.release()
    assert refused.returncode == 2
    assert f"another `make run` (pid {os.getpid()}) is already serving DATA_DIR {tmp_path}" in refused.stdout
    assert not (tmp_path / "pg").exists() and not (tmp_path / "redis").exists()


def test_the_data_folder_lock_is_exclusive_until_released(tmp_path: Path):
    first = data_dir_lock(tmp_path)
    with pytest.raises(InstanceError, match="already serving"):
        data_dir_lock(tmp_path)
    first.release()
    data_dir_lock(tmp_path).release()


def test_a_port_in_use_is_refused_before_starting_anything(tmp_path: Path):
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        port = listener.getsockname()[1]
        with pytest.raises(InstanceError, match=f"port {port} on 127.0.0.1 is already in use"):
            port_check("127.0.0.1", port)
        refused = _launch(tmp_path, DOCENT_PORT=str(port))
    assert refused.returncode == 2 and "already in use" in refused.stdout
    assert not (tmp_path / "pg").exists()
    port_check("127.0.0.1", port)  # free again


@pytest.mark.parametrize("allowed_hosts", [None, "localhost,127.0.0.1", "*", ".*"])
def test_a_network_bind_is_refused_unless_allowed_hosts_names_real_hosts(tmp_path: Path, allowed_hosts):
    environment = {"DOCENT_HOST": "0.0.0.0", "DOCENT_PORT": str(_free_port())}
    if allowed_hosts is not None:
        environment["ALLOWED_HOSTS"] = allowed_hosts
    refused = _launch(tmp_path, **environment)
    assert refused.returncode == 2
    assert "DOCENT_HOST=0.0.0.0 would serve the network, but ALLOWED_HOSTS names no host of it" in refused.stdout
    assert not (tmp_path / "pg").exists()


def test_loopback_binds_and_named_hosts_pass_the_bind_check():
    for host in ("127.0.0.1", "localhost", "::1", "[::1]", "127.0.0.2"):
        bind_check(host, ["localhost"])
    bind_check("0.0.0.0", ["docs.example.com"])
    with pytest.raises(InstanceError):
        bind_check("docs.internal", ["localhost"])


def test_the_web_server_refuses_a_bind_beyond_loopback_that_the_settings_do_not_cover():
    for addresses in ([("127.0.0.1", 8000)], [("::1", 8000), ("localhost", 8001)]):
        web_bind_check(addresses, ["localhost"], serves_network=False)
    web_bind_check([("0.0.0.0", 8000), "/run/docent.sock"], ["docs.example.com"], serves_network=True)
    for addresses in ([("0.0.0.0", 8000)], [("192.0.2.7", 80)], ["/run/docent.sock"], [3]):
        with pytest.raises(InstanceError, match="beyond this machine, but ALLOWED_HOSTS names no host"):
            web_bind_check(addresses, ["localhost", "*"], serves_network=True)
    with pytest.raises(InstanceError, match="while DOCENT_SERVES_NETWORK=false"):
        web_bind_check([("0.0.0.0", 8000)], ["docs.example.com"], serves_network=False)


def _gunicorn(data_dir: Path, bind: str, *, hooks: list[str], **environment: str) -> subprocess.Popen:
    """The multi-machine recipe's web server, started by hand (no launcher, no preload: the check runs first)."""
    inherited = {key: value for key, value in os.environ.items()
                 if key not in ("ALLOWED_HOSTS", "DOCENT_HOST", "DOCENT_SERVES_NETWORK", "SECRET_KEY")}
    return subprocess.Popen(
        [str(Path(sys.executable).parent / "gunicorn"), "config.wsgi:application", "--bind", bind, *hooks,
         "--workers", "1"],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        env={**inherited, "DATA_DIR": str(data_dir), "DOCENT_EMBEDDED_START": "false", **environment})


@pytest.mark.parametrize(("environment", "hooks"), [
    ({}, ["--config", "python:config.web_server"]),
    ({}, []),  # no --config: gunicorn.conf.py in the project folder brings the same hooks
    ({"ALLOWED_HOSTS": "localhost,*", "SECRET_KEY": "k" * 50}, ["--config", "python:config.web_server"]),
    ({"ALLOWED_HOSTS": "docs.example.com", "SECRET_KEY": "k" * 50, "DOCENT_SERVES_NETWORK": "false"}, []),
])
def test_gunicorn_started_by_hand_on_every_interface_is_refused_before_it_listens(tmp_path: Path, environment,
                                                                                  hooks):
    """Issue 37: the README's recipe ran gunicorn on 0.0.0.0 with the launcher's bind check nowhere in the way."""
    port = _free_port()
    server = _gunicorn(tmp_path, f"0.0.0.0:{port}", hooks=hooks, **environment)
    try:
        output, _ = server.communicate(timeout=60)
    finally:
        if server.poll() is None:
            server.kill()
            server.communicate()
    assert server.returncode == 2, output
    assert f"docent: configuration error: the web server binds 0.0.0.0:{port}, beyond this machine" in output
    with socket.socket() as probe:
        assert probe.connect_ex(("127.0.0.1", port)) != 0  # nothing ever listened


_RACE = """
import sys, time
from pathlib import Path
from config.instance import secret_key_read_or_create
start = float(sys.argv[2])
while time.time() < start:
    pass
print(secret_key_read_or_create(Path(sys.argv[1])))
"""


def test_processes_starting_together_agree_on_one_private_secret_key(tmp_path: Path):
    for round_number in range(3):
        key_file = tmp_path / f"secret_key_{round_number}"
        start = time.time() + 1.5
        racers = [subprocess.Popen([sys.executable, "-c", _RACE, str(key_file), str(start)], cwd=ROOT,
                                   stdout=subprocess.PIPE, text=True) for _ in range(8)]
        keys = {racer.communicate(timeout=60)[0].strip() for racer in racers}
        assert len(keys) == 1 and len(keys.pop()) >= 50
        assert key_file.stat().st_mode & 0o777 == 0o600
    assert not [path for path in tmp_path.iterdir() if path.name.startswith(".")]  # no candidate left behind


def test_a_key_file_readable_by_others_is_made_private(tmp_path: Path):
    key_file = tmp_path / "secret_key"
    key_file.write_text("kept-from-an-older-version")
    key_file.chmod(0o644)
    assert secret_key_read_or_create(key_file) == "kept-from-an-older-version"
    assert key_file.stat().st_mode & 0o777 == 0o600


def test_a_process_that_loses_the_race_adopts_the_winners_key(tmp_path: Path, monkeypatch):
    """Deterministic half of the race above: the file appears between our look and our write."""
    key_file = tmp_path / "secret_key"
    key_file.write_text("the-winners-key")
    key_file.chmod(0o600)
    real_exists = Path.exists
    monkeypatch.setattr(Path, "exists", lambda path: False if path == key_file else real_exists(path))
    assert secret_key_read_or_create(key_file) == "the-winners-key"
    assert key_file.read_text() == "the-winners-key"


def test_a_new_key_file_is_private_from_its_creation(tmp_path: Path, monkeypatch):
    """Not made with the umask's mode and tightened afterwards: never readable by others, even briefly."""
    monkeypatch.setattr(Path, "chmod", lambda path, mode: None)
    monkeypatch.setattr(os, "chmod", lambda *args, **kwargs: None)
    previous = os.umask(0o022)
    try:
        secret_key_read_or_create(tmp_path / "secret_key")
    finally:
        os.umask(previous)
    assert (tmp_path / "secret_key").stat().st_mode & 0o777 == 0o600
