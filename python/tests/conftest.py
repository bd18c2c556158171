"""Fixtures: redis-server processes on free loopback ports (tests/support/redis_server.py: started
and stopped by pid; a missing redis-server fails, never skips) and the redbloom CLI built beside
the package."""

import sys
from pathlib import Path

import pytest

# RedisServer lives in tests/support, shared with the Redis module's suite.
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tests" / "support"))
from built_programs import redbloom_cli  # noqa: E402
from redis_server import RedisServer, free_port  # noqa: E402,F401


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
    return redbloom_cli()


@pytest.fixture
def workdir(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    return tmp_path
