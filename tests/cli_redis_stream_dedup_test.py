"""redbloom dedup --from redis-stream://...: a stage from one Redis stream to another, killed
with SIGKILL and restarted, leaves each key in the output exactly once; on one server and on a
Cluster of 3 masters, with and without redbloom's module. Servers are started here on free
loopback ports (tests/support/redis_server.py) and stopped by pid.

REDBLOOM_CLI names the built command, REDBLOOM_MODULE the built redbloom.so (ctest sets both)."""

import collections
import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent / "support"))
from built_programs import redbloom_cli  # noqa: E402
from redis_server import RedisServer, free_port, wait_until  # noqa: E402

ENTRIES = 100_000
REPEATS = 0.30
KILLS = 6
CAPACITY = "200000"
RATE = "1e-9"  # expected false positives among 70,000 keys: ~1e-4


def module_path():
    path = os.environ.get("REDBLOOM_MODULE")
    if not path or not os.path.isfile(path):
        pytest.fail("REDBLOOM_MODULE must name the built redbloom.so (ctest sets it), got %r" % path)
    return os.path.abspath(path)


class Setup:
    """One server or a Cluster; `node` is the client of the master holding the streams' slot."""

    def __init__(self, tmp_path, cluster, module):
        self.tmp = tmp_path
        self.servers = []
        extra = ("--loadmodule", module_path()) if module else ()
        if not cluster:
            self.servers.append(RedisServer(self._dir("s0"), *extra))
            self.uri = "redis://127.0.0.1:%d" % self.servers[0].port
            self.stream_uri = "redis-stream://127.0.0.1:%d" % self.servers[0].port
            self.tag = ""
            return
        for m in range(3):
            self.servers.append(RedisServer(
                self._dir("n%d" % m), "--cluster-enabled", "yes", "--cluster-config-file",
                "nodes.conf", "--cluster-node-timeout", "5000", "--cluster-port",
                str(free_port()), *extra))
        clients = [s.client() for s in self.servers]
        for m, c in enumerate(clients):
            c.execute_command("CLUSTER", "ADDSLOTSRANGE", 16384 * m // 3, 16384 * (m + 1) // 3 - 1)
            c.execute_command("CLUSTER", "SET-CONFIG-EPOCH", m + 1)
        for s in self.servers[1:]:
            bus = int(s.client().config_get("cluster-port")["cluster-port"])
            clients[0].execute_command("CLUSTER", "MEET", "127.0.0.1", s.port, bus)

        def up():
            return all(b"cluster_state:ok" in c.execute_command("CLUSTER", "INFO") for c in clients)
        wait_until(up, "the cluster to be up")
        seeds = ",".join("127.0.0.1:%d" % s.port for s in self.servers)
        self.uri = "redis+cluster://" + seeds
        self.stream_uri = "redis-stream+cluster://" + seeds
        self.tag = None  # the filter's, once it exists (filter_tag)

    def _dir(self, name):
        d = self.tmp / name
        d.mkdir(parents=True)
        return d

    def client_for(self, key):
        """The client of the master serving key's slot."""
        if len(self.servers) == 1:
            return self.servers[0].client()
        slot = self.servers[0].client().execute_command("CLUSTER", "KEYSLOT", key)
        return self.servers[slot * 3 // 16384].client()

    def filter_tag(self, name):
        """The hash tag of the filter's one partition key, NAME:bits:{NAME:0[:salt]}."""
        meta = self.client_for(name).hgetall(name)
        salts = meta.get(b"tag_salts", b"").decode()
        salt = int(salts.split(",")[0]) if salts else 0
        return "{%s:0%s}" % (name, ":%d" % salt if salt else "")

    def kill(self):
        for s in self.servers:
            s.kill()


@pytest.fixture
def make_setup(tmp_path):
    made = []

    def make(cluster=False, module=False):
        s = Setup(tmp_path / ("setup%d" % len(made)), cluster, module)
        made.append(s)
        return s

    yield make
    for s in made:
        s.kill()


def run_cli(*args, stdin=None):
    return subprocess.run([redbloom_cli(), *args], input=stdin, capture_output=True, timeout=600)


def stage_command(setup, instream, outstream, filter_name, *extra):
    return [redbloom_cli(), "dedup", "--from", "%s#%s" % (setup.stream_uri, instream),
            "--to", "%s#%s" % (setup.stream_uri, outstream), "--group", "g",
            "--key-field", "id", "--redis", "%s#%s" % (setup.uri, filter_name), *extra]


def group_info(client, stream):
    for g in client.xinfo_groups(stream):
        if g["name"] == b"g":
            return g
    return None


def make_events(seed):
    """ENTRIES events, REPEATS of them repeats of an earlier key; [(key, n)]."""
    rng = random.Random(seed)
    keys, events = [], []
    for n in range(ENTRIES):
        if keys and rng.random() < REPEATS:
            key = rng.choice(keys)
        else:
            key = "evt-%d-%08x" % (len(keys), rng.getrandbits(32))
            keys.append(key)
        events.append((key, n))
    return events


def fill(client, stream, events):
    pipe = client.pipeline(transaction=False)
    for i, (key, n) in enumerate(events):
        pipe.xadd(stream, {"id": key, "n": n, "payload": "x" * (n % 17)})
        if i % 1000 == 999:
            pipe.execute()
    pipe.execute()


def proven_false_positive(key, distinct, tmp_path, layout=()):
    """True if the filter of every other key holds `key`: only then can its first copy have
    been taken for a repeat."""
    others = "\n".join(k for k in distinct if k != key) + "\n"
    path = str(tmp_path / "others.rbf")
    if os.path.exists(path):
        os.unlink(path)
    r = run_cli("add", "-f", path, "-n", CAPACITY, "-p", RATE, "-q", *layout,
                stdin=others.encode())
    assert r.returncode == 0, r.stderr
    r = run_cli("exists", "-f", path, "-c", stdin=(key + "\n").encode())
    return r.stdout.strip() == b"1"


def kill_and_restart(setup, instream, outstream, name, total, thresholds, batch="200"):
    """Runs the stage, SIGKILLed once the group has read each threshold, then to the end;
    half the restarts keep the consumer name (its own pending entries come back), half take
    the default, a new name (the dead consumer's entries are taken over). Returns the last
    run's summary."""
    node = setup.client_for(instream)
    for run, threshold in enumerate(thresholds):
        extra = ["--batch", batch, "--min-idle", "0", "-q"]
        extra += ["--consumer", "stage"] if run % 2 == 0 else []
        if run == 0:
            extra.append("--create-group")
        stage = subprocess.Popen(stage_command(setup, instream, outstream, name, *extra),
                                 stderr=subprocess.PIPE)

        def reached():
            g = group_info(node, instream)
            read = g["entries-read"] if g and g["entries-read"] is not None else 0
            return read >= threshold or stage.poll() is not None
        wait_until(reached, "the stage to read %d entries" % threshold, timeout=300,
                   interval=0.002)
        assert stage.poll() is None, stage.stderr.read().decode()
        stage.send_signal(signal.SIGKILL)
        stage.wait()
        stage.stderr.close()
    stage = subprocess.Popen(stage_command(setup, instream, outstream, name, "--batch", batch,
                                           "--min-idle", "0", "--json"),
                             stderr=subprocess.PIPE)

    def drained():
        g = group_info(node, instream)
        return (g["entries-read"] == total and g["pending"] == 0) or stage.poll() is not None
    wait_until(drained, "the stage to handle every entry", timeout=300)
    assert stage.poll() is None, stage.stderr.read().decode()
    stage.send_signal(signal.SIGTERM)
    _, err = stage.communicate(timeout=120)
    assert stage.returncode == 0, err.decode()
    assert group_info(node, instream)["pending"] == 0
    return json.loads(err.decode().strip().splitlines()[-1])


@pytest.mark.parametrize("cluster", [False, True], ids=["one_server", "cluster"])
@pytest.mark.parametrize("module", [False, True], ids=["stock", "module"])
def test_killed_and_restarted_each_key_once(make_setup, tmp_path, cluster, module):
    setup = make_setup(cluster=cluster, module=module)
    name = "seen"
    # Both layouts: a stock server's script sets a classic item's bits one by one and reads
    # and writes a blocked item's line whole.
    layout = ["--layout", "blocked"] if cluster else ["--layout", "classic"]
    r = run_cli("create", "--redis", "%s#%s" % (setup.uri, name), "-n", CAPACITY, "-p", RATE,
                *layout)
    assert r.returncode == 0, r.stderr
    tag = setup.filter_tag(name) if cluster else ""
    instream, outstream = "clicks" + tag, "first" + tag
    node = setup.client_for(instream)
    seed = 20261126 + 2 * cluster + module
    rng = random.Random(seed)
    events = make_events(seed)
    fill(node, instream, events)
    distinct = list(dict.fromkeys(k for k, _ in events))
    first_n = {}
    for key, n in events:
        first_n.setdefault(key, n)

    thresholds = sorted(rng.sample(range(2000, ENTRIES - 2000), KILLS))
    summary = kill_and_restart(setup, instream, outstream, name, ENTRIES, thresholds)
    assert summary["stopped_by"] == "SIGTERM"

    out = node.xrange(outstream)
    counts = collections.Counter(fields[b"id"].decode() for _, fields in out)
    twice = [k for k, c in counts.items() if c > 1]
    assert twice == [], "keys in the output more than once: %s" % twice[:10]
    missing = [k for k in distinct if k not in counts]
    unexplained = [k for k in missing
                   if not proven_false_positive(k, distinct, tmp_path, layout)]
    assert unexplained == [], "keys missing from the output: %s" % unexplained[:10]
    assert set(counts) <= set(distinct)
    print("%s: %d entries, %d distinct keys, %d kills; output %d, missing %d (proven false "
          "positives), twice 0" % (setup.uri.split(":")[0], ENTRIES, len(distinct), KILLS,
                                   len(out), len(missing)))
    # Each key's copy is its first entry, whole.
    for _, fields in out:
        key = fields[b"id"].decode()
        n = int(fields[b"n"])
        assert n == first_n[key], key
        assert fields == {b"id": key.encode(), b"n": str(n).encode(),
                          b"payload": b"x" * (n % 17)}
    assert group_info(node, instream)["pending"] == 0

    # The bits are redbloom's own: every key is present, and the filter has exactly the bits a
    # local filter of the same size holds after adding every key.
    keys_text = ("\n".join(distinct) + "\n").encode()
    r = run_cli("exists", "--redis", "%s#%s" % (setup.uri, name), "-c", stdin=keys_text)
    assert r.stdout.strip() == str(len(distinct)).encode(), r.stderr
    local = str(tmp_path / "local.rbf")
    r = run_cli("add", "-f", local, "-n", CAPACITY, "-p", RATE, "-q", *layout, stdin=keys_text)
    assert r.returncode == 0, r.stderr
    remote_info = json.loads(run_cli("info", "--redis", "%s#%s" % (setup.uri, name),
                                     "--json").stdout)
    local_info = json.loads(run_cli("info", "-f", local, "--json").stdout)
    assert remote_info["bits"] == local_info["bits"]
    assert remote_info["set_bits"] == local_info["set_bits"]


WINDOW_ENTRIES = 10_000
WINDOW_KILLS = 4
WINDOW_MS = 2000  # a window of 2 s in 2 slices: slices retire during the run


@pytest.mark.parametrize("kind", ["windowed", "growing"])
@pytest.mark.parametrize("cluster", [False, True], ids=["one_server", "cluster"])
@pytest.mark.parametrize("module", [False, True], ids=["stock", "module"])
def test_window_and_growth_killed_and_restarted(make_setup, cluster, module, kind):
    """On a windowed filter whose slices retire during the run, and on a growing one that grows
    during it: no input entry is copied twice whatever the kills, each key's first entry is
    copied, and a key comes out again only once the window has passed (never on a growing
    filter)."""
    setup = make_setup(cluster=cluster, module=module)
    name = "seen"
    shape = (["--window", "%dms" % WINDOW_MS, "--slices", "2", "-n", "50000"]
             if kind == "windowed" else ["--growth", "2", "-n", "1000"])
    r = run_cli("create", "--redis", "%s#%s" % (setup.uri, name), "-p", RATE, *shape)
    assert r.returncode == 0, r.stderr
    tag = setup.filter_tag(name) if cluster else ""
    instream, outstream = "clicks" + tag, "first" + tag
    node = setup.client_for(instream)
    seed = 20261129 + 4 * cluster + 2 * module + (kind == "growing")
    rng = random.Random(seed)
    events = make_events(seed)[:WINDOW_ENTRIES]
    # Two halves, the second after a pause longer than the window: the first half's slices
    # retire while the stage runs (its repeats of the first half's keys come out again).
    half = WINDOW_ENTRIES // 2
    for part, (start, end) in enumerate([(0, half), (half, WINDOW_ENTRIES)]):
        if part == 1:
            time.sleep(1.5 * WINDOW_MS / 1000)
        fill(node, instream, events[start:end])
        thresholds = sorted(rng.sample(range(start + 500, end - 500), WINDOW_KILLS // 2))
        kill_and_restart(setup, instream, outstream, name, end, thresholds)

    out = node.xrange(outstream)
    copied = [int(fields[b"n"]) for _, fields in out]
    twice = [n for n, c in collections.Counter(copied).items() if c > 1]
    assert twice == [], "input entries copied more than once: %s" % twice[:10]
    first_n = {}
    for key, n in events:
        first_n.setdefault(key, n)
    assert set(first_n.values()) <= set(copied), "a key's first entry was not copied"
    by_key = collections.defaultdict(list)
    for entry_id, fields in out:
        assert fields[b"id"].decode() == events[int(fields[b"n"])][0]
        by_key[fields[b"id"]].append(int(entry_id.split(b"-")[0]))
    again = {k: ms for k, ms in by_key.items() if len(ms) > 1}
    if kind == "growing":
        assert again == {}, "keys copied more than once: %s" % list(again)[:10]
    for key, ms in again.items():
        # The output's ids are the server's time of each batch: the add's time.
        gaps = [b - a for a, b in zip(ms, ms[1:])]
        assert min(gaps) >= WINDOW_MS, "%s came out again within the window: %s" % (key, gaps)
    print("%s %s: %d entries, %d kills; output %d, keys again after the window %d"
          % (kind, setup.uri.split(":")[0], WINDOW_ENTRIES, WINDOW_KILLS, len(out), len(again)))
    if kind == "windowed":
        assert len(again) > 100, "the window did not pass during the run"


def start_stage(setup, *extra, instream="in", outstream="out", name="f"):
    return subprocess.Popen(stage_command(setup, instream, outstream, name, "--create-group",
                                          *extra), stderr=subprocess.PIPE)


def wait_handled(node, stream, count, stage):
    def done():
        g = group_info(node, stream)
        return (g is not None and g["entries-read"] == count and g["pending"] == 0) \
            or stage.poll() is not None
    wait_until(done, "the stage to handle %d entries" % count, timeout=120)
    assert stage.poll() is None, stage.stderr.read().decode()


def test_sigterm_finishes_the_batch_and_exits_0(make_setup):
    setup = make_setup()
    node = setup.client_for("in")
    stage = start_stage(setup, "--batch", "50", "--json")
    for i in range(300):
        node.xadd("in", {"id": "k%d" % (i % 200)})
    wait_handled(node, "in", 300, stage)
    for i in range(100):
        node.xadd("in", {"id": "late%d" % i})
    stage.send_signal(signal.SIGTERM)
    _, err = stage.communicate(timeout=120)
    assert stage.returncode == 0, err.decode()
    summary = json.loads(err.decode().strip().splitlines()[-1])
    assert summary["stopped_by"] == "SIGTERM"
    # What it read, it finished: nothing pending, and every entry read is accounted for.
    g = group_info(node, "in")
    assert g["pending"] == 0
    assert summary["read"] == g["entries-read"]
    assert summary["unique"] == node.xlen("out")
    assert summary["unique"] + summary["duplicates"] == summary["read"]


def test_entries_without_the_key(make_setup):
    setup = make_setup()
    node = setup.client_for("in")
    node.xadd("in", {"id": "a"})
    node.xadd("in", {"other": "1"})
    bad = node.xadd("in", {"other": "2"})
    node.xadd("in", {"id": "a"})
    node.xadd("in", {"id": "b"})
    first_bad = node.xrange("in")[1][0].decode()

    # error: the entries before the first bad one are done, it and the rest stay pending.
    stage = start_stage(setup, "--consumer", "c1")
    _, err = stage.communicate(timeout=120)
    assert stage.returncode == 2, err.decode()
    assert ("entry %s of stream 'in' has no field 'id'" % first_bad) in err.decode()
    assert [f for _, f in node.xrange("out")] == [{b"id": b"a"}]
    assert group_info(node, "in")["pending"] == 4

    # skip: acknowledged, not copied.
    node.xack("in", "g", first_bad)
    stage = start_stage(setup, "--consumer", "c1", "--on-bad-record", "skip", "--json",
                        "--batch", "2")
    wait_handled(node, "in", 5, stage)
    stage.send_signal(signal.SIGTERM)
    _, err = stage.communicate(timeout=120)
    assert stage.returncode == 0, err.decode()
    summary = json.loads(err.decode().strip().splitlines()[-1])
    assert summary["bad_records_skipped"] == 1
    assert summary["recovered"] == 3  # its own pending entries, read again
    assert [f for _, f in node.xrange("out")] == [{b"id": b"a"}, {b"id": b"b"}]
    assert bad

    # pass: copied unfiltered, in order.
    node.xadd("in2", {"id": "a"})
    node.xadd("in2", {"other": "3"})
    node.xadd("in2", {"id": "c"})
    stage = start_stage(setup, "--on-bad-record", "pass", instream="in2", outstream="out2")
    wait_handled(node, "in2", 3, stage)
    stage.send_signal(signal.SIGTERM)
    stage.communicate(timeout=120)
    assert stage.returncode == 0
    assert [f for _, f in node.xrange("out2")] == [{b"other": b"3"}, {b"id": b"c"}]


def test_a_filter_with_an_exact_set_gets_the_stages_keys(make_setup):
    """diff --exact checks the filter's answers against its exact set: a key the stage added to
    the filter only would be reported as an orphan."""
    setup = make_setup()
    node = setup.client_for("in")
    made = run_cli("create", "--redis", "%s#f" % setup.uri, "-n", "1000", "--exact", "-q")
    assert made.returncode == 0, made.stderr.decode()
    for i in range(200):
        node.xadd("in", {"id": "k%d" % (i % 50)})
    stage = start_stage(setup, "--batch", "30")
    wait_handled(node, "in", 200, stage)
    stage.send_signal(signal.SIGTERM)
    _, err = stage.communicate(timeout=120)
    assert stage.returncode == 0, err.decode()
    checked = "".join("k%d\n" % i for i in range(50)) + "".join("x%d\n" % i for i in range(10))
    diff = run_cli("diff", "--redis", "%s#f" % setup.uri, "--exact", "-q",
                   stdin=checked.encode())
    assert diff.returncode == 0, diff.stderr.decode()
    assert sorted(diff.stdout.decode().split()) == sorted("x%d" % i for i in range(10))


def test_maxlen_trims_the_output(make_setup):
    setup = make_setup()
    node = setup.client_for("in")
    for i in range(2000):
        node.xadd("in", {"id": "k%d" % i})
    stage = start_stage(setup, "--maxlen", "100", "--batch", "500")
    wait_handled(node, "in", 2000, stage)
    stage.send_signal(signal.SIGTERM)
    _, err = stage.communicate(timeout=120)
    assert stage.returncode == 0, err.decode()
    # MAXLEN ~ trims whole nodes of the stream: about 100 kept, the newest.
    assert 100 <= node.xlen("out") < 1000
    assert node.xrevrange("out", count=1)[0][1] == {b"id": b"k1999"}


def test_cluster_refuses_streams_in_another_slot(make_setup):
    setup = make_setup(cluster=True)
    r = run_cli("create", "--redis", "%s#f" % setup.uri, "-n", "1000", "-q")
    assert r.returncode == 0, r.stderr
    tag = setup.filter_tag("f")
    r = run_cli(*stage_command(setup, "in", "out", "f", "--create-group")[1:])
    assert r.returncode == 2
    err = r.stderr.decode()
    assert "must be in one slot" in err
    assert "slot %d" % setup.servers[0].client().execute_command("CLUSTER", "KEYSLOT", "in") in err
    assert ("'in%s' and 'out%s'" % (tag, tag)) in err
    # With the tag, it runs.
    node = setup.client_for("in" + tag)
    node.xadd("in" + tag, {"id": "a"})
    node.xadd("in" + tag, {"id": "a"})
    stage = start_stage(setup, instream="in" + tag, outstream="out" + tag)
    wait_handled(node, "in" + tag, 2, stage)
    stage.send_signal(signal.SIGTERM)
    stage.communicate(timeout=120)
    assert stage.returncode == 0
    assert node.xlen("out" + tag) == 1
    # A windowed filter's keys carry its partition's tag too: the same rule, the same fix.
    r = run_cli("create", "--redis", "%s#w" % setup.uri, "--window", "10m", "-n", "1000", "-q")
    assert r.returncode == 0, r.stderr
    wtag = setup.filter_tag("w")
    r = run_cli(*stage_command(setup, "in", "out", "w", "--create-group")[1:])
    assert r.returncode == 2
    err = r.stderr.decode()
    assert "must be in one slot" in err and "slice key" in err, err
    assert ("'in%s' and 'out%s'" % (wtag, wtag)) in err


def test_refuses_one_stream_as_input_and_output(make_setup):
    setup = make_setup()
    r = run_cli(*stage_command(setup, "in", "in", "f", "--create-group")[1:])
    assert r.returncode == 2
    assert b"the output must be another stream" in r.stderr


def test_help_names_the_stage():
    r = run_cli("dedup", "--help")
    assert r.returncode == 0
    assert b"--from redis-stream://" in r.stdout
    r = run_cli("dedup", "--from", "x", "--help")
    assert r.returncode == 0
    assert b"--key-field" in r.stdout and b"--min-idle" in r.stdout
    r = run_cli("dedup", "--from", "redis-stream://127.0.0.1:1#a", "--capacty", "3")
    assert r.returncode == 2
    assert b"did you mean '--capacity'" in r.stderr
    r = run_cli("dedup", "--from", "nats://127.0.0.1:1#a", "--to", "redis-stream://127.0.0.1:1#b",
                "--group", "g", "--key-field", "id", "--redis", "redis://127.0.0.1:1#f")
    assert r.returncode == 2
    assert b"a stream is named redis-stream://" in r.stderr
    assert b"kafka://HOST:PORT/TOPIC" in r.stderr
    # TLS and Cluster forms are streams too: the stage then tries the server (none listens).
    port = free_port()
    for form in ("rediss-stream://127.0.0.1:%d#a", "redis-stream+cluster://127.0.0.1:%d#a"):
        r = run_cli("dedup", "--from", form % port, "--to", "redis-stream://127.0.0.1:%d#b" % port,
                    "--group", "g", "--key-field", "id", "--redis", "redis://127.0.0.1:%d#f" % port)
        assert r.returncode == 3, r.stderr
        assert b"a stream is named" not in r.stderr
        assert b"127.0.0.1:%d" % port in r.stderr
