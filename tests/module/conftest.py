"""Fixtures for the Redis module's tests: redis-server processes with redbloom.so loaded, on
free loopback ports, started and stopped by pid (tests/support/redis_server.py)."""

import pytest

from module_util import Resp, start_server

DEBUG = ("--enable-debug-command", "yes", "--enable-module-command", "yes")


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """One server per test file, emptied before each test that uses r or raw."""
    s = start_server(tmp_path_factory.mktemp("redis"), options=DEBUG)
    yield s
    s.kill()


@pytest.fixture
def r(server):
    client = server.client()
    client.flushall()
    yield client
    client.close()
    assert server.alive(), "redis-server died:\n" + server.log_tail()


@pytest.fixture
def raw(server, r):
    """The same server through resp.Resp: replies exactly as sent."""
    with Resp(server.port) as c:
        yield c


@pytest.fixture
def make_server(tmp_path):
    """Starts servers of the test's own: make_server(*module_args, options=(...))."""
    started = []

    def make(*module_args, options=()):
        s = start_server(tmp_path / ("server%d" % len(started)), *module_args, options=options)
        started.append(s)
        return s

    yield make
    for s in started:
        s.kill()
