"""One server holding a key of every kind redbloom.so serves, side by side, through what Redis
does with a data set: a restart from its RDB, an AOF rewrite (by the module's own rewrite
callbacks, no RDB preamble) and a restart from it, and a replica (the keys made before it
connected reach it in the full sync, the others as the command stream). After each, every
key answers as before, and the keyspace holds the same bytes.

Each kind is one row of KINDS: fill(r, cli, uri, key) makes its keys at `key` (and below it)
and answer(r, cli, uri, key) returns everything its commands tell a client about them. A new
kind is one more row."""

import os
import subprocess

import pytest

from module_util import items, start_server, wait_until

DEBUG = ("--enable-debug-command", "yes")
PROBE = items("in", 400) + items("out", 1000)


def cli_path():
    cli = os.environ.get("REDBLOOM_CLI")
    if not cli or not os.access(cli, os.X_OK):
        pytest.fail("REDBLOOM_CLI must name the built redbloom command (ctest sets it)")
    return cli


def run_cli(uri, *args, stdin=b""):
    done = subprocess.run([cli_path(), *args, "--redis", uri, "-q"], input=stdin,
                          capture_output=True, timeout=120)
    assert done.returncode == 0, done.stderr.decode()
    return done.stdout


# -- the kinds ------------------------------------------------------------------------------

def bloom_fill(fmt):
    def fill(r, uri, key):
        # Small first link and expansion 2: several links, so growth is carried too.
        r.execute_command("BF.RESERVE", key, 0.01, 100, "EXPANSION", 2, "FORMAT", fmt)
        r.execute_command("BF.MADD", key, *items("in", 400))
        r.execute_command("BF.RESERVE", key + ":fixed", 0.001, 50, "NONSCALING", "FORMAT", fmt)
        r.execute_command("BF.MADD", key + ":fixed", *items("in", 40))
    return fill


def bloom_answer(r, uri, key):
    out = []
    for k in (key, key + ":fixed"):
        out += [r.type(k), r.execute_command("BF.INFO", k), r.execute_command("BF.CARD", k),
                r.execute_command("BF.MEXISTS", k, *PROBE), scandump(r, k)]
    return out


def scandump(r, key):
    pieces, iterator = [], 0
    while True:
        iterator, data = r.execute_command("BF.SCANDUMP", key, iterator)
        if iterator == 0:
            return pieces
        pieces.append((iterator, data))


def cuckoo_fill(r, uri, key):
    r.execute_command("CF.RESERVE", key, 64, "BUCKETSIZE", 2, "EXPANSION", 2)
    for item in items("in", 300):
        r.execute_command("CF.ADD", key, item)
    r.execute_command("CF.ADD", key, "twice")
    r.execute_command("CF.ADD", key, "twice")
    r.execute_command("CF.DEL", key, items("in", 1)[0])


def cuckoo_answer(r, uri, key):
    return [r.type(key), r.execute_command("CF.INFO", key),
            r.execute_command("CF.MEXISTS", key, *PROBE),
            r.execute_command("CF.COUNT", key, "twice")]


def tdigest_fill(r, uri, key):
    r.execute_command("TDIGEST.CREATE", key, "COMPRESSION", 50)
    r.execute_command("TDIGEST.ADD", key, *(((i * 7919) % 1000) / 10 for i in range(2000)))
    r.execute_command("TDIGEST.CREATE", key + ":empty")


def tdigest_answer(r, uri, key):
    out = []
    for k in (key, key + ":empty"):
        # INFO last: a query merges the values not yet merged, as saving the digest does.
        out += [r.type(k), r.execute_command("TDIGEST.MIN", k),
                r.execute_command("TDIGEST.MAX", k),
                r.execute_command("TDIGEST.QUANTILE", k, 0, 0.01, 0.5, 0.99, 1),
                r.execute_command("TDIGEST.CDF", k, -1, 5, 50, 99.9, 200),
                r.execute_command("TDIGEST.TRIMMED_MEAN", k, 0.1, 0.9),
                r.execute_command("TDIGEST.INFO", k)]
    return out


def topk_fill(r, uri, key):
    # A narrow Top-K fed a skewed stream: items share buckets, so decays are drawn, and a
    # reloaded or replicated value must go on drawing as the primary's does.
    r.execute_command("TOPK.RESERVE", key, 5, 8, 3, 0.9)
    stream = [b"item:%d" % ((i * i) % 37 if i % 3 else i % 5) for i in range(3000)]
    for start in range(0, len(stream), 500):
        r.execute_command("TOPK.ADD", key, *stream[start:start + 500])
    r.execute_command("TOPK.INCRBY", key, "heavy", 400, "item:1", 7)


def topk_answer(r, uri, key):
    probe = [b"item:%d" % i for i in range(40)] + [b"heavy", b"absent"]
    # An add last: it must expel and decay alike everywhere.
    return [r.type(key), r.execute_command("TOPK.LIST", key, "WITHCOUNT"),
            r.execute_command("TOPK.COUNT", key, *probe),
            r.execute_command("TOPK.QUERY", key, *probe), r.execute_command("TOPK.INFO", key)]


def cms_fill(r, uri, key):
    r.execute_command("CMS.INITBYDIM", key, 200, 4)
    r.execute_command("CMS.INITBYDIM", key + ":b", 200, 4)
    r.execute_command("CMS.INITBYPROB", key + ":prob", 0.01, 0.001)
    for k in (key, key + ":b", key + ":prob"):
        pairs = []
        for i, item in enumerate(items("in", 300)):
            pairs += [item, i % 17 + 1]
        r.execute_command("CMS.INCRBY", k, *pairs)
    r.execute_command("CMS.INITBYDIM", key + ":merged", 200, 4)
    r.execute_command("CMS.MERGE", key + ":merged", 2, key, key + ":b", "WEIGHTS", 2, 3)


def cms_answer(r, uri, key):
    out = []
    for k in (key, key + ":b", key + ":prob", key + ":merged"):
        out += [r.type(k), r.execute_command("CMS.INFO", k),
                r.execute_command("CMS.QUERY", k, *PROBE[:600])]
    return out


def plain_fill(r, uri, key):
    run_cli(uri, "create", "--name", key, "-n", "20000", "--partition-size", "4KiB")
    # Half through the CLI (RB.PARTADD), half as BF.MADD on the server.
    run_cli(uri, "add", "--name", key, stdin=b"\n".join(items("in", 200)) + b"\n")
    r.execute_command("BF.MADD", key, *items("in", 200, 200))


def plain_answer(r, uri, key):
    return [r.execute_command("BF.INFO", key), r.execute_command("BF.MEXISTS", key, *PROBE),
            run_cli(uri, "exists", "--name", key, stdin=b"\n".join(PROBE) + b"\n")]


def windowed_fill(r, uri, key):
    run_cli(uri, "create", "--name", key, "-n", "1000", "--window", "1d", "--slices", "4")
    run_cli(uri, "add", "--name", key, stdin=b"\n".join(items("in", 400)) + b"\n")
    run_cli(uri, "create", "--name", key + ":growing", "-n", "100", "--growth", "2")
    run_cli(uri, "add", "--name", key + ":growing", stdin=b"\n".join(items("in", 400)) + b"\n")


def windowed_answer(r, uri, key):
    return [run_cli(uri, "exists", "--name", k, stdin=b"\n".join(PROBE) + b"\n")
            for k in (key, key + ":growing")]


# name, fill, answer. A new kind: its row here.
KINDS = [
    ("bf-redbloom", bloom_fill("redbloom"), bloom_answer),
    ("bf-redisbloom", bloom_fill("redisbloom"), bloom_answer),
    ("cuckoo", cuckoo_fill, cuckoo_answer),
    ("tdigest", tdigest_fill, tdigest_answer),
    ("topk", topk_fill, topk_answer),
    ("cms", cms_fill, cms_answer),
    ("plain", plain_fill, plain_answer),
    ("windowed", windowed_fill, windowed_answer),
]


# -- the data set ---------------------------------------------------------------------------

def uri_of(server):
    return "redis://127.0.0.1:%d" % server.port


def fill_all(server, prefix):
    r = server.client()
    keys = []
    for name, fill, _ in KINDS:
        fill(r, uri_of(server), prefix + name)
        keys.append(prefix + name)
    return keys


def keyspace(r):
    """Every key's type, whether it expires, and its serialized value (DUMP: the same bytes
    for strings, hashes and the module's types alike)."""
    held = {}
    for key in sorted(r.keys()):
        held[key] = (r.type(key), r.pttl(key) > 0, r.dump(key))
    return held


def answers(server, keys):
    r = server.client()
    out = {}
    for key in keys:
        name = key.split(":", 1)[1]
        _, _, answer = next(kind for kind in KINDS if kind[0] == name)
        out[key] = answer(r, uri_of(server), key)
    return out


def state(server, keys):
    return answers(server, keys), keyspace(server.client())


def assert_same(after, before):
    """Key by key, so that a failure names the key (and the answer) that changed."""
    (answered, held), (answered_before, held_before) = after, before
    assert sorted(answered) == sorted(answered_before)
    for key, answer in answered_before.items():
        for i, (now, then) in enumerate(zip(answered[key], answer)):
            assert now == then, (key, "answer %d" % i)
    assert sorted(held) == sorted(held_before)
    for key, value in held_before.items():
        assert held[key] == value, key


def test_every_kind_is_a_row():
    # The rows' names are what `answers` finds them by.
    assert len({name for name, _, _ in KINDS}) == len(KINDS)
    assert all(":" not in name for name, _, _ in KINDS)


def test_restart_from_the_rdb(tmp_path):
    server = start_server(tmp_path / "s", options=DEBUG)
    keys = fill_all(server, "m:")
    before = state(server, keys)
    assert server.client().save()
    server.restart()
    assert_same(state(server, keys), before)
    server.kill()


def test_aof_rewrite_and_reload(tmp_path):
    server = start_server(tmp_path / "s", options=DEBUG + ("--appendonly", "yes",
                                                           "--aof-use-rdb-preamble", "no"))
    r = server.client()

    def rewritten():
        p = r.info("persistence")
        return p["aof_rewrite_in_progress"] == 0 and p["aof_rewrite_scheduled"] == 0

    wait_until(rewritten, "a rewrite at startup to end")
    keys = fill_all(server, "m:")
    r.bgrewriteaof()
    wait_until(rewritten, "BGREWRITEAOF to end")
    assert r.info("persistence")["aof_last_bgrewrite_status"] == "ok"
    base = [f for f in (server.directory / "appendonlydir").iterdir() if ".base." in f.name]
    assert len(base) == 1 and not base[0].read_bytes().startswith(b"REDIS")  # commands
    keys += fill_all(server, "n:")  # after the rewrite: in the AOF as the commands run
    before = state(server, keys)
    server.restart()
    assert_same(state(server, keys), before)
    # DEBUG LOADAOF: the same, replayed in a running server.
    r = server.client()
    r.execute_command("DEBUG", "LOADAOF")
    assert_same(state(server, keys), before)
    server.kill()


def test_replica_full_sync_and_command_stream(tmp_path):
    master = start_server(tmp_path / "master", options=DEBUG + ("--repl-diskless-sync-delay",
                                                                 "0"))
    keys = fill_all(master, "m:")  # reach the replica in the full sync
    replica = start_server(tmp_path / "replica", options=DEBUG + (
        "--replicaof", "127.0.0.1", str(master.port)))
    r = replica.client()
    wait_until(lambda: r.info("replication")["master_link_status"] == "up",
               "the replica's link to come up")
    keys += fill_all(master, "n:")  # reach it as commands
    m = master.client()
    assert m.execute_command("WAIT", 1, 60000) == 1

    def caught_up():
        offset = m.info("replication")["master_repl_offset"]
        info = r.info("replication")
        return info["master_link_status"] == "up" and info["slave_repl_offset"] == offset

    wait_until(caught_up, "the replica to catch up")
    assert_same(state(replica, keys), state(master, keys))
    replica.kill()
    master.kill()
