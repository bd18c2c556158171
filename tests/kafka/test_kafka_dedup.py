"""redbloom dedup --from kafka://... --to kafka://...: against librdkafka's mock cluster
(kafka_mock.py), with kcat producing the input and consuming the output, as a user would.

The mock cluster models brokers, partitions, consumer groups and their committed offsets; what
it cannot model (transactions' offsets) is not claimed by the stage (docs/cli.md)."""

import collections
import json
import os
import random
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "support"))
from built_programs import redbloom_cli  # noqa: E402
from kafka_mock import MockCluster  # noqa: E402
from redis_server import RedisServer, wait_until  # noqa: E402


@pytest.fixture
def make_cluster():
    made = []

    def make(*topics, brokers=1):
        c = MockCluster(brokers, topics)
        made.append(c)
        return c

    yield make
    for c in made:
        c.stop()


@pytest.fixture
def redis_server(tmp_path):
    made = []

    def make(*options):
        s = RedisServer(tmp_path / ("redis%d" % len(made)), *options)
        made.append(s)
        return s

    yield make
    for s in made:
        s.kill()


def module_path():
    path = os.environ.get("REDBLOOM_MODULE")
    if not path or not os.path.isfile(path):
        pytest.fail("REDBLOOM_MODULE must name the built redbloom.so (ctest sets it), got %r" % path)
    return os.path.abspath(path)


def stage_args(cluster, group, filter_args, *extra, src="in", dst="out"):
    return [redbloom_cli(), "dedup", "--from", cluster.uri(src), "--to", cluster.uri(dst),
            "--group", group, *filter_args, *extra]


def run_until_drained(cluster, args, expected_reads, timeout=300, min_seconds=0.0):
    """Runs the stage until it has read `expected_reads` records and run `min_seconds` (its
    --progress lines say), then stops it with SIGTERM; returns (exit status, stderr)."""
    stage = subprocess.Popen([*args, "--progress", "100ms"], stderr=subprocess.PIPE, text=True)
    lines = []
    deadline = time.monotonic() + timeout
    read = -1
    seconds = 0.0
    while read < expected_reads or seconds < min_seconds:
        line = stage.stderr.readline()
        if not line:
            break
        lines.append(line)
        m = re.search(r"dedup: ([0-9.]+) s, read (\d+)", line)
        if m:
            seconds, read = float(m.group(1)), int(m.group(2))
        assert time.monotonic() < deadline, "the stage read %d of %d records in %d s" % (
            read, expected_reads, timeout)
    if stage.poll() is None:
        stage.send_signal(signal.SIGTERM)
    rest = stage.communicate(timeout=60)[1]
    return stage.returncode, "".join(lines) + rest


def summary_count(stderr, name):
    m = re.search(r"redbloom dedup: read \d+.*", stderr)
    assert m, stderr
    found = re.search(r"(\d+) %s|%s (\d+)" % (name, name), m.group(0))
    return int(found.group(1) or found.group(2)) if found else 0


def test_the_harness_carries_records_through_kcat(make_cluster):
    cluster = make_cluster("t:2")
    cluster.produce("t", [("a", "1"), ("b", "2"), ("a", "3")], headers=["h=v"])
    got = cluster.consume("t")
    assert sorted((k, v, h) for k, v, _, h in got) == [("a", "1", "h=v"), ("a", "3", "h=v"),
                                                       ("b", "2", "h=v")]
    # A key's records share a partition (kcat's partitioner hashes the key).
    assert len({p for k, _, p, _ in got if k == "a"}) == 1


def test_first_record_of_each_key_whole(make_cluster, tmp_path):
    cluster = make_cluster("in:3", "out:3")
    records = [("k%d" % (i % 50), "v%d" % i) for i in range(400)]
    cluster.produce("in", records, headers=["source=test", "n=1"])
    code, err = run_until_drained(
        cluster, stage_args(cluster, "g", ["-f", str(tmp_path / "seen.rbf"), "-n", "1000"],
                            "--key", "kafka-key"), len(records))
    assert code == 0, err
    assert "stopped by SIGTERM" in err
    inputs = {(k, v): p for k, v, p, _ in cluster.consume("in")}
    out = cluster.consume("out")
    firsts = {}
    for k, v in records:
        firsts.setdefault(k, v)
    assert sorted((k, v) for k, v, _, _ in out) == sorted(firsts.items())
    for k, v, p, h in out:
        assert p == inputs[(k, v)], "same partition number as the input record"
        assert h == "source=test,n=1"
    # Restarted in the same group: the offsets were committed, nothing is read again.
    code, err = run_until_drained(
        cluster, stage_args(cluster, "g", ["-f", str(tmp_path / "seen.rbf")], "--key",
                            "kafka-key"), 0, min_seconds=3)
    assert code == 0, err
    assert summary_count(err, "read") == 0
    assert len(cluster.consume("out")) == len(firsts)


def test_item_from_the_value(make_cluster, tmp_path):
    cluster = make_cluster("in:2", "out:2")
    records = [("k%d" % i, json.dumps({"event": {"id": i % 30}, "n": i})) for i in range(200)]
    records.append(("bad", "not json"))
    cluster.produce("in", records)
    seen = ["-f", str(tmp_path / "seen.rbf"), "-n", "1000"]
    code, err = run_until_drained(
        cluster, stage_args(cluster, "g", seen, "--json-key", "event.id", "--on-bad-record",
                            "skip"), len(records))
    assert code == 0, err
    out = cluster.consume("out")
    ids = collections.Counter(json.loads(v)["event"]["id"] for _, v, _, _ in out)
    assert sorted(ids) == list(range(30)) and set(ids.values()) == {1}
    assert summary_count(err, "without key skipped") == 1


def test_a_record_without_a_key_stops_the_stage_after_the_records_before_it(make_cluster,
                                                                             tmp_path):
    cluster = make_cluster("in:1", "out:1")
    cluster.produce("in", [("k", "a\t1"), ("k", "b\t2"), ("k", "no-tab"), ("k", "c\t3")])
    args = stage_args(cluster, "g", ["-f", str(tmp_path / "seen.rbf"), "-n", "100"],
                      "--key-field", "2")
    stage = subprocess.run(args, capture_output=True, text=True, timeout=120)
    assert stage.returncode == 2, stage.stderr
    assert "record 2 of partition 0" in stage.stderr
    assert sorted(v for _, v, _, _ in cluster.consume("out")) == ["a\t1", "b\t2"]
    # Run again with pass: the bad record and the one after it, each once.
    code, err = run_until_drained(cluster, args + ["--on-bad-record", "pass"], 2)
    assert code == 0, err
    assert sorted(v for _, v, _, _ in cluster.consume("out")) == ["a\t1", "b\t2", "c\t3",
                                                                  "no-tab"]


def test_broker_errors(make_cluster, tmp_path):
    cluster = make_cluster("in:1", "out:1")
    seen = ["-f", str(tmp_path / "seen.rbf"), "-n", "100"]
    r = subprocess.run(stage_args(cluster, "g", seen, "--timeout", "5s", src="missing"),
                       capture_output=True, text=True, timeout=120)
    assert r.returncode in (2, 3) and "topic 'missing'" in r.stderr, r.stderr
    r = subprocess.run([redbloom_cli(), "dedup", "--from", "kafka://127.0.0.1:1/in", "--to",
                        "kafka://127.0.0.1:1/out", "--group", "g", *seen, "--timeout", "2s"],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 3 and "cannot reach the Kafka brokers 127.0.0.1:1" in r.stderr, \
        r.stderr
    r = subprocess.run(stage_args(cluster, "g", seen, "-X", "no.such.property=1"),
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 2 and "no.such.property" in r.stderr, r.stderr


def test_output_partition_without_leader_commits_nothing_past_what_was_produced(make_cluster,
                                                                               tmp_path):
    cluster = make_cluster("in:1", "out:1")
    records = [("k%d" % i, "v%d" % i) for i in range(100)]
    cluster.produce("in", records)
    assert cluster.command("leader out 0 -1") == "ok"
    seen = ["-f", str(tmp_path / "seen.rbf"), "-n", "1000"]
    r = subprocess.run(stage_args(cluster, "g", seen, "--key", "kafka-key", "--timeout", "3s",
                                  "-X", "message.timeout.ms=2000"),
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 3, r.stderr
    assert "did not acknowledge" in r.stderr and "not committed" in r.stderr, r.stderr
    assert cluster.command("leader out 0 1") == "ok"
    # The round's decisions were kept: the restarted stage produces them, none taken for a
    # repeat of itself.
    code, err = run_until_drained(cluster, stage_args(cluster, "g", seen, "--key", "kafka-key"),
                                  len(records))
    assert code == 0, err
    assert summary_count(err, "replayed from decision records") == len(records)
    assert sorted(k for k, _, _, _ in cluster.consume("out")) == sorted(k for k, _ in records)
