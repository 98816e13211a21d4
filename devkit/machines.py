"""The multi-machine shape on one machine, shared by tests/rag/test_storage_machines.py and benchmarks/bench_storage.py:
a real S3-compatible server on loopback (moto's server mode) and a web process (gunicorn) in its own DATA_DIR.
Workers are devkit.faults.PoolWorker processes in DATA_DIRs of their own."""

from __future__ import annotations

import logging
import os
import re
import socket
import subprocess
import sys
import time
from pathlib import Path

import boto3
import requests
from moto.server import ThreadedMotoServer

from devkit.faults import ROOT

BUCKET = "docent-test"
# moto accepts any key pair; the processes read these from the environment, as boto3 does anywhere: set
# while the server runs, and put back as they were when it stops, so no later test inherits them.
CREDENTIALS = {"AWS_ACCESS_KEY_ID": "docent-test-key", "AWS_SECRET_ACCESS_KEY": "docent-test-secret",
               "AWS_DEFAULT_REGION": "us-east-1"}


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class S3Server:
    """moto's S3 on 127.0.0.1:<port>; stop() and start() again keep the objects (they live in this process)."""

    def __init__(self, *, prefix: str = "docent") -> None:
        self.port = free_port()
        self.endpoint = f"http://127.0.0.1:{self.port}"
        self.prefix = prefix
        self._server: ThreadedMotoServer | None = None
        self._environ_before: dict[str, str | None] = {}
        logging.getLogger("werkzeug").setLevel(logging.WARNING)  # a line per request would drown the output

    def start(self) -> None:
        self._environ_before = {name: os.environ.get(name) for name in CREDENTIALS}
        os.environ.update(CREDENTIALS)
        deadline = time.monotonic() + 30
        while True:
            try:
                self._server = ThreadedMotoServer(ip_address="127.0.0.1", port=self.port, verbose=False)
                self._server.start()
                break
            except OSError:  # the port was just closed: taken again in a moment
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.2)
        if not self._bucket_exists():
            self.client().create_bucket(Bucket=BUCKET)

    def stop(self) -> None:
        if self._server is not None:
            self._server.stop()
            self._server = None
        for name, value in self._environ_before.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
        self._environ_before = {}

    def client(self):
        return boto3.client("s3", endpoint_url=self.endpoint, region_name=CREDENTIALS["AWS_DEFAULT_REGION"])

    def _bucket_exists(self) -> bool:
        return any(bucket["Name"] == BUCKET for bucket in self.client().list_buckets().get("Buckets", []))

    def keys(self) -> list[str]:
        pages = self.client().get_paginator("list_objects_v2").paginate(Bucket=BUCKET, Prefix=f"{self.prefix}/")
        return [entry["Key"] for page in pages for entry in page.get("Contents", [])]

    def environ(self) -> dict[str, str]:
        """What a web or worker process needs to use this server as its file storage."""
        return {"STORAGE_URL": f"s3://{BUCKET}/{self.prefix}", "AWS_S3_ENDPOINT_URL": self.endpoint, **CREDENTIALS}


class WebProcess:
    """gunicorn serving config.wsgi, as `make run` does, against the given database, Redis and storage."""

    def __init__(self, *, database_url: str, redis_url: str, data_dir: Path, extra_env: dict[str, str]) -> None:
        data_dir.mkdir(parents=True, exist_ok=True)
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        env = {**os.environ, "DATABASE_URL": database_url, "REDIS_URL": redis_url, "DATA_DIR": str(data_dir),
               "PYTHONPATH": str(ROOT), **extra_env}
        self.log_path = data_dir / "web.log"
        self._log = open(self.log_path, "w")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "gunicorn", "config.wsgi:application", "--bind", f"127.0.0.1:{self.port}",
             "--workers", "2", "--timeout", "300", "--preload"],
            cwd=ROOT, env=env, stdout=self._log, stderr=subprocess.STDOUT,
        )
        self.session = requests.Session()

    def wait_ready(self, timeout: float = 120) -> None:
        deadline = time.monotonic() + timeout
        while True:
            try:
                if self.session.get(f"{self.url}/accounts/login/", timeout=60).status_code == 200:
                    return
            except requests.RequestException:
                pass  # not listening yet, or still loading the application
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"web process not up:\n{self.log_path.read_text()[-3000:]}")
            time.sleep(0.3)

    def _csrf(self, path: str) -> str:
        page = self.session.get(f"{self.url}{path}", timeout=30)
        page.raise_for_status()
        return re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page.text).group(1)

    def login(self, username: str, password: str) -> None:
        response = self.session.post(f"{self.url}/accounts/login/", timeout=30, allow_redirects=False, data={
            "csrfmiddlewaretoken": self._csrf("/accounts/login/"), "username": username, "password": password})
        assert response.status_code == 302, response.text[-2000:]

    def upload(self, files: list[tuple[str, bytes]]) -> int:
        """POST the files to the upload page as a browser does; returns the job id it redirects to."""
        response = self.session.post(
            f"{self.url}/documents/upload/", timeout=300, allow_redirects=False,
            data={"csrfmiddlewaretoken": self._csrf("/documents/upload/")},
            files=[("files", (name, data, "application/octet-stream")) for name, data in files],
        )
        assert response.status_code == 302, (response.status_code, response.text[-2000:])
        return int(re.search(r"/jobs/(\d+)/", response.headers["Location"]).group(1))

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self._log.close()
