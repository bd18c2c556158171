"""The CF.* commands on redbloom.so beyond RedisBloom's own tests: the replies and errors of
each command, RESP3, what Redis does with values (DEBUG RELOAD, SAVE and restart, AOF rewrite
with and without the RDB preamble, DUMP/RESTORE, COPY, SCANDUMP/LOADCHUNK), a replica that
holds its master's bytes (kicks are deterministic; LOADCHUNK chunks are replicated too), INFO's
counters, damaged RESTORE payloads and LOADCHUNK headers answered without a crash, and adds
and deletes from 8 clients at once, on one server and on a 3-master cluster, with nothing
lost."""

import importlib.util
import random
import subprocess
import socket
import threading
from pathlib import Path

import pytest
import redis

from module_util import Error, Resp, Status, arity, crc64, wait_until

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "redisbloom_cuckoo"
_spec = importlib.util.spec_from_file_location("make_cuckoo_fixtures",
                                               FIXTURES / "make_fixtures.py")
maker = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(maker)
DEBUG = ("--enable-debug-command", "yes")
WRONGTYPE = Error("WRONGTYPE Operation against a key holding the wrong kind of value")


def test_replies_and_errors(raw):
    raw("SET", "str", "x")
    cases = [
        (("CF.RESERVE", "c", 10), Status("OK")),
        (("CF.RESERVE", "c", 10), Error("ERR item exists")),
        (("CF.RESERVE", "str", 10), WRONGTYPE),
        (("CF.RESERVE", "d"), arity("CF.RESERVE")),
        (("CF.RESERVE", "d", "x"), Error("Bad capacity")),
        (("CF.RESERVE", "d", 3), Error("Capacity must be at least (BucketSize * 2)")),
        (("CF.RESERVE", "d", 10, "BUCKETSIZE", 0),
         Error("BUCKETSIZE: value must be an integer between 1 and 255, inclusive.")),
        (("CF.RESERVE", "d", 10, "MAXITERATIONS", "x"), Error("Couldn't parse MAXITERATIONS")),
        (("CF.RESERVE", "d", 10, "EXPANSION", 40000),
         Error("EXPANSION: value must be an integer between 0 and 32768, inclusive.")),
        (("CF.RESERVE", "d", 2 ** 63 - 1), Error("ERR Insufficient memory to create filter")),
        (("CF.ADD", "c", "a"), 1),
        (("CF.ADD", "c", "a"), 1),
        (("CF.ADDNX", "c", "a"), 0),
        (("CF.COUNT", "c", "a"), 2),
        (("CF.EXISTS", "c", "a"), 1),
        (("CF.EXISTS", "missing", "a"), 0),
        (("CF.EXISTS", "str", "a"), 0),  # RedisBloom answers 0 at another type's key
        (("CF.MEXISTS", "c", "a", "b"), [1, 0]),
        (("CF.DEL", "c", "a"), 1),
        (("CF.DEL", "missing", "a"), Error("Not found")),
        (("CF.INSERT", "c", "ITEMS"), arity("CF.INSERT")),
        (("CF.INSERT", "c", "BOGUS", "ITEMS", "x"), Error("Unknown argument received")),
        (("CF.INSERT", "n", "NOCREATE", "ITEMS", "x"), Error("ERR not found")),
        (("CF.INSERT", "str", "ITEMS", "x"), WRONGTYPE),
        (("CF.INSERTNX", "c", "CAPACITY", 100, "ITEMS", "a", "z"), [0, 1]),
        (("CF.COMPACT", "missing"), Error("Cuckoo filter was not found")),
        (("CF.COMPACT", "c"), Status("OK")),
        (("CF.INFO", "missing"), Error("ERR not found")),
        (("CF.INFO", "str"), WRONGTYPE),
        (("CF.DEBUG", "c"), b"bktsize:2 buckets:8 items:2 deletes:0 filters:1 "
                            b"max_iterations:20 expansion:1"),
        (("CF.SCANDUMP", "c", -1), Error("Invalid position")),
        (("CF.SCANDUMP", "missing", 0), Error("ERR not found")),
        (("CF.SCANDUMP", "c", 1000), [0, None]),
        (("CF.LOADCHUNK", "c", 0, "x"), Error("Invalid position")),
        (("CF.LOADCHUNK", "c", 1, "x" * 38), Error("ERR item exists")),
        (("CF.LOADCHUNK", "new", 1, "x"), Error("Invalid header")),
        (("CF.LOADCHUNK", "new", 1, b"\xff" * 38), Error("Couldn't create filter!")),
        (("CF.LOADCHUNK", "c", 100000, "x"), Error("Couldn't load chunk!")),
        (("TYPE", "c"), Status("MBbloomCF")),
    ]
    for command, expected in cases:
        assert raw(*command) == expected, command
    info = raw("CF.INFO", "c")
    assert info[::2] == [Status(s) for s in (
        "Size", "Number of buckets", "Number of filters", "Number of items inserted",
        "Number of items deleted", "Bucket size", "Expansion rate", "Max iterations")]
    assert info[1::2] == [40 + 16 + 16, 8, 1, 2, 0, 2, 1, 20]  # CF.COMPACT zeroed the deletes


def read_reply(f):
    """One RESP3 reply's raw bytes, read whole."""
    line = f.readline()
    kind, rest = line[:1], line[1:-2]
    if kind in (b"$", b"=", b"!") and rest != b"-1":
        return line + f.read(int(rest) + 2)
    if kind in (b"*", b"~", b">") and rest != b"-1":
        return line + b"".join(read_reply(f) for _ in range(int(rest)))
    if kind == b"%":
        return line + b"".join(read_reply(f) for _ in range(2 * int(rest)))
    return line


def resp3(port, *commands):
    """The raw bytes of each reply after HELLO 3."""
    with socket.create_connection(("127.0.0.1", port), timeout=60) as s, \
            s.makefile("rb") as f:
        out = []
        for command in (("HELLO", "3"),) + commands:
            s.sendall(b"*%d\r\n" % len(command) + b"".join(
                b"$%d\r\n%s\r\n" % (len(a), a) for a in (str(x).encode() for x in command)))
            out.append(read_reply(f))
        return out[1:]


def test_resp3_replies(server, r):
    r.execute_command("CF.RESERVE", "c", 4)
    replies = resp3(server.port, ("CF.SCANDUMP", "c", 0), ("CF.ADD", "c", "a"),
                    ("CF.MEXISTS", "c", "a", "b"), ("CF.INFO", "c"), ("CF.DEBUG", "c"))
    assert replies[0] == b"*2\r\n:0\r\n_\r\n"  # RESP3's null for an empty filter's dump
    assert replies[1] == b":1\r\n"
    assert replies[2] == b"*2\r\n:1\r\n:0\r\n"
    assert replies[3].startswith(b"*16\r\n+Size\r\n:")  # an array, as RedisBloom 2.4 sends
    assert replies[4].startswith(b"$")


def held(r, keys):
    return {k: (r.execute_command("CF.DEBUG", k), r.dump(k),
                r.execute_command("CF.MEXISTS", k, *maker.expand(maker.ADDED[k])))
            for k in keys}


def test_values_survive_what_redis_does_with_them(make_server):
    server = make_server(options=DEBUG)
    r = server.client()
    maker.run_sequence(r)
    before = held(r, maker.KEYS)
    r.execute_command("DEBUG", "RELOAD")
    assert held(r, maker.KEYS) == before
    assert r.save()
    server.restart()
    r = server.client()
    assert held(r, maker.KEYS) == before
    for key in maker.KEYS:
        r.restore("restored:" + key, 0, r.dump(key))
        r.copy(key, "copied:" + key)
        assert r.dump("restored:" + key) == r.dump(key) == r.dump("copied:" + key)
        it, chunks = 0, []
        while True:
            it, data = r.execute_command("CF.SCANDUMP", key, it)
            if it == 0:
                break
            chunks.append((it, data))
        for it, data in chunks:
            assert r.execute_command("CF.LOADCHUNK", "loaded:" + key, it, data) == b"OK"
        assert r.dump("loaded:" + key) == r.dump(key)
        assert r.execute_command("DEBUG", "DIGEST-VALUE", "loaded:" + key) == \
            r.execute_command("DEBUG", "DIGEST-VALUE", key)


@pytest.mark.parametrize("preamble", ["yes", "no"])
def test_aof_rewrite_and_restart(make_server, preamble):
    server = make_server(options=DEBUG + ("--appendonly", "yes", "--aof-use-rdb-preamble",
                                          preamble))
    r = server.client()
    maker.run_sequence(r)
    before = held(r, maker.KEYS)

    def rewritten():
        p = r.info("persistence")
        return p["aof_rewrite_in_progress"] == 0 and p["aof_rewrite_scheduled"] == 0

    wait_until(rewritten, "a rewrite at startup to end")
    r.bgrewriteaof()
    wait_until(rewritten, "BGREWRITEAOF to end")
    assert r.info("persistence")["aof_last_bgrewrite_status"] == "ok"
    r.execute_command("CF.ADD", "auto", "after the rewrite")
    before["auto"] = held(r, ["auto"])["auto"]
    server.restart()
    assert held(server.client(), maker.KEYS) == before


def caught_up(master, replica):
    offset = master.info("replication")["master_repl_offset"]
    info = replica.info("replication")
    return info["master_link_status"] == "up" and info["slave_repl_offset"] == offset


def test_a_replica_holds_its_master_s_bytes(make_server):
    master_server = make_server(options=DEBUG + ("--repl-diskless-sync-delay", "0"))
    master = master_server.client()
    master.execute_command("CF.RESERVE", "before", 64)
    master.execute_command("CF.INSERT", "before", "ITEMS", *range(200))
    replica = make_server(options=DEBUG + ("--replicaof", "127.0.0.1",
                                            str(master_server.port))).client()
    wait_until(lambda: replica.info("replication")["master_link_status"] == "up",
               "the replica's link to come up")
    maker.run_sequence(master)  # kicks, growth, deletes, compactions as commands
    it = 0
    while True:  # a copy through SCANDUMP / LOADCHUNK: its chunks must reach the replica
        it, data = master.execute_command("CF.SCANDUMP", "bs4", it)
        if it == 0:
            break
        master.execute_command("CF.LOADCHUNK", "loaded", it, data)
    keys = maker.KEYS + ["before", "loaded"]
    assert master.execute_command("WAIT", 1, 60000) == 1
    wait_until(lambda: caught_up(master, replica), "the replica to catch up")
    assert held(replica, maker.KEYS) == held(master, maker.KEYS)
    for key in keys:
        assert replica.dump(key) == master.dump(key), key


def test_info_counts_filters_and_commands(r):
    def info():
        return r.info("redbloom")

    filters = info()["redbloom_cuckoo_filters"]
    calls = info()["redbloom_cmd_cf_add"]
    r.execute_command("CF.ADD", "i1", "a")
    r.execute_command("CF.ADD", "i2", "a")
    assert info()["redbloom_cuckoo_filters"] == filters + 2
    assert info()["redbloom_cmd_cf_add"] == calls + 2
    assert info()["redbloom_cuckoo_bytes"] >= 2 * 1024
    r.delete("i1", "i2")
    assert info()["redbloom_cuckoo_filters"] == filters


def mutate(rng, data):
    data = bytearray(data)
    for _ in range(rng.randint(1, 4)):
        choice = rng.random()
        if choice < 0.6 and data:
            data[rng.randrange(len(data))] = rng.getrandbits(8)
        elif choice < 0.8 and data:
            del data[rng.randrange(len(data)):]
        else:
            at = rng.randrange(len(data) + 1)
            data[at:at] = bytes(rng.getrandbits(8) for _ in range(rng.randint(1, 9)))
    return bytes(data)


def exercise(r, key):
    """A value that was accepted must work: every command answers."""
    for command in (("CF.ADD", key, "probe"), ("CF.EXISTS", key, "probe"),
                    ("CF.COUNT", key, "probe"), ("CF.DEL", key, "probe"), ("CF.INFO", key),
                    ("CF.DEBUG", key), ("CF.SCANDUMP", key, 1), ("CF.COMPACT", key),
                    ("CF.INSERT", key, "ITEMS", "a", "b", "c")):
        try:
            r.execute_command(*command)
        except redis.ResponseError:
            pass


def fuzz_payloads(r, rounds, seed):
    """Damaged DUMP payloads (with a correct checksum, so the module reads them) and damaged
    LOADCHUNK headers and chunks: each answered, the accepted ones usable."""
    rng = random.Random(seed)
    r.execute_command("CF.RESERVE", "seed", 64, "BUCKETSIZE", 4, "EXPANSION", 2)
    r.execute_command("CF.INSERT", "seed", "ITEMS", *range(600))
    payload = r.dump("seed")
    header = r.execute_command("CF.SCANDUMP", "seed", 0)[1]
    first = r.execute_command("CF.SCANDUMP", "seed", 1)
    accepted = 0
    for _ in range(rounds):
        body = mutate(rng, payload[:-10])
        damaged = body + payload[-10:-8]
        damaged += crc64(damaged).to_bytes(8, "little")
        r.delete("d", "h")
        try:
            r.restore("d", 0, damaged)
            accepted += 1
            exercise(r, "d")
        except redis.ResponseError:
            pass
        try:
            r.execute_command("CF.LOADCHUNK", "h", 1, mutate(rng, header))
            r.execute_command("CF.LOADCHUNK", "h", first[0] + rng.randint(-40, 40),
                              mutate(rng, first[1]))
        except redis.ResponseError:
            pass
        if r.exists("h"):
            exercise(r, "h")
    return accepted


def test_damaged_payloads_are_answered_without_a_crash(server, r):
    fuzz_payloads(r, 1500, 42)
    assert server.alive(), server.log_tail()


def test_eight_clients_adding_and_deleting_lose_nothing(server, r):
    r.execute_command("CF.RESERVE", "shared", 1000, "EXPANSION", 2)
    errors = []

    def client(n):
        c = server.client()
        try:
            mine = ["c%d:%d" % (n, i) for i in range(1500)]
            for i in range(0, len(mine), 50):
                c.execute_command("CF.INSERT", "shared", "ITEMS", *mine[i:i + 50])
            for item in mine[::3]:
                if c.execute_command("CF.DEL", "shared", item) != 1:
                    errors.append("delete of %s found nothing" % item)
            kept = [x for i, x in enumerate(mine) if i % 3]
            if 0 in c.execute_command("CF.MEXISTS", "shared", *kept):
                errors.append("client %d lost an item" % n)
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(repr(e))

    threads = [threading.Thread(target=client, args=(n,)) for n in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    kept = ["c%d:%d" % (n, i) for n in range(8) for i in range(1500) if i % 3]
    assert 0 not in r.execute_command("CF.MEXISTS", "shared", *kept)
    info = dict(zip(r.execute_command("CF.INFO", "shared")[::2],
                    r.execute_command("CF.INFO", "shared")[1::2]))
    assert info[b"Number of items inserted"] == len(kept)


def test_a_growth_refused_for_maxmemory_reaches_the_replica_as_what_was_done(make_server):
    """The master refuses a sub-filter that would pass the room its maxmemory leaves; its
    replica (no such limit on what it applies) must not grow either: it gets the items
    stored, not the command."""
    # A small backlog: its filling would otherwise count against the room.
    master_server = make_server(options=DEBUG + ("--repl-diskless-sync-delay", "0",
                                                 "--maxmemory-policy", "noeviction",
                                                 "--repl-backlog-size", "16kb"))
    master = master_server.client()
    replica = make_server(options=DEBUG + ("--replicaof", "127.0.0.1",
                                            str(master_server.port))).client()
    wait_until(lambda: replica.info("replication")["master_link_status"] == "up",
               "the replica's link to come up")
    master.execute_command("CF.RESERVE", "grows", 1024, "EXPANSION", 2)
    master.config_set("maxmemory", master.info("memory")["used_memory"] + 100 * 1024)
    answers = []
    for batch in range(400):
        answers += master.execute_command(
            "CF.INSERT", "grows", "ITEMS", *("g:%d:%d" % (batch, i) for i in range(500)))
        if -1 in answers:
            break
    assert -1 in answers, "no growth was refused"
    # Single adds until one is refused (its growth, or the server's own OOM check when the
    # server's other memory moved past the limit meanwhile).
    master.config_set("maxmemory", master.info("memory")["used_memory"] + 8 * 1024)
    with pytest.raises(redis.ResponseError, match="cannot grow|OOM"):
        for i in range(200000):
            master.execute_command("CF.ADD", "grows", "one more:%d" % i)
    with pytest.raises(redis.ResponseError, match="Insufficient memory|OOM"):
        master.execute_command("CF.INSERT", "fresh", "CAPACITY", 2 ** 22, "ITEMS", "a")
    master.config_set("maxmemory", 0)
    assert master.execute_command("WAIT", 1, 60000) == 1
    wait_until(lambda: caught_up(master, replica), "the replica to catch up")
    assert replica.dump("grows") == master.dump("grows")
    assert not replica.exists("fresh")


def cuckoo_payload(payload, encver, fields, strings):
    """A DUMP payload of the MBbloomCF type at another encoding version: the module id's low
    10 bits are the version; then unsigned fields (opcode 2) and strings (opcode 5)."""
    from test_fuzz import rdb_length
    from module_util import with_crc

    module_id = int.from_bytes(payload[2:10], "big")
    body = payload[:1] + b"\x81" + ((module_id & ~0x3FF) | encver).to_bytes(8, "big")
    body += b"".join(b"\x02" + rdb_length(f) for f in fields)
    body += b"".join(b"\x05" + rdb_length(len(s)) + s for s in strings)
    return with_crc(body + b"\x00" + payload[-10:-8])


def test_older_encodings_load_with_redisbloom_s_defaults(r):
    """Before encoding 4 RedisBloom saved sub-filters, buckets and items only (bucket size 2,
    20 iterations, expansion 1, every sub-filter of the first one's buckets)."""
    r.execute_command("CF.RESERVE", "new", 64)
    r.execute_command("CF.INSERT", "new", "ITEMS", *range(150))
    it, chunks = 1, []
    while True:
        it, data = r.execute_command("CF.SCANDUMP", "new", it)
        if it == 0:
            break
        chunks.append(data)
    info = dict(zip(r.execute_command("CF.INFO", "new")[::2],
                    r.execute_command("CF.INFO", "new")[1::2]))
    fields = [info[b"Number of filters"], info[b"Number of buckets"],
              info[b"Number of items inserted"]]
    for encver in (2, 3):
        r.restore("old%d" % encver, 0, cuckoo_payload(r.dump("new"), encver, fields, chunks))
        assert r.execute_command("CF.DEBUG", "old%d" % encver) == \
            r.execute_command("CF.DEBUG", "new")
        assert r.execute_command("CF.MEXISTS", "old%d" % encver, *range(300)) == \
            r.execute_command("CF.MEXISTS", "new", *range(300))
    with pytest.raises(redis.ResponseError):
        r.restore("newer", 0, cuckoo_payload(r.dump("new"), 5, fields, chunks))


def test_cf_load_arguments_set_the_defaults_of_new_filters(make_server):
    r = make_server("cf-bucket-size", "4", "cf-initial-size", "4096", "cf-max-iterations", "30",
                    "cf-expansion-factor", "2", "CF-MAX-EXPANSIONS", "3").client()

    def info(key):
        reply = r.execute_command("CF.INFO", key)
        return dict(zip((x.decode() for x in reply[::2]), reply[1::2]))

    r.execute_command("CF.ADD", "auto", "a")
    r.execute_command("CF.RESERVE", "reserved", 64)
    r.execute_command("CF.RESERVE", "told", 64, "BUCKETSIZE", 1, "EXPANSION", 0)
    assert [info("auto")[f] for f in ("Number of buckets", "Bucket size", "Max iterations",
                                      "Expansion rate")] == [1024, 4, 30, 2]
    assert [info("reserved")[f] for f in ("Number of buckets", "Bucket size")] == [16, 4]
    assert [info("told")[f] for f in ("Bucket size", "Expansion rate")] == [1, 0]
    with pytest.raises(redis.ResponseError, match="Capacity must be at least"):
        r.execute_command("CF.INSERT", "small", "CAPACITY", 7, "ITEMS", "a")
    # As RedisBloom: checked before each command (one CF.INSERT may stack several).
    with pytest.raises(redis.ResponseError, match="Maximum expansions reached"):
        for i in range(2000):
            r.execute_command("CF.ADD", "reserved", i)
    assert info("reserved")["Number of filters"] == 3


@pytest.mark.parametrize("args", [("cf-bucket-size", 0), ("cf-initial-size", 3),
                                  ("cf-max-iterations", 70000), ("cf-expansion-factor", -1),
                                  ("cf-bucket-size", 100, "cf-initial-size", 100)])
def test_bad_cf_load_arguments_fail_the_load(tmp_path, args):
    from module_util import free_port, module_path

    out = subprocess.run(["redis-server", "--port", str(free_port()), "--bind", "127.0.0.1",
                          "--dir", str(tmp_path),
                          "--loadmodule", module_path(), *map(str, args)],
                         capture_output=True, text=True, timeout=30)
    assert out.returncode != 0
    assert "cf-" in out.stdout


from test_replication import cluster  # noqa: E402,F401 - the 3-master cluster fixture


def test_eight_clients_on_a_cluster_lose_nothing(cluster):  # noqa: F811
    from redis.cluster import RedisCluster

    keys = ["cf:%d" % k for k in range(4)]  # slots 1963, 6026, 10217, 14280: every master
    errors = []

    def client(n):
        try:
            c = RedisCluster(host="127.0.0.1", port=cluster[n % 3].port)
            key = keys[n % 4]
            mine = ["c%d:%d" % (n, i) for i in range(900)]
            for i in range(0, len(mine), 30):
                c.execute_command("CF.INSERT", key, "ITEMS", *mine[i:i + 30])
            for item in mine[::3]:
                if c.execute_command("CF.DEL", key, item) != 1:
                    errors.append("delete of %s found nothing" % item)
            kept = [x for i, x in enumerate(mine) if i % 3]
            if 0 in c.execute_command("CF.MEXISTS", key, *kept):
                errors.append("client %d lost an item" % n)
            c.close()
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(repr(e))

    threads = [threading.Thread(target=client, args=(n,)) for n in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert all(node.client().dbsize() > 0 for node in cluster)  # every master holds a filter
    c = RedisCluster(host="127.0.0.1", port=cluster[0].port)
    total = sum(c.execute_command("CF.INFO", k)[7] for k in keys)
    assert total == 8 * 600
