"""Fixtures: redis-server processes on free loopback ports (started and stopped by pid here;
a missing redis-server fails, never skips) and the redbloom CLI built beside the package."""

import os
import shutil
import socket
import subprocess
import time

import pytest
import redis


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class RedisServer:
    def __init__(self, directory, *options):
        if shutil.which("redis-server") is None:
            pytest.fail("redis-server not found (scripts/install-deps.sh --test installs it)")
        self.directory = directory
        self.options = list(options)
        self.port = None
        self.process = None
        self.start()

    def start(self):
        for _ in range(20):
            port = self.port or free_port()
            process = subprocess.Popen(
                ["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "",
                 "--appendonly", "no", "--dir", str(self.directory), "--logfile",
                 str(self.directory / "redis.log")] + self.options)
            client = redis.Redis(port=port)
            for _ in range(200):
                if process.poll() is not None:
                    break
                try:
                    client.ping()
                    self.port, self.process = port, process
                    return
                except redis.ConnectionError:
                    time.sleep(0.05)
            process.kill()
            process.wait()
            if self.port:
                break
        pytest.fail("could not start redis-server (see %s)" % (self.directory / "redis.log"))

    @property
    def url(self):
        return "redis://127.0.0.1:%d" % self.port

    def client(self):
        return redis.Redis(port=self.port)

    def kill(self):
        if self.process is not None:
            self.process.kill()
            self.process.wait()
            self.process = None


@pytest.fixture(scope="session")
def redis_server(tmp_path_factory):
    server = RedisServer(tmp_path_factory.mktemp("redis"))
    yield server
    server.kill()


@pytest.fixture
def fresh_redis(tmp_path):
    """A server of the test's own (killed or filled by the test)."""
    directory = tmp_path / "redis"
    directory.mkdir()
    server = RedisServer(directory)
    yield server
    server.kill()


@pytest.fixture(scope="session")
def cli():
    path = os.environ.get("REDBLOOM_CLI")
    if not path or not os.access(path, os.X_OK):
        pytest.fail("REDBLOOM_CLI must name the built redbloom command (ctest sets it)")
    return path


@pytest.fixture
def workdir(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    return tmp_path
