"""Bad configuration is reported by `manage.py check` by name and stops a process at start with one clear line;
importing the settings writes nothing; production settings are deploy-clean; `make run` sizes its worker."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _run(args: list[str], **env: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, *args], cwd=ROOT, env={**os.environ, **env}, capture_output=True, text=True, timeout=120
    )


def test_unreachable_database_url_fails_with_one_message():
    result = _run(["-m", "config.launcher"], DATABASE_URL="postgresql://docent@127.0.0.1:9/docent")
    assert result.returncode == 2
    assert "cannot reach the database" in result.stdout + result.stderr
    assert "Traceback" not in result.stdout + result.stderr


def test_unwritable_data_dir_is_reported_by_check_and_stops_a_command_with_one_message():
    checked = _run(["manage.py", "check"], DATA_DIR="/proc/docent-data")
    assert checked.returncode == 1
    assert "(docent.E001) DATA_DIR /proc/docent-data is not writable" in checked.stderr
    assert "Traceback" not in checked.stderr
    stopped = _run(["manage.py", "shell", "-c", "pass"], DATA_DIR="/proc/docent-data", DOCENT_EMBEDDED_START="false")
    assert stopped.returncode == 2
    assert stopped.stderr.startswith("docent: configuration error: DATA_DIR /proc/docent-data is not writable")
    assert stopped.stderr.count("\n") == 1


def test_serving_the_network_requires_a_secret_key(tmp_path):
    environment = {"DEBUG": "false", "SECRET_KEY": "", "ALLOWED_HOSTS": "docs.example.com",
                   "DATA_DIR": str(tmp_path / "data")}
    checked = _run(["manage.py", "check"], **environment)
    assert checked.returncode == 1
    assert "(docent.E001) SECRET_KEY must be set when the instance serves the network" in checked.stderr
    launched = _run(["-m", "config.launcher"], **environment, DOCENT_PORT="9")
    assert launched.returncode == 2
    assert launched.stderr == ("docent: configuration error: SECRET_KEY must be set when the instance serves the "
                               "network (ALLOWED_HOSTS names hosts other than this machine's, DOCENT_HOST is not "
                               "loopback, or DOCENT_SERVES_NETWORK=true)\n")
    assert not (tmp_path / "data" / "secret_key").exists()  # refused at the first-start step: no key written


def test_bad_values_are_reported_by_check_naming_each_variable(tmp_path):
    bad = {"DB_CONN_MAX_AGE": "sixty", "LOG_FORMAT": "xml", "TRUSTED_PROXIES": "10.0.0.0/8,proxy",
           "EMBEDDED_PG_SHARED_BUFFERS": "lots", "DEBUG": "maybe", "LICENSE_PUBLIC_KEY": "a key"}
    checked = _run(["manage.py", "check"], DATA_DIR=str(tmp_path / "data"), **bad)
    assert checked.returncode == 1, checked.stderr
    errors = [line for line in checked.stderr.splitlines() if "(docent.E001)" in line]
    assert sorted(line.split("(docent.E001) ")[1].split("=")[0] for line in errors) == sorted(bad)
    assert "TRUSTED_PROXIES='10.0.0.0/8,proxy': 'proxy' is not an address or a network" in checked.stderr
    assert "LOG_FORMAT='xml': Input should be 'text' or 'json'" in checked.stderr
    assert not (tmp_path / "data").exists()
    # A process that would serve or work stops at start instead, one line per variable.
    stopped = _run(["manage.py", "shell", "-c", "pass"], DATA_DIR=str(tmp_path / "data"),
                   DOCENT_EMBEDDED_START="false", **bad)
    assert stopped.returncode == 2 and stopped.stderr.count("docent: configuration error: ") == len(bad)
    assert "Traceback" not in stopped.stderr


def test_importing_the_settings_on_a_fresh_data_dir_creates_no_file(tmp_path):
    """Even where the settings are wrong: a library or `manage.py check` reading them never writes nor exits."""
    data_dir = tmp_path / "nonexistent" / "data"
    script = ("import django; django.setup(); from django.conf import settings as s; "
              "print(s.DATA_DIR, s.CONFIGURATION_PROBLEMS)")
    for environment in ({}, {"ALLOWED_HOSTS": "docs.example.com", "SECRET_KEY": ""}):
        result = _run(["-c", script], DJANGO_SETTINGS_MODULE="config.settings", DATA_DIR=str(data_dir),
                      **environment)
        assert result.returncode == 0, result.stderr
        assert result.stdout.startswith(f"{data_dir} [")
        assert not (tmp_path / "nonexistent").exists()


SHOW_SETTINGS = ("from django.conf import settings as s; "
                 "print(s.DEBUG, s.ALLOWED_HOSTS, len(s.SECRET_KEY), getattr(s, 'SECURE_SSL_REDIRECT', False))")


def test_by_default_debug_is_off_with_a_kept_key_and_local_hosts_over_plain_http(tmp_path):
    environ = {key: value for key, value in os.environ.items() if key not in ("DEBUG", "SECRET_KEY", "ALLOWED_HOSTS")}
    result = subprocess.run([sys.executable, "manage.py", "shell", "-v", "0", "-c", SHOW_SETTINGS], cwd=ROOT, capture_output=True,
                            text=True, timeout=120, env={**environ, "DATA_DIR": str(tmp_path),
                                                         "DOCENT_EMBEDDED_START": "false"})
    assert result.returncode == 0, result.stderr
    assert result.stdout.split("\n")[0] == "False ['127.0.0.1', 'localhost', '[::1]'] 67 False"
    assert len((tmp_path / "secret_key").read_text()) == 67  # generated once, kept for the next start


@pytest.mark.parametrize("environment", [{"DOCENT_SERVES_NETWORK": "true"}, {"DOCENT_HOST": "0.0.0.0"}])
def test_serving_the_network_said_by_the_bind_or_outright_means_production_whatever_the_hosts(tmp_path, environment):
    """Issue 37: with the default ALLOWED_HOSTS (or a proxy sending `Host: 127.0.0.1`) the instance counted as
    serving this machine alone: HTTPS off and the development license key honoured."""
    show = ("from django.conf import settings as s; from licensing.trust import development_key_honoured as d; "
            "print(s.SERVES_NETWORK, s.HTTPS, getattr(s, 'SECURE_SSL_REDIRECT', False), d())")
    environ = {key: value for key, value in os.environ.items() if key not in ("DEBUG", "ALLOWED_HOSTS", "DOCENT_HOST")}
    base = {**environ, "DATA_DIR": str(tmp_path), "DOCENT_EMBEDDED_START": "false", **environment}
    result = subprocess.run([sys.executable, "manage.py", "shell", "-v", "0", "-c", show], cwd=ROOT,
                            capture_output=True, text=True, timeout=120, env={**base, "SECRET_KEY": "k" * 50})
    assert result.returncode == 0, result.stderr
    assert result.stdout.split("\n")[0] == "True True True False"
    keyless = subprocess.run([sys.executable, "manage.py", "check"], cwd=ROOT, capture_output=True, text=True,
                             timeout=120, env={**base, "SECRET_KEY": ""})
    assert keyless.returncode == 1 and "SECRET_KEY must be set when the instance serves the network" in keyless.stderr


def test_asking_for_debug_turns_it_on():
    result = _run(["manage.py", "shell", "-v", "0", "-c", SHOW_SETTINGS], DEBUG="true", DOCENT_EMBEDDED_START="false")
    assert result.stdout.startswith("True "), result.stderr


def test_production_settings_pass_check_deploy():
    result = _run(
        ["manage.py", "check", "--deploy", "--fail-level", "WARNING"],
        DEBUG="false",
        SECRET_KEY="x" * 20 + "k8Vt-R0xq_3mZ9LwQeYpN2sHfJ7uD4cB1aGiKoT6",
        ALLOWED_HOSTS="docent.example.com",
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "no issues" in result.stdout


@pytest.mark.parametrize(("environ", "cpus", "concurrency", "threads"), [
    ({}, 2, "2", "1"),
    ({}, 8, "2", "4"),
    ({}, 1, "1", "1"),
    ({"DOCENT_WORKER_CONCURRENCY": "3"}, 8, "3", "2"),
    ({"DOCENT_WORKER_CONCURRENCY": "1", "OMP_NUM_THREADS": "6"}, 8, "1", "6"),
])
def test_make_run_worker_splits_the_cores_between_processes_and_torch_threads(environ, cpus, concurrency, threads):
    from config.launcher import worker_command

    command, env = worker_command(environ, cpus)
    assert command[command.index("--concurrency") + 1] == concurrency
    assert env["OMP_NUM_THREADS"] == threads
    assert command[command.index("-Q") + 1] == "default,ingest,merge"  # answers have a worker of their own


def test_make_run_answers_worker_writes_answers_in_threads_of_one_process():
    from config.launcher import answers_worker_command

    command = answers_worker_command({})
    assert command[command.index("-Q") + 1] == "answers" and command[command.index("--pool") + 1] == "threads"
    assert command[command.index("--concurrency") + 1] == "8"
    assert answers_worker_command({"DOCENT_ANSWER_THREADS": "16"})[command.index("--concurrency") + 1] == "16"


@pytest.mark.django_db
def test_an_unmigrated_external_database_gets_one_line_saying_what_to_run():
    import psycopg
    from django.db import connection

    from tests.conftest import _test_database_url

    server_url = _test_database_url().replace(f"/{connection.settings_dict['NAME']}?", "/postgres?")
    with psycopg.connect(server_url, autocommit=True) as admin:
        admin.execute("DROP DATABASE IF EXISTS docent_unmigrated")
        admin.execute("CREATE DATABASE docent_unmigrated")
    try:
        result = _run(["manage.py", "ingest", "demo/corpus", "--workspace", "demo"],
                      DATABASE_URL=server_url.replace("/postgres?", "/docent_unmigrated?"))
    finally:
        with psycopg.connect(server_url, autocommit=True) as admin:
            admin.execute("DROP DATABASE docent_unmigrated")
    assert result.returncode == 2
    assert result.stderr.count("\n") == 1, result.stderr
    assert result.stderr.startswith("docent: the database has ")
    assert result.stderr.endswith("unapplied migration(s): run `python manage.py migrate` first\n")


@pytest.mark.django_db
def test_make_run_says_where_the_admin_password_comes_from(monkeypatch):
    from django.contrib.auth import authenticate

    from config.launcher import _ensure_admin

    monkeypatch.setenv("DOCENT_ADMIN_PASSWORD", "from-the-environment-42")
    assert _ensure_admin() == "sign in as 'admin' with the password from DOCENT_ADMIN_PASSWORD"
    assert authenticate(username="admin", password="from-the-environment-42")
    assert _ensure_admin().startswith("sign in as 'admin' (the password set on first start; ")

    from django.contrib.auth import get_user_model

    get_user_model().objects.all().delete()
    monkeypatch.delenv("DOCENT_ADMIN_PASSWORD")
    line = _ensure_admin()
    password = line.removeprefix("sign in as 'admin' with the password ").split(" ")[0]
    assert line.endswith("(generated now and shown only this once: keep it)")
    assert authenticate(username="admin", password=password)  # the password shown is the one that works


def test_a_generated_admin_password_is_letters_and_digits_only():
    from config.launcher import generated_password

    passwords = {generated_password() for _ in range(2000)}
    assert len(passwords) == 2000
    assert all(password.isalnum() and password.isascii() and len(password) == 16 for password in passwords)


def test_by_default_sources_read_only_a_sources_folder_beside_data_dir(tmp_path):
    environ = {key: value for key, value in os.environ.items() if key != "SOURCE_FOLDER_ROOTS"}
    show = "from django.conf import settings as s; print(s.SOURCE_FOLDER_ROOTS)"
    result = subprocess.run([sys.executable, "manage.py", "shell", "-v", "0", "-c", show], cwd=ROOT,
                            capture_output=True, text=True, timeout=120,
                            env={**environ, "DATA_DIR": str(tmp_path / "data"), "DOCENT_EMBEDDED_START": "false"})
    assert result.returncode == 0, result.stderr
    assert result.stdout.split("\n")[0] == str([str(tmp_path / "sources")])
