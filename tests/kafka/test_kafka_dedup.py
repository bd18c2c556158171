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
from redis_server import RedisServer, free_port, wait_until  # noqa: E402


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
        directory = tmp_path / ("redis%d" % len(made))
        directory.mkdir()
        s = RedisServer(directory, *options)
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
    STARTED.append(stage)
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
                            "--key", "kafka-key", *FAST_GROUP), len(records))
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
    # Restarted in the same group: the offsets were committed, nothing is read again (once it
    # holds the partitions: without them it would read nothing whatever was committed).
    stage = Stage(stage_args(cluster, "g", ["-f", str(tmp_path / "seen.rbf")], "--key",
                             "kafka-key", *FAST_GROUP))
    assert stage.wait_for(lambda line: caught_up(line, 3), "the restarted stage's partitions")
    code, err = stage.stop()
    assert code == 0, err
    assert summary_count(err, "read") == 0
    assert len(cluster.consume("out")) == len(firsts)


def test_a_filter_with_an_exact_set_gets_the_stages_items(make_cluster, tmp_path):
    """diff --exact checks the filter's answers against its exact set: an item the stage added
    to the filter only would be reported as an orphan."""
    cluster = make_cluster("in:2", "out:2")
    records = [("k%d" % (i % 50), "v%d" % i) for i in range(200)]
    cluster.produce("in", records)
    seen = str(tmp_path / "seen.rbf")
    made = subprocess.run([redbloom_cli(), "create", "-f", seen, "-n", "1000", "--exact", "-q"],
                          capture_output=True, text=True, timeout=60)
    assert made.returncode == 0, made.stderr
    code, err = run_until_drained(
        cluster, stage_args(cluster, "g", ["-f", seen], "--key", "kafka-key"), len(records))
    assert code == 0, err
    checked = "".join("k%d\n" % i for i in range(50)) + "".join("x%d\n" % i for i in range(10))
    diff = subprocess.run([redbloom_cli(), "diff", "-f", seen, "--exact", "-q"], input=checked,
                          capture_output=True, text=True, timeout=60)
    assert diff.returncode == 0, diff.stderr
    assert sorted(diff.stdout.split()) == sorted("x%d" % i for i in range(10))


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
                      "--key-field", "2", *FAST_GROUP)
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


def test_an_output_with_fewer_partitions_takes_records_by_key(make_cluster, tmp_path):
    cluster = make_cluster("in:3", "out:1")
    records = [("k%d" % (i % 40), "v%d" % i) for i in range(300)]
    cluster.produce("in", records)
    seen = ["-f", str(tmp_path / "seen.rbf"), "-n", "1000"]
    r = subprocess.run(stage_args(cluster, "g", seen, "--key", "kafka-key", *FAST_GROUP),
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 2, r.stderr
    assert "has 1 partitions, fewer than the input's 3" in r.stderr and \
        "--to-partition key" in r.stderr, r.stderr
    code, err = run_until_drained(cluster, stage_args(cluster, "g", seen, "--key", "kafka-key",
                                                      "--to-partition", "key", *FAST_GROUP),
                                  len(records))
    assert code == 0, err
    out = cluster.consume("out")
    assert sorted(k for k, _, _, _ in out) == sorted({k for k, _ in records})
    assert {p for _, _, p, _ in out} == {0}


def test_output_partition_without_leader_commits_nothing_past_what_was_produced(make_cluster,
                                                                               tmp_path):
    cluster = make_cluster("in:1", "out:1")
    records = [("k%d" % i, "v%d" % i) for i in range(100)]
    cluster.produce("in", records)
    assert cluster.command("leader out 0 -1") == "ok"
    seen = ["-f", str(tmp_path / "seen.rbf"), "-n", "1000"]
    r = subprocess.run(stage_args(cluster, "g", seen, "--key", "kafka-key", "--timeout", "3s",
                                  "-X", "message.timeout.ms=2000", *FAST_GROUP),
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 3, r.stderr
    assert "did not acknowledge" in r.stderr and "not committed" in r.stderr, r.stderr
    assert cluster.command("leader out 0 1") == "ok"
    # The round's decisions were kept: the restarted stage produces them, none taken for a
    # repeat of itself.
    code, err = run_until_drained(cluster, stage_args(cluster, "g", seen, "--key", "kafka-key",
                                                      *FAST_GROUP), len(records))
    assert code == 0, err
    # (The first run decided its first round, all or part of the records as the fetches
    # brought them, before its delivery failed.)
    assert 1 <= summary_count(err, "replayed from decision records") <= len(records)
    assert sorted(k for k, _, _, _ in cluster.consume("out")) == sorted(k for k, _ in records)


def test_a_replayed_decision_record_sets_its_items_bits(make_cluster, tmp_path):
    # A crash after the decision record was stored and before its bits were set: the restart
    # replays the record and sets the bits, so the items' later repeats are duplicates.
    cluster = make_cluster("in:1", "out:1")
    records = [("k%d" % i, "v%d" % i) for i in range(100)]
    cluster.produce("in", records + [(k, "again-" + v) for k, v in records])
    decisions = tmp_path / "seen.rbf.decisions"
    decisions.mkdir()
    (decisions / "kafka%2Fg%2Fin%2F0").write_bytes(
        b"redbloom-kafka-decisions 1 0 99\n" + b"\xff" * 12 + b"\x0f")
    # One round per 100 records: the repeats are tested in a round after the replayed one.
    code, err = run_until_drained(
        cluster, stage_args(cluster, "g", ["-f", str(tmp_path / "seen.rbf"), "-n", "1000"],
                            "--key", "kafka-key", "--batch", "100", *FAST_GROUP),
        2 * len(records))
    assert code == 0, err
    assert summary_count(err, "replayed from decision records") == len(records), err
    assert sorted(v for _, v, _, _ in cluster.consume("out")) == sorted(v for _, v in records)


RECORDS = 100_000
REPEATS = 0.30
KILLS = 10
BATCH = 2000
# A killed member leaves the group when its session expires: after 3 s, not librdkafka's
# default 45 s; a restart waits that long, plus the mock coordinator's ~2 s join delay.
# (Sessions of 1.5 s, or a shorter max.poll.interval.ms, left the mock cluster's group
# coordinator holding the next member's join for minutes.)
FAST_GROUP = ["-X", "session.timeout.ms=3000", "-X", "heartbeat.interval.ms=300"]


def make_events(seed, count=RECORDS):
    """`count` records, REPEATS of them repeats of an earlier key: [(key, value)]."""
    rng = random.Random(seed)
    keys, events = [], []
    for n in range(count):
        if keys and rng.random() < REPEATS:
            key = rng.choice(keys)
        else:
            key = "evt-%d-%08x" % (len(keys), rng.getrandbits(32))
            keys.append(key)
        events.append((key, "n=%d" % n))
    return events


def caught_up(line, partitions):
    lags = re.findall(r"p(\d+)=(\d+|\?)", line.split(" lag", 1)[-1])
    return len(lags) == partitions and all(lag == "0" for _, lag in lags)


STARTED = []  # stage processes, killed after each test whatever its outcome


@pytest.fixture(autouse=True)
def no_stage_left():
    yield
    while STARTED:
        process = STARTED.pop()
        if process.poll() is None:
            process.kill()
        process.wait(timeout=60)


class Stage:
    """One stage process, its --progress lines read as they come."""

    def __init__(self, args):
        self.process = subprocess.Popen([*args, "--progress", "50ms"], stderr=subprocess.PIPE,
                                        text=True)
        STARTED.append(self.process)
        self.lines = []

    def wait_for(self, condition, what, timeout=300):
        """Reads progress lines until condition(line) holds; False if the stage exited first."""
        deadline = time.monotonic() + timeout
        while True:
            line = self.process.stderr.readline()
            if not line:
                return False
            self.lines.append(line)
            if condition(line):
                return True
            assert time.monotonic() < deadline, "timed out waiting for %s" % what

    def read_at_least(self, count):
        return lambda line: (m := re.search(r"s, read (\d+)", line)) and int(m.group(1)) >= count

    def kill(self):
        self.process.send_signal(signal.SIGKILL)
        self.process.wait(timeout=60)

    def stop(self):
        self.process.send_signal(signal.SIGTERM)
        rest = self.process.communicate(timeout=120)[1]
        return self.process.returncode, "".join(self.lines) + rest


def check_output(cluster, events, kills, what, batch=BATCH):
    """Every distinct key in the output at least once; repeats within the bound: at most the
    records of one round (`batch`) for each of `kills` (a kill, or a member's round whose
    commit a rebalance refused). Returns (lost, repeats)."""
    out = collections.Counter(k for k, _, _, _ in cluster.consume("out"))
    distinct = set(k for k, _ in events)
    lost = len(distinct - set(out))
    repeats = sum(out.values()) - len(out)
    print("%s: %d records, %d distinct keys, %d kills: lost %d, repeats %d (bound %d)" % (
        what, len(events), len(distinct), kills, lost, repeats, kills * batch))
    assert set(out) <= distinct
    assert lost == 0
    assert repeats <= kills * batch
    return lost, repeats


def filter_options(kind, tmp_path, redis_server):
    if kind == "file":
        return ["-f", str(tmp_path / "seen.rbf"), "-n", "300000", "-p", "1e-9"]
    server = redis_server("--loadmodule", module_path()) if kind == "redis_module" \
        else redis_server()
    return ["--redis", "%s#seen" % server.url, "-n", "300000", "-p", "1e-9"]


@pytest.mark.parametrize("kind", ["file", "redis", "redis_module"])
def test_killed_at_seeded_moments_loses_nothing(make_cluster, tmp_path, redis_server, kind):
    cluster = make_cluster("in:3", "out:3")
    seed = 20261128 + ["file", "redis", "redis_module"].index(kind)
    rng = random.Random(seed)
    events = make_events(seed)
    cluster.produce("in", events)
    args = stage_args(cluster, "g", filter_options(kind, tmp_path, redis_server), "--key",
                      "kafka-key", "--batch", str(BATCH), *FAST_GROUP)
    for run in range(KILLS):
        stage = Stage(args)
        # A moment in this run, the runs taking the phases in turn: before any record (joining
        # the group, reading the decision records), in its first rounds (replaying the killed
        # run's round), or later; a seeded delay after a seeded number of records was read (a
        # progress line comes between rounds; the delay lands the kill anywhere in the next
        # round, between its test and its commit). A run that finds nothing left to read is
        # killed when it has caught up.
        threshold = [0, rng.randrange(1, 3 * BATCH), rng.randrange(3 * BATCH, 8 * BATCH)][run % 3]
        reached = stage.read_at_least(threshold)
        assert stage.wait_for(lambda line: reached(line) or caught_up(line, 3),
                              "run %d to read" % run), \
            "".join(stage.lines) + stage.process.stderr.read()
        time.sleep(rng.uniform(0, 0.05))
        stage.kill()
    stage = Stage(args)
    assert stage.wait_for(lambda line: caught_up(line, 3), "the last run to catch up"), \
        "".join(stage.lines) + stage.process.stderr.read()
    code, err = stage.stop()
    assert code == 0, err
    check_output(cluster, events, KILLS, kind)


def test_two_stages_in_one_group_with_a_kill_and_rebalances(make_cluster, tmp_path,
                                                            redis_server):
    cluster = make_cluster("in:6", "out:6")
    events = make_events(7, count=60_000)
    cluster.produce("in", events)
    server = redis_server()
    args = stage_args(cluster, "g", ["--redis", "%s#seen" % server.url, "-n", "100000", "-p",
                                     "1e-9"], "--key", "kafka-key", "--batch", "500", *FAST_GROUP)
    a = Stage(args)
    assert a.wait_for(a.read_at_least(2000), "stage a to read")
    b = Stage(args)  # joins: the group rebalances while a works
    assert b.wait_for(b.read_at_least(2000), "stage b to read, after the rebalance")
    a.kill()  # its partitions go to b when its session expires
    assert b.wait_for(lambda line: caught_up(line, 6), "stage b to take every partition over")
    c = Stage(args)  # one more rebalance, with nothing left to read
    assert c.wait_for(lambda line: " lag p" in line, "stage c to get partitions")
    for s in (b, c):
        code, err = s.stop()
        assert code == 0, err
    # One kill and three changes of members (b joins, a dies, c joins): each may repeat one
    # round of each of the two members that hold partitions.
    check_output(cluster, events, 1 + 3 * 2, "two stages", batch=500)


def partitions_held(line):
    return re.findall(r" p(\d+)=", line.split(" lag", 1)[-1]) if " lag p" in line else []


def test_two_stages_meeting_one_item_in_two_partitions_produce_it_once(make_cluster, tmp_path):
    """Every value in both partitions, each partition held by one of two stages, so that they
    meet the same items at about the same moment: they decide in turns (the filter's round
    lock), so each finds the other's items added already when it tests them, none between its
    test and its add, and each value goes out once (no kill, no rebalance while they work).
    A file filter: the lock on Redis is the decision records' own tests'."""
    cluster = make_cluster("in:2", "out:2")
    kind = "file"
    where = ["-f", str(tmp_path / "seen.rbf")]
    # Sessions longer than FAST_GROUP's: no member is killed here, and a member starved for a
    # few seconds on a loaded machine must not be taken out of the group mid-test.
    args = stage_args(cluster, "g", [*where, "-n", "100000", "-p", "1e-9"], "--batch", "50",
                      "-X", "session.timeout.ms=8000", "-X", "heartbeat.interval.ms=500")
    a = Stage(args)
    assert a.wait_for(lambda line: len(partitions_held(line)) == 2, "stage a to hold both")
    b = Stage(args)
    assert b.wait_for(lambda line: len(partitions_held(line)) == 1, "stage b to get one")
    assert a.wait_for(lambda line: len(partitions_held(line)) == 1, "stage a to keep one")
    values = ["value-%06d" % i for i in range(10000)]
    producers = [cluster.start_producing("in", [("k%d" % p, v) for v in values], partition=p)
                 for p in (0, 1)]
    for made in producers:
        assert made.wait(timeout=300) == 0, made.stderr.read()
    for s in (a, b):
        assert s.wait_for(lambda line: caught_up(line, 1) and
                          s.read_at_least(len(values))(line), "both stages to catch up")
    taken = 0
    for s in (a, b):
        code, err = s.stop()
        assert code == 0, err
        assert summary_count(err, "first seen") + summary_count(err, "duplicates") == len(values)
        taken += summary_count(err, "duplicates added meanwhile by another stage")
    out = collections.Counter(v for _, v, _, _ in cluster.consume("out"))
    print("%s: %d values in two partitions, %d taken by the other stage after their test" % (
        kind, len(values), taken))
    assert set(out) == set(values)
    assert max(out.values()) == 1
    # Without the lock, about a tenth of the values were added by the other stage between a
    # stage's test and its add.
    assert taken == 0


def test_windowed_filter(make_cluster, tmp_path, redis_server):
    cluster = make_cluster("in:2", "out:2")
    events = make_events(11, count=5000)
    cluster.produce("in", events)
    server = redis_server()
    code, err = run_until_drained(
        cluster, stage_args(cluster, "g", ["--redis", "%s#seen" % server.url, "-n", "10000",
                                           "-p", "1e-9", "--window", "1h"], "--key",
                            "kafka-key"),
        len(events))
    assert code == 0, err
    check_output(cluster, events, 0, "windowed")
    # Its decision records expire with the window.
    client = server.client()
    keys = client.keys("seen:decisions:*")
    assert len(keys) == 2
    for key in keys:
        assert 0 < client.pttl(key) <= 3_600_000
    # drop takes them with the filter: a new filter of that name replays nothing old.
    dropped = subprocess.run([redbloom_cli(), "drop", "--redis", "%s#seen" % server.url,
                              "--json"], capture_output=True, text=True, timeout=60)
    assert dropped.returncode == 0, dropped.stderr
    assert json.loads(dropped.stdout)["decision_records"] == 2
    assert client.keys("seen*") == []
    # And in a file: the same output from a windowed filter file.
    cluster2 = make_cluster("in:2", "out:2")
    cluster2.produce("in", events)
    code, err = run_until_drained(
        cluster2, stage_args(cluster2, "g", ["-f", str(tmp_path / "w.rbf"), "-n", "10000",
                                             "-p", "1e-9", "--window", "1h"], "--key",
                             "kafka-key"),
        len(events))
    assert code == 0, err
    check_output(cluster2, events, 0, "windowed file")
    records = [p for p in (tmp_path / "w.rbf.decisions").iterdir() if p.name != ".lock"]
    assert len(records) == 2
    dropped = subprocess.run([redbloom_cli(), "drop", "-f", str(tmp_path / "w.rbf"), "--json"],
                             capture_output=True, text=True, timeout=60)
    assert dropped.returncode == 0, dropped.stderr
    assert json.loads(dropped.stdout)["decision_records"] == 2
    assert not (tmp_path / "w.rbf.decisions").exists()


@pytest.mark.parametrize("kind", ["file", "redis"])
def test_growing_filter(make_cluster, tmp_path, redis_server, kind):
    """A filter that grows links when full (--growth): sized for 500 items, it takes 3,500."""
    cluster = make_cluster("in:2", "out:2")
    events = make_events(23, count=5000)
    cluster.produce("in", events)
    where = ["-f", str(tmp_path / "g.rbf")] if kind == "file" else \
        ["--redis", "%s#seen" % redis_server().url]
    code, err = run_until_drained(
        cluster, stage_args(cluster, "g", [*where, "-n", "500", "-p", "1e-9", "--growth", "2"],
                            "--key", "kafka-key", *FAST_GROUP), len(events))
    assert code == 0, err
    check_output(cluster, events, 0, "growing " + kind)
    info = subprocess.run([redbloom_cli(), "info", *where, "--json"], capture_output=True,
                          text=True, timeout=60)
    assert info.returncode == 0, info.stderr
    assert len(json.loads(info.stdout)["stream"]["links"]) > 1, info.stdout


def test_transactional_id(make_cluster, tmp_path):
    """--transactional-id: each round's records and offsets in one Kafka transaction. The mock
    cluster (librdkafka 2.0) accepts the transactional calls but models neither what they are
    for: it stores no offsets sent to a transaction (a restarted member reads the partitions
    from their start) and writes no commit or abort markers (a read_committed consumer also
    sees an aborted transaction's records). So this tests that the stage runs its rounds as
    transactions and produces each item once; exactly once across a crash, for read_committed
    consumers, needs a real broker and is not tested here."""
    cluster = make_cluster("in:3", "out:3")
    events = make_events(17, count=5000)
    cluster.produce("in", events)
    args = stage_args(cluster, "g", ["-f", str(tmp_path / "seen.rbf"), "-n", "10000", "-p",
                                     "1e-9"], "--key", "kafka-key", "--batch", "500",
                      "--transactional-id", "dedup-1", *FAST_GROUP)
    code, err = run_until_drained(cluster, args, len(events))
    assert code == 0, err
    assert "transactions aborted" not in err
    lost, repeats = check_output(cluster, events, 0, "transactional")
    assert repeats == 0
    # A producer of transactions refuses to produce outside one: a stage that did not begin
    # and commit each round's transaction would have failed above.


def test_transactional_id_an_aborted_round_is_read_again(make_cluster, tmp_path):
    """The brokers refuse a round's offsets (GROUP_AUTHORIZATION_FAILED to TxnOffsetCommit,
    which librdkafka says needs an abort): the stage aborts that transaction and reads the round
    again, replayed from its decision records. The mock writes no abort markers, so the aborted
    round's records stay visible to kcat: at most one round repeats here, none at a broker."""
    cluster = make_cluster("in:1", "out:1")
    events = make_events(19, count=3000)
    cluster.produce("in", events)
    assert cluster.command("fail 28 30") == "ok"
    args = stage_args(cluster, "g", ["-f", str(tmp_path / "seen.rbf"), "-n", "10000", "-p",
                                     "1e-9"], "--key", "kafka-key", "--batch", "500",
                      "--transactional-id", "dedup-1", *FAST_GROUP)
    stage = Stage(args)
    assert stage.wait_for(lambda line: caught_up(line, 1) and stage.read_at_least(len(events))(
        line), "the stage to catch up"), "".join(stage.lines) + stage.process.stderr.read()
    code, err = stage.stop()
    assert code == 0, err
    assert summary_count(err, "transactions aborted") == 1, err
    assert summary_count(err, "replayed from decision records") > 0, err
    check_output(cluster, events, 1, "transaction aborted", batch=500)


def start_redis_cluster(redis_server, masters=3):
    """A Redis Cluster of `masters` masters on loopback: its redis+cluster:// seeds."""
    nodes = [redis_server("--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
                          "--cluster-node-timeout", "5000", "--cluster-port", str(free_port()))
             for _ in range(masters)]
    clients = [n.client() for n in nodes]
    for m, c in enumerate(clients):
        c.execute_command("CLUSTER", "ADDSLOTSRANGE", 16384 * m // masters,
                          16384 * (m + 1) // masters - 1)
        c.execute_command("CLUSTER", "SET-CONFIG-EPOCH", m + 1)
    for n in nodes[1:]:
        bus = int(n.client().config_get("cluster-port")["cluster-port"])
        clients[0].execute_command("CLUSTER", "MEET", "127.0.0.1", n.port, bus)
    wait_until(lambda: all(b"cluster_state:ok" in c.execute_command("CLUSTER", "INFO")
                           for c in clients), "the cluster to be up")
    return "redis+cluster://" + ",".join("127.0.0.1:%d" % n.port for n in nodes), clients


@pytest.mark.parametrize("window", [[], ["--window", "1h"]], ids=["plain", "windowed"])
def test_filter_in_a_redis_cluster(make_cluster, redis_server, window):
    cluster = make_cluster("in:3", "out:3")
    events = make_events(13, count=5000)
    cluster.produce("in", events)
    seeds, clients = start_redis_cluster(redis_server)
    where = "%s#seen" % seeds
    code, err = run_until_drained(
        cluster, stage_args(cluster, "g", ["--redis", where, "-n", "10000", "-p", "1e-9",
                                           *window], "--key", "kafka-key"), len(events))
    assert code == 0, err
    check_output(cluster, events, 0, "cluster" + (" windowed" if window else ""))
    # The partitions' decision records, each on the node serving its key's slot.
    records = [k for c in clients for k in c.keys("seen:decisions:*")]
    assert sorted(records) == [b"seen:decisions:kafka/g/in/%d" % p for p in range(3)]
    dropped = subprocess.run([redbloom_cli(), "drop", "--redis", where, "--json"],
                             capture_output=True, text=True, timeout=60)
    assert dropped.returncode == 0, dropped.stderr
    assert json.loads(dropped.stdout)["decision_records"] == 3
    assert [k for c in clients for k in c.keys("seen*")] == []


def scrape(url):
    import urllib.request
    with urllib.request.urlopen(url, timeout=10) as reply:
        assert reply.headers["Content-Type"].startswith("text/plain")
        page = reply.read().decode()
    values = {}
    for line in page.splitlines():
        if line and not line.startswith("#"):
            name, value = line.rsplit(" ", 1)
            values[name] = float(value)
    return values


def test_metrics_endpoint_scraped_during_a_run(make_cluster, tmp_path):
    cluster = make_cluster("in:3", "out:3")
    events = make_events(5, count=5000)
    cluster.produce("in", events)
    stage = Stage(stage_args(cluster, "g", ["-f", str(tmp_path / "seen.rbf"), "-n", "10000"],
                             "--key", "kafka-key", "--metrics", "127.0.0.1:0"))
    assert stage.wait_for(lambda line: "metrics on http://" in line, "the metrics address")
    url = re.search(r"(http://\S+)", stage.lines[-1]).group(1)
    early = scrape(url)  # answered from the start, before any record
    assert early["redbloom_records_in_total"] == 0
    assert stage.wait_for(lambda line: caught_up(line, 3), "the stage to catch up")
    values = scrape(url)
    distinct = len(set(k for k, _ in events))
    assert values["redbloom_records_in_total"] == len(events)
    assert values["redbloom_records_out_total"] == distinct
    assert values["redbloom_duplicates_total"] == len(events) - distinct
    for p in range(3):
        assert values['redbloom_partition_lag{topic="in",partition="%d"}' % p] == 0
    assert values["redbloom_filter_estimated_items"] > 0
    # The filter's estimate is refreshed every 10 s.
    assert stage.wait_for(lambda line: abs(scrape(url)["redbloom_filter_estimated_items"] -
                                           distinct) < 0.1 * distinct,
                          "the filter's estimate to be refreshed", timeout=60)
    assert 0 < scrape(url)["redbloom_filter_estimated_false_positive_rate"] < 0.01
    assert values["redbloom_errors_total"] == 0
    code, err = stage.stop()
    assert code == 0, err
