"""A real S3-compatible server for the object-store tests: moto in server mode on 127.0.0.1.

Started once per test worker (a separate process, so the writers under test and the server
never share a GIL); each test gets its own bucket. The credentials are the fake ones moto
accepts; tests that check credentials never leak use a distinctive secret of their own.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import uuid

import pytest

pytest.importorskip("moto", reason="moto[server] (the test extras) serves the object-store tests")

SECRET = "s3cr3t-Key-8f2d0c7e41b94a6f"  # a fake secret a test can grep every output for


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class S3Server:
    def __init__(self) -> None:
        self.port = _free_port()
        self.endpoint = f"http://127.0.0.1:{self.port}"
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(self.port)],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 60
        while True:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                break
            except OSError:
                if self.proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"moto server did not start on port {self.port}") from None
                time.sleep(0.1)

    def env(self) -> dict[str, str]:
        """The standard AWS environment LanceDB's object store (and boto3) read."""
        return {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": SECRET, "AWS_REGION": "us-east-1",
                "AWS_ENDPOINT_URL": self.endpoint, "AWS_ALLOW_HTTP": "true"}

    def bucket(self) -> str:
        import boto3

        name = f"mem-{uuid.uuid4().hex[:12]}"
        boto3.client("s3", endpoint_url=self.endpoint, region_name="us-east-1", aws_access_key_id="testing",
                     aws_secret_access_key=SECRET).create_bucket(Bucket=name)
        return name

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()


@pytest.fixture(scope="session")
def s3_server():
    server = S3Server()
    yield server
    server.stop()


@pytest.fixture
def s3_uri(s3_server, monkeypatch) -> str:
    """``s3://<a new bucket>/team``, with the AWS environment set for this test (and its children)."""
    for key, value in s3_server.env().items():
        monkeypatch.setenv(key, value)
    return f"s3://{s3_server.bucket()}/team"


def child_env(server: S3Server, **extra: str) -> dict[str, str]:
    return {**os.environ, **server.env(), **extra}
