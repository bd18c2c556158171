"""redbloom on keys of the server's own Bloom engine (BF.*), with redbloom.so as that engine:
Python's open/create with engine='bf', keys reserved by another client, the Scrapy dupefilter
creating one, concurrent writers, a Redis Cluster, RedisBloom 2.4's own RDB through the CLI."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from module_util import free_port, items, start_server, wait_until

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "redisbloom"


def cli():
    path = os.environ.get("REDBLOOM_CLI")
    if not path or not os.access(path, os.X_OK):
        pytest.fail("REDBLOOM_CLI must name the built redbloom command (ctest sets it)")
    return path


def run_cli(*args, input=None):
    return subprocess.run([cli(), *args], input=input, capture_output=True, timeout=300)


def calls(client, command):
    return int(client.info("commandstats").get("cmdstat_" + command, {}).get("calls", 0))


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    s = start_server(tmp_path_factory.mktemp("redis"))
    yield s
    s.kill()


@pytest.fixture
def r(server):
    client = server.client()
    client.flushall()
    client.config_resetstat()
    yield client
    client.close()
    assert server.alive(), "redis-server died:\n" + server.log_tail()


def test_open_creates_a_bf_key_and_batches_its_commands(server, r):
    import redbloom
    location = server.url + "#urls"
    with redbloom.open(location, capacity=100000, error_rate=0.001, engine="bf") as f:
        assert r.type("urls") == b"redbloomF"
        assert r.execute_command("BF.INFO", "urls", "CAPACITY") == [100000]
        assert (f.engine, f.capacity, f.error_rate) == ("bf", 100000, 0.001)
        batch = items("u", 5000)
        assert f.add_many(batch) == [True] * 5000
        assert f.add_many(batch[:10] + items("v", 10)) == [False] * 10 + [True] * 10
        assert f.contains_many(batch) == [True] * 5000
        assert f.add(b"one more") and b"one more" in f
        assert len(f) == 5011
        info = f.info()
        assert info["server_filter"]["items"] == 5011 and info["server_filter"]["filters"] == 1
    # Items go in commands of 1000, not one by one.
    assert 7 <= calls(r, "bf.insert") <= 9
    assert calls(r, "bf.mexists") <= 6
    assert r.execute_command("BF.MEXISTS", "urls", *batch[:50]) == [1] * 50
    # Opened again, by a process that did not make it: the server's capacity; its rate unknown.
    with redbloom.open(location) as f:
        assert (f.engine, f.capacity, f.error_rate) == ("bf", 100000, None)
        assert f.error_rate_at(10) is None
        assert "the server's Bloom engine" in repr(f)
    with redbloom.open(location, capacity=10, error_rate=0.5, engine="bf") as f:
        assert f.capacity == 100000  # used as the server made it
    with pytest.raises(redbloom.FilterExists, match="not the engine asked for"):
        redbloom.open(location, engine="redbloom")


def test_a_key_another_client_reserved(server, r):
    import redbloom
    r.execute_command("BF.RESERVE", "theirs", 0.01, 1000, "EXPANSION", 4)
    r.execute_command("BF.MADD", "theirs", *items("t", 3))
    with redbloom.open(server.url + "#theirs") as f:
        assert f.engine == "bf"
        assert f.add_many(items("t", 5)) == [False] * 3 + [True] * 2
        assert f.info()["server_filter"]["expansion"] == 4
    with redbloom.open(server.url + "#theirs", capacity=10, engine="bf") as f:
        assert f.contains_many(items("t", 5)) == [True] * 5
    # Sizes for redbloom's own filter do not fit a key the engine sized.
    with pytest.raises(redbloom.FilterExists, match="has the parameters its server gave it"):
        redbloom.open(server.url + "#theirs", capacity=1000, error_rate=0.01)


def test_create_and_refusals(server, r, tmp_path):
    import redbloom
    f = redbloom.Filter.create(server.url, name="made", capacity=300, error_rate=0.01,
                               growth=2, engine="bf")
    assert r.execute_command("BF.INFO", "made", "EXPANSION") == [2]
    with pytest.raises(redbloom.FilterExists):
        redbloom.Filter.create(server.url, name="made", capacity=300, engine="bf")
    f.close()
    g = redbloom.Filter.create(server.url, name="made", capacity=50, engine="bf", nonscaling=True,
                               overwrite=True)
    assert r.execute_command("BF.INFO", "made", "CAPACITY") == [50]
    # Full: the items before the refused one are committed, and said so.
    with pytest.raises(redbloom.CapacityExceeded) as full:
        g.add_many(items("full", 80))
    assert 40 <= full.value.committed <= 50
    assert r.execute_command("BF.CARD", "made") == full.value.committed - sum(
        1 for a in full.value.answers if not a)
    g.close()
    for wrong in ({"layout": "blocked"}, {"window": 60}, {"bits": 1000, "hashes": 3},
                  {"growth": 2, "nonscaling": True}):
        with pytest.raises(redbloom.InvalidArgument):
            redbloom.open(server.url + "#other", capacity=100, engine="bf", **wrong)
    with pytest.raises(redbloom.InvalidArgument, match="give a Redis location"):
        redbloom.open(str(tmp_path / "f.rbf"), capacity=100, engine="bf")
    with pytest.raises(redbloom.InvalidArgument, match="engine="):
        redbloom.open(server.url + "#other", capacity=100, engine="cuckoo")
    with pytest.raises(redbloom.InvalidArgument, match="nonscaling= is for engine='bf'"):
        redbloom.open(server.url + "#other", capacity=100, nonscaling=True)
    with pytest.raises(redbloom.NotFound):
        redbloom.open(server.url + "#other", engine="bf")
    assert r.exists("other") == 0


ADDER = """
import json, random, sys
import redbloom
location, seed = sys.argv[1], int(sys.argv[2])
keys = ["event-%d" % i for i in range(20000)]
random.Random(seed).shuffle(keys)
with redbloom.open(location, capacity=100000, error_rate=1e-6, engine="bf") as f:
    answers = []
    for start in range(0, len(keys), 700):
        answers += f.add_many(keys[start:start + 700])
print(json.dumps([k for k, new in zip(keys, answers) if new]))
"""


def test_concurrent_writers_see_each_item_new_once(server, r, tmp_path):
    script = tmp_path / "adder.py"
    script.write_text(ADDER)
    env = dict(os.environ)
    adders = [subprocess.Popen([sys.executable, str(script), server.url + "#shared", str(seed)],
                               stdout=subprocess.PIPE, env=env) for seed in range(4)]
    new = []
    for adder in adders:
        out, _ = adder.communicate(timeout=300)
        assert adder.returncode == 0
        new += json.loads(out)
    assert len(new) == len(set(new))  # no item new to two writers
    assert len(new) == r.execute_command("BF.CARD", "shared")
    assert len(new) >= 19990  # all but the false positives at 1e-6


def test_scrapy_dupefilter_creates_a_bf_key(server, r):
    from scrapy import Request
    from scrapy.settings import Settings
    from redbloom.scrapy import RedbloomDupeFilter
    settings = Settings({"REDBLOOM_URL": server.url, "REDBLOOM_KEY": "crawl:seen",
                         "REDBLOOM_ENGINE": "bf", "REDBLOOM_CAPACITY": 5000,
                         "REDBLOOM_ERROR_RATE": 0.001, "REDBLOOM_GROWTH": 4})
    dupefilter = RedbloomDupeFilter.from_settings(settings)
    dupefilter.open()
    pages = [Request("https://example.com/page/%d" % i) for i in range(300)]
    assert [dupefilter.request_seen(p) for p in pages] == [False] * 300
    assert all(dupefilter.request_seen(p) for p in pages[:50])
    dupefilter.close("finished")
    assert r.type("crawl:seen") == b"redbloomF"
    assert r.execute_command("BF.INFO", "crawl:seen", "CAPACITY") == [5000]
    assert r.execute_command("BF.INFO", "crawl:seen", "EXPANSION") == [4]
    assert r.execute_command("BF.CARD", "crawl:seen") == 300
    # A second crawl uses the key as it is.
    again = RedbloomDupeFilter.from_settings(settings)
    again.open()
    assert again.request_seen(pages[7])
    assert not again.request_seen(Request("https://example.com/new"))
    again.close("finished")


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    nodes = [start_server(tmp_path_factory.mktemp("node"), options=(
        "--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf", "--cluster-port",
        str(free_port()))) for _ in range(3)]
    clients = [n.client() for n in nodes]
    for client, (first, last) in zip(clients, [(0, 5460), (5461, 10922), (10923, 16383)]):
        client.execute_command("CLUSTER", "ADDSLOTSRANGE", first, last)
    for client in clients[1:]:
        bus = int(client.config_get("cluster-port")["cluster-port"])
        port = client.connection_pool.connection_kwargs["port"]
        clients[0].execute_command("CLUSTER", "MEET", "127.0.0.1", port, bus)

    def ok():
        return all(c.cluster("info")["cluster_state"] == "ok" and
                   int(c.cluster("info")["cluster_known_nodes"]) == 3 for c in clients)

    wait_until(ok, "cluster_state:ok on the 3 masters")
    yield nodes
    for node in nodes:
        node.kill()


def test_a_bf_key_on_a_cluster(cluster):
    import redbloom
    uri = "redis+cluster://127.0.0.1:%d" % cluster[0].port
    made = run_cli("create", "--engine", "bf", "--redis", uri, "--name", "clicks", "-n", "50000",
                   "-p", "0.001")
    assert made.returncode == 0, made.stderr.decode()
    slot = cluster[0].client().execute_command("CLUSTER", "KEYSLOT", "clicks")
    owner = [n for n in cluster if n.client().execute_command("CLUSTER", "COUNTKEYSINSLOT", slot)]
    assert len(owner) == 1 and owner[0].client().type("clicks") == b"redbloomF"
    batch = items("c", 6000)
    with redbloom.open(uri + "#clicks", engine="bf") as f:
        assert f.capacity == 50000
        assert f.add_many(batch) == [True] * 6000
        assert f.contains_many(batch) == [True] * 6000
    # Every command went to the master of the key's slot.
    for node in cluster:
        inserts = calls(node.client(), "bf.insert")
        assert (inserts >= 6) if node is owner[0] else (inserts == 0)
    out = run_cli("dedup", "--redis", uri, "--name", "clicks",
                  input=b"\n".join(batch[:100] + items("d", 100)) + b"\n")
    assert out.returncode == 0, out.stderr.decode()
    assert out.stdout.splitlines() == items("d", 100)
    info = run_cli("info", "--redis", uri, "--name", "clicks", "--json")
    assert json.loads(info.stdout)["server_filter"]["items"] == 6100
    assert run_cli("drop", "--redis", uri, "--name", "clicks").returncode == 0
    assert owner[0].client().exists("clicks") == 0


def test_redisbloom_rdb_keys_through_the_cli(tmp_path):
    """RedisBloom 2.4.23's own dump.rdb: its MBbloom-- keys, served by redbloom.so, used by the
    CLI as RedisBloom answered them."""
    directory = tmp_path / "data"
    directory.mkdir()
    shutil.copy(FIXTURES / "dump.rdb", directory / "dump.rdb")
    server = start_server(directory)
    try:
        r = server.client()
        replies = json.loads((FIXTURES / "replies.json").read_text())
        uri = server.url
        for key in ("scaling", "exp4", "nonscaling"):
            assert r.type(key) == b"MBbloom--"
            plan = replies["initial"][key]
            held = items(key, len(plan["present"]))
            absent = [b"absent:" + i for i in items(key, 4000)]
            found = run_cli("exists", "--redis", uri, "--name", key, "-c",
                            input=b"\n".join(held) + b"\n")
            assert found.stdout.decode().strip() == str(plan["present"].count("1")), key
            wrong = run_cli("exists", "--redis", uri, "--name", key, "-c",
                            input=b"\n".join(absent) + b"\n")
            assert wrong.stdout.decode().strip() == str(plan["absent"].count("1")), key
        info = run_cli("info", "--redis", uri, "--name", "exp4")
        assert "RedisBloom's BF filter (TYPE MBbloom--)" in info.stdout.decode()
        assert "expansion         4" in info.stdout.decode()
        fresh = [b"new:" + i for i in items("exp4", 200)]
        before = r.execute_command("BF.CARD", "exp4")
        out = run_cli("dedup", "--redis", uri, "--name", "exp4",
                      input=b"\n".join(items("exp4", 100) + fresh) + b"\n")
        assert out.returncode == 0, out.stderr.decode()
        # The new ones but the false positives (a rate of 0.05 per sub-filter, 4 of them).
        printed = out.stdout.splitlines()
        assert set(printed) <= set(fresh) and len(printed) >= 150
        assert len(printed) == r.execute_command("BF.CARD", "exp4") - before
        assert r.type("exp4") == b"MBbloom--"
        assert run_cli("drop", "--redis", uri, "--name", "exp4").returncode == 0
        assert r.exists("exp4") == 0
    finally:
        server.kill()
