"""RB.CUCKOO, a unit of items of redbloom's cuckoo filter in Redis (src/redis/cuckoo_script.hpp
has the keys and the protocol; tests/test_cuckoo_redis.cpp runs the filter's scenarios on it):
a replica ends with the master's bytes, and hostile arguments and damaged keys get an error
reply, never a crash."""

import random

from module_util import Error, Resp, Status, wait_until

DEBUG = ("--enable-debug-command", "yes")

# One partition of two links: 16 buckets of 10-bit fingerprints, then 32 of 11.
LINKS = [(16, 10), (32, 11)]


def link_bytes(buckets, bits):
    return (buckets * 4 * bits + 7) // 8 + 16


def make_partition(raw, tag):
    keys = ["p:clinks:bits:{%s}" % tag] + ["p:c%d:bits:{%s}" % (l, tag) for l in range(len(LINKS))]
    raw("SET", keys[0], b"\x00")
    raw("SET", keys[1], b"\x00" * link_bytes(*LINKS[0]))
    return keys


def call(raw, keys, mode, words):
    args = ["RB.CUCKOO", len(keys), *keys, mode, len(LINKS)]
    for buckets, bits in LINKS:
        args += [buckets, bits]
    for lo, hi in words:
        args += [0, lo, hi]
    return raw(*args)


def test_a_replica_ends_with_the_masters_bytes(make_server):
    master_server = make_server(options=DEBUG + ("--repl-diskless-sync-delay", "0"))
    replica_server = make_server(options=DEBUG + ("--replicaof", "127.0.0.1",
                                                  str(master_server.port)))
    rng = random.Random(7)
    with Resp(master_server.port) as master, Resp(replica_server.port) as replica:
        wait_until(lambda: b"master_link_status:up" in replica("INFO", "replication"),
                   "the replica's link to come up")
        keys = make_partition(master, "t")
        words = [(rng.getrandbits(32), rng.getrandbits(32)) for _ in range(150)]
        # More than link 0's 64 slots: kicks, then link 1 grown, the roster raised.
        added = call(master, keys, "a", words)
        assert added[0] == 0 and sum(added[1:]) >= 145, added
        assert master("GETRANGE", keys[0], 0, -1) == b"\x01"
        removed = call(master, keys, "r", words[:50])
        assert sum(removed[1:]) == 50
        assert master("WAIT", 1, 60000) == 1
        for key in keys:
            assert replica("GETRANGE", key, 0, -1) == master("GETRANGE", key, 0, -1), key
        # Full: no third link to grow.
        more = [(rng.getrandbits(32), rng.getrandbits(32)) for _ in range(400)]
        full = call(master, keys, "a", more)
        assert full[0] == 1 and len(full) - 1 < len(more)
        assert master("WAIT", 1, 60000) == 1
        for key in keys:
            assert replica("GETRANGE", key, 0, -1) == master("GETRANGE", key, 0, -1), key


def test_hostile_arguments_and_damaged_keys_get_errors(make_server):
    server = make_server(options=DEBUG)
    rng = random.Random(11)
    with Resp(server.port) as raw:
        for trial in range(3000):
            tag = "f%d" % (trial % 7)
            keys = make_partition(raw, tag)
            damage = rng.randrange(6)
            if damage == 1:
                raw("SET", keys[0], bytes([rng.randrange(256)]))
            elif damage == 2:
                raw("SET", keys[1], b"\x00" * rng.randrange(80))
            elif damage == 3:
                raw("DEL", keys[rng.randrange(3)])
            elif damage == 4:
                raw("SET", keys[2], b"\x00" * link_bytes(*LINKS[1]))
            args = ["RB.CUCKOO", len(keys), *keys, rng.choice("aicrknx"), len(LINKS)]
            for buckets, bits in LINKS:
                args += [buckets, bits]
            for _ in range(rng.randrange(6)):
                args += [rng.choice([0, 0, 0, 1, -1]), rng.getrandbits(32),
                         rng.choice([rng.getrandbits(32), 2 ** 32, -1])]
            if rng.random() < 0.3:
                # Shuffled, cut or out-of-range figures.
                at = rng.randrange(1, len(args))
                args[at] = rng.choice([0, -1, 2 ** 32, 2 ** 63 - 1, 33, 3, "x", b""])
            if rng.random() < 0.1:
                args = args[:rng.randrange(1, len(args) + 1)]
            reply = raw(*args)
            assert isinstance(reply, (list, Error)), (args, reply)
            if isinstance(reply, list):
                assert reply[0] in (0, 1) and all(isinstance(a, int) for a in reply[1:])
        assert raw("PING") == Status("PONG")
