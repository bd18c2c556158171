"""--metrics HOST:PORT of the long-running stages other than Kafka's: `redbloom dedup` reading a
pipe, and the Redis Streams stage (`dedup --from redis-stream://...`) on a redis-server started
here on a free loopback port (tests/support/redis_server.py) and stopped by pid. Each page is
scraped while the stage runs and checked against what was fed to it.

REDBLOOM_CLI names the built command (ctest sets it)."""

import re
import signal
import subprocess
import sys
import threading
import urllib.request
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent / "support"))
from built_programs import redbloom_cli  # noqa: E402
from redis_server import RedisServer, wait_until  # noqa: E402


def scrape(url):
    with urllib.request.urlopen(url, timeout=10) as reply:
        assert reply.headers["Content-Type"].startswith("text/plain")
        page = reply.read().decode()
    values = {}
    for line in page.splitlines():
        if line and not line.startswith("#"):
            name, value = line.rsplit(" ", 1)
            values[name] = float(value)
    return values


RUNNING = []


@pytest.fixture(autouse=True)
def stop_leftovers():
    """A test that fails leaves no stage running (by its pid)."""
    yield
    while RUNNING:
        process = RUNNING.pop()
        if process.poll() is None:
            process.kill()
            process.wait()


class Stage:
    """A running command whose stderr is collected line by line."""

    def __init__(self, args, stdin=None):
        self.process = subprocess.Popen([redbloom_cli(), *args], stdin=stdin,
                                        stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        RUNNING.append(self.process)
        self.lines = []
        self.out = []
        self._err = threading.Thread(target=self._collect, args=(self.process.stderr, self.lines),
                                     daemon=True)
        self._out = threading.Thread(target=self._collect, args=(self.process.stdout, self.out),
                                     daemon=True)
        self._err.start()
        self._out.start()

    @staticmethod
    def _collect(pipe, into):
        for line in pipe:
            into.append(line.decode(errors="replace").rstrip("\n"))

    def url(self):
        def found():
            for line in self.lines:
                m = re.search(r"metrics on (http://\S+)", line)
                # The address is noted once it listens; the page comes once the filter is open.
                if m and "redbloom_records_in_total" in scrape(m.group(1)):
                    return m.group(1)
            assert self.process.poll() is None, "\n".join(self.lines)
            return None
        return wait_until(found, "the metrics address")

    def finish(self, timeout=120):
        code = self.process.wait(timeout=timeout)
        self._err.join()
        self._out.join()
        return code


def test_dedup_from_a_pipe(tmp_path):
    stage = Stage(["dedup", "-f", str(tmp_path / "seen.rbf"), "-n", "100000", "-p", "1e-6",
                   "--metrics", "127.0.0.1:0"], stdin=subprocess.PIPE)
    url = stage.url()
    early = scrape(url)  # answered from the start, before any item
    assert early["redbloom_records_in_total"] == 0
    assert early["redbloom_filter_estimated_items"] == 0

    first = "".join("k%d\n" % (i % 3000) for i in range(5000)).encode()
    stage.process.stdin.write(first)
    stage.process.stdin.flush()
    # The pipe stays open: the batch is flushed when input stalls, and the page follows it.
    wait_until(lambda: scrape(url)["redbloom_records_in_total"] == 5000, "5000 items counted")
    values = scrape(url)
    assert values["redbloom_records_out_total"] == 3000
    assert values["redbloom_duplicates_total"] == 2000
    assert values["redbloom_input_bytes_total"] == len(first)
    assert 2700 < values["redbloom_filter_estimated_items"] < 3300
    assert 0 < values["redbloom_filter_fill_ratio"] < 1
    assert 0 < values["redbloom_filter_estimated_false_positive_rate"] < 1e-6

    stage.process.stdin.write(b"new\nk1\n")
    stage.process.stdin.flush()
    wait_until(lambda: scrape(url)["redbloom_records_in_total"] == 5002, "2 more items counted")
    values = scrape(url)
    assert values["redbloom_records_out_total"] == 3001
    assert values["redbloom_duplicates_total"] == 2001
    stage.process.stdin.close()
    assert stage.finish() == 0, "\n".join(stage.lines)
    assert len(stage.out) == 3001


def test_dedup_dups_counts_the_repeats_written(tmp_path):
    stage = Stage(["dedup", "--dups", "-f", str(tmp_path / "seen.rbf"), "-n", "1000",
                   "--metrics", "127.0.0.1:0"], stdin=subprocess.PIPE)
    url = stage.url()
    stage.process.stdin.write(b"a\nb\na\na\n")
    stage.process.stdin.flush()
    wait_until(lambda: scrape(url)["redbloom_records_in_total"] == 4, "4 items counted")
    assert scrape(url)["redbloom_records_out_total"] == 2
    stage.process.stdin.close()
    assert stage.finish() == 0
    assert stage.out == ["a", "a"]


def test_bad_address_is_refused(tmp_path):
    r = subprocess.run([redbloom_cli(), "dedup", "-f", str(tmp_path / "x.rbf"), "--metrics",
                        "nowhere"], input=b"a\n", capture_output=True, timeout=60)
    assert r.returncode == 2
    assert b"--metrics 'nowhere': an address is HOST:PORT" in r.stderr
    assert not (tmp_path / "x.rbf").exists()  # refused before the filter was made


@pytest.fixture
def server(tmp_path):
    directory = tmp_path / "redis"
    directory.mkdir()
    s = RedisServer(directory)
    yield s
    s.kill()


def test_redis_stream_stage(server, tmp_path):
    client = server.client()
    port = server.port
    for i in range(3000):
        client.xadd("in", {"id": "k%d" % (i % 2000), "n": i})
    stage = Stage(["dedup", "--from", "redis-stream://127.0.0.1:%d#in" % port,
                   "--to", "redis-stream://127.0.0.1:%d#out" % port, "--group", "g",
                   "--create-group", "--key-field", "id", "--batch", "500",
                   "--redis", "redis://127.0.0.1:%d#seen" % port, "-n", "100000", "-p", "1e-6",
                   "--metrics", "127.0.0.1:0"])
    url = stage.url()
    labels = '{stream="in",group="g"}'

    def handled(count):
        values = scrape(url)
        return values if (values["redbloom_records_in_total"] == count and
                          values.get("redbloom_stream_lag" + labels) == 0) else None
    values = wait_until(lambda: handled(3000), "3000 entries counted")
    assert values["redbloom_records_out_total"] == 2000
    assert values["redbloom_duplicates_total"] == 1000
    assert values["redbloom_records_without_key_total"] == 0
    assert values["redbloom_stream_pending" + labels] == 0
    assert values["redbloom_filter_estimated_items"] > 0
    assert 0 < values["redbloom_filter_estimated_false_positive_rate"] < 1e-6
    assert client.xlen("out") == 2000

    # Entries added while it runs are counted too, and the lag comes back to 0.
    for i in range(1000):
        client.xadd("in", {"id": "late%d" % i})
    values = wait_until(lambda: handled(4000), "4000 entries counted")
    assert values["redbloom_records_out_total"] == 3000
    stage.process.send_signal(signal.SIGTERM)
    assert stage.finish() == 0, "\n".join(stage.lines)
