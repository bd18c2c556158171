"""redis-server processes for tests, shared by python/tests and tests/module.

Each server listens on a free loopback port, keeps its files in the directory it is given and
is started and stopped by its own pid. A missing redis-server fails the test, never skips it.
Every wait is bounded polling on a condition, never a fixed sleep."""

import shutil
import signal
import socket
import subprocess
import time

import pytest
import redis

START_TIMEOUT = 60.0


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_until(condition, what, timeout=60.0, interval=0.02):
    """Polls condition() until it returns something true (returned); fails after timeout."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            pytest.fail("timed out after %.0f s waiting for %s" % (timeout, what))
        time.sleep(interval)


class RedisServer:
    def __init__(self, directory, *options, wrapper=(), auth=None):
        """wrapper: a command line that runs the server (a memory checker), before its own.
        auth: (user, password) the test's own clients log in with (a server whose default
        user is off)."""
        if shutil.which("redis-server") is None:
            pytest.fail("redis-server not found (scripts/install-deps.sh --test installs it)")
        if wrapper and shutil.which(wrapper[0]) is None:
            pytest.fail("%s not found (scripts/install-deps.sh --test installs it)" % wrapper[0])
        self.directory = directory
        self.options = list(options)
        self.wrapper = list(wrapper)
        self.auth = auth
        self.port = None
        self.process = None
        self.start()

    @property
    def log(self):
        return self.directory / "redis.log"

    def log_tail(self, lines=20):
        try:
            return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no log)"

    def start(self):
        """Starts the server (on its old port after a stop) and waits until it answers PING."""
        for _ in range(20):
            port = self.port or free_port()
            process = subprocess.Popen(
                self.wrapper + ["redis-server", "--port", str(port), "--bind", "127.0.0.1",
                                "--save", "", "--appendonly", "no", "--dir", str(self.directory),
                                "--logfile", str(self.log)] + self.options)
            client = self._redis(port, socket_timeout=10)
            deadline = time.monotonic() + START_TIMEOUT
            while process.poll() is None and time.monotonic() < deadline:
                try:
                    client.ping()  # LOADING (a big dataset) is a ConnectionError: wait on
                    self.port, self.process = port, process
                    return
                except redis.ConnectionError:
                    time.sleep(0.02)
            if process.poll() is None:
                process.kill()
            process.wait()
            if self.port:
                break
        pytest.fail("could not start redis-server (%s):\n%s" % (self.log, self.log_tail()))

    @property
    def url(self):
        return "redis://127.0.0.1:%d" % self.port

    @property
    def pid(self):
        return self.process.pid if self.process is not None else None

    def _redis(self, port, **options):
        if self.auth is not None:
            options.setdefault("username", self.auth[0])
            options.setdefault("password", self.auth[1])
        return redis.Redis(host="127.0.0.1", port=port, **options)

    def client(self, **options):
        options.setdefault("socket_timeout", 60)
        return self._redis(self.port, **options)

    def alive(self):
        return self.process is not None and self.process.poll() is None

    def kill(self):
        """SIGKILL: nothing is saved."""
        if self.process is not None:
            self.process.kill()
            self.process.wait()
            self.process = None

    def stop(self, timeout=60):
        """SIGTERM: a clean shutdown (the AOF flushed); SIGKILL if it takes too long."""
        if self.process is not None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
            self.process = None

    def restart(self):
        self.stop()
        self.start()
