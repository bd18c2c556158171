"""RB.PARTADD / RB.PARTEXISTS on redbloom's plain-string partitions (src/core/redis_format.hpp:
partition i of filter NAME is NAME:bits:{NAME:i}, partition_bits/8 bytes and a zero seal byte),
and the same bits as the library: filters the redbloom CLI writes without the module (BITFIELD)
answer RB.PARTEXISTS, and partitions RB.PARTADD writes answer the CLI on a server without it."""

import subprocess

import pytest
import redis

from module_util import WRONGTYPE, Error, RedisServer, Resp, Status, items, packed, start_server
from built_programs import redbloom_cli  # noqa: E402 (module_util puts tests/support on the path)

BITS = 16384  # 2 KiB: 200 items leave false positives out of the picture
SEALED = BITS // 8 + 1
LAYOUTS = {b"1": "classic", b"2": "blocked"}


def part(raw, command, key, batch, sealed=SEALED, layout="classic", hashes=7, bits=BITS,
         partitions=1, index=0):
    return raw(command, key, sealed, layout, hashes, bits, partitions, index, packed(batch))


@pytest.mark.parametrize("layout", ["classic", "blocked"])
def test_partadd_and_partexists(raw, layout):
    raw("SET", "p", b"\x00" * SEALED)
    batch = items("x", 200)
    assert part(raw, "RB.PARTADD", "p", batch, layout=layout) == b"\x01" * 200
    assert part(raw, "RB.PARTADD", "p", batch, layout=layout) == b"\x00" * 200
    assert part(raw, "RB.PARTEXISTS", "p", batch, layout=layout) == b"\x01" * 200
    stored = raw("GET", "p")
    assert len(stored) == SEALED and stored[-1:] == b"\x00"  # the seal is left alone
    assert part(raw, "RB.PARTADD", "p", [b"y", b"y"], layout=layout) == b"\x01\x00"
    assert part(raw, "RB.PARTEXISTS", "p", [], layout=layout) == b""
    # Without the seal byte in the length: a partition of a version-1 filter.
    raw("SET", "old", b"\x00" * (SEALED - 1))
    assert part(raw, "RB.PARTADD", "old", batch, sealed=SEALED - 1, layout=layout) == \
        b"\x01" * 200
    assert raw("GET", "old") == stored[:-1]


def test_partition_lost(raw):
    lost = "REDBLOOMLOST"
    for command in ("RB.PARTADD", "RB.PARTEXISTS"):
        reply = part(raw, command, "missing", [b"a"])
        assert isinstance(reply, Error) and reply.startswith(lost), reply
        assert raw("EXISTS", "missing") == 0
    raw("SET", "short", b"\x00" * (SEALED - 1))  # recreated without its seal
    raw("SET", "long", b"\x00" * (SEALED + 7))
    for key in ("short", "long"):
        for command in ("RB.PARTADD", "RB.PARTEXISTS"):
            reply = part(raw, command, key, [b"a"])
            assert isinstance(reply, Error) and reply.startswith(lost), reply
    assert raw("GET", "short") == b"\x00" * (SEALED - 1)


def test_partition_wrong_type(raw):
    raw("RPUSH", "list", "a")
    raw("BF.ADD", "filter", "a")
    for key in ("list", "filter"):
        for command in ("RB.PARTADD", "RB.PARTEXISTS"):
            assert part(raw, command, key, [b"a"]) == WRONGTYPE


@pytest.mark.parametrize("args", [
    dict(layout="bogus"), dict(hashes=0), dict(hashes="x"), dict(bits=1000), dict(bits=0),
    dict(bits=-512), dict(partitions=0), dict(index=1), dict(index=-1), dict(sealed=SEALED + 1),
    dict(sealed=SEALED - 2), dict(sealed="x"), dict(bits=2 ** 33), dict(hashes=10 ** 6),
    dict(partitions=2 ** 32 + 1), dict(partitions=2 ** 63 - 1, index=2 ** 62),
    dict(index=2 ** 63 - 1), dict(sealed=2 ** 63 - 1), dict(bits=2 ** 63 - 512),
])
def test_partition_bad_arguments(raw, args):
    raw("SET", "p", b"\x00" * SEALED)
    for command in ("RB.PARTADD", "RB.PARTEXISTS"):
        reply = part(raw, command, "p", [b"a"], **args)
        assert isinstance(reply, Error) and reply.startswith("ERR bad partition"), reply
    assert raw("GET", "p") == b"\x00" * SEALED


def test_partition_malformed_items(raw):
    raw("SET", "p", b"\x00" * SEALED)
    for command in ("RB.PARTADD", "RB.PARTEXISTS"):
        reply = raw(command, "p", SEALED, "classic", 7, BITS, 1, 0, b"\x09\x00\x00\x00abc")
        assert reply == Error("ERR packed items end inside an item")
    assert raw("GET", "p") == b"\x00" * SEALED


def test_items_of_another_partition_are_refused(raw):
    raw("SET", "p0", b"\x00" * SEALED)
    raw("SET", "p1", b"\x00" * SEALED)
    batch = items("z", 100)
    replies = raw.pipeline([["RB.PARTADD", "p%d" % index, SEALED, "classic", 7, BITS, 2, index,
                             packed([item])] for item in batch for index in (0, 1)])
    for item, (at0, at1) in zip(batch, zip(replies[::2], replies[1::2])):
        # Each item belongs to exactly one of the two partitions.
        accepted = [reply for reply in (at0, at1) if not isinstance(reply, Error)]
        refused = [reply for reply in (at0, at1) if isinstance(reply, Error)]
        assert accepted == [b"\x01"], item
        assert refused == [Error("ERR item 0 belongs to another partition")], item
    mixed = part(raw, "RB.PARTADD", "p0", batch, partitions=2)
    assert isinstance(mixed, Error) and "belongs to another partition" in mixed
    assert isinstance(part(raw, "RB.PARTEXISTS", "p0", batch, partitions=2), Error)


def hashed(pairs):
    """Items given as their 128-bit hashes: (low, high) halves, 16 bytes each."""
    return b"".join(lo.to_bytes(8, "little") + hi.to_bytes(8, "little") for lo, hi in pairs)


def test_hashed_items(raw):
    """RB.PARTADDH / RB.PARTEXISTSH take the hashes the client routed the items by (the library
    checks that they set the same bits as RB.PARTADD of the items: test_module_store)."""
    raw("SET", "h", b"\x00" * SEALED)
    rng = __import__("random").Random(7)
    pairs = [(rng.getrandbits(64), rng.getrandbits(64)) for _ in range(200)]

    def h(command, batch, **kw):
        return raw(command, "h", SEALED, kw.get("layout", "classic"), 7, BITS,
                   kw.get("partitions", 1), kw.get("index", 0), hashed(batch))
    assert h("RB.PARTEXISTSH", pairs) == b"\x00" * 200
    assert h("RB.PARTADDH", pairs) == b"\x01" * 200
    assert h("RB.PARTADDH", pairs) == b"\x00" * 200
    assert h("RB.PARTEXISTSH", pairs) == b"\x01" * 200
    assert h("RB.PARTEXISTSH", [(1, 2)]) == b"\x00"
    for command in ("RB.PARTADDH", "RB.PARTEXISTSH"):
        reply = raw(command, "h", SEALED, "classic", 7, BITS, 1, 0, b"\x00" * 15)
        assert reply == Error("ERR hashed items are 16 bytes each")
        # The partition is the low 32 bits of the low half times partitions, over 2^32.
        assert h(command, [(0xFFFFFFFF, 0)], partitions=2, index=1) in (b"\x00", b"\x01")
        assert h(command, [(0xFFFFFFFF, 0)], partitions=2, index=0) == \
            Error("ERR item 0 belongs to another partition")
    assert raw("RB.VERSION") >= 5


# --- the same bits as the library ---------------------------------------------------------------

@pytest.fixture(scope="module")
def cli():
    return redbloom_cli()


def run_cli(cli, *args, lines=()):
    result = subprocess.run([cli, *args, "-q"], input=b"".join(x + b"\n" for x in lines),
                            capture_output=True, timeout=120)
    assert result.returncode in (0, 1), result.stderr.decode()
    return result.stdout.splitlines()


def copy_keys(source, target, keys):
    for key in keys:
        assert target("RESTORE", key, 0, source("DUMP", key), "REPLACE") == Status("OK")


class Filter:
    def __init__(self, raw, name):
        meta = dict(zip(*[iter(raw("HGETALL", name))] * 2))
        self.partitions = int(meta[b"partitions"])
        self.bits = int(meta[b"partition_bits"])
        self.args = [self.bits // 8 + 1, LAYOUTS[meta[b"layout"]], int(meta[b"hashes"]),
                     self.bits, self.partitions]
        self.keys = [name] + ["%s:bits:{%s:%d}" % (name, name, i) for i in range(self.partitions)]

    def command(self, command, index, batch):
        return [command, self.keys[index + 1], *self.args, index, packed(batch)]

    def partition_of(self, raw, batch):
        """Each item's partition: the one index of all whose RB.PARTEXISTS does not refuse it."""
        replies = raw.pipeline([self.command("RB.PARTEXISTS", index, [item])
                                for item in batch for index in range(self.partitions)])
        found = []
        for n in range(len(batch)):
            mine = [i for i in range(self.partitions)
                    if not isinstance(replies[n * self.partitions + i], Error)]
            assert len(mine) == 1, (batch[n], replies[n * self.partitions:][:self.partitions])
            found.append(mine[0])
        return found

    def call(self, raw, command, batch):
        """command on every item, each sent to its partition; a byte per item, in order."""
        where = self.partition_of(raw, batch)
        answers = [None] * len(batch)
        for index in range(self.partitions):
            mine = [n for n in range(len(batch)) if where[n] == index]
            reply = raw(*self.command(command, index, [batch[n] for n in mine]))
            assert not isinstance(reply, Error), reply
            for n, answer in zip(mine, reply):
                answers[n] = answer
        return answers


@pytest.mark.parametrize("layout", ["blocked", "classic"])
def test_cli_same_bits_as_the_module(tmp_path, cli, layout):
    (tmp_path / "plain").mkdir()
    plain = RedisServer(tmp_path / "plain")  # no module: the CLI writes with BITFIELD
    with_module = start_server(tmp_path / "module")
    try:
        with Resp(plain.port) as p, Resp(with_module.port) as m:
            assert isinstance(p("RB.VERSION"), Error)
            run_cli(cli, "create", "--redis", plain.url, "--name", "f", "-n", "20000", "-p",
                    "0.01", "--layout", layout, "--partition-size", "8KiB")
            by_cli, by_module, probe = items("cli", 300), items("mod", 300), items("probe", 3000)
            run_cli(cli, "add", "--redis", plain.url, "--name", "f", lines=by_cli)
            f = Filter(p, "f")
            assert f.partitions > 1
            copy_keys(p, m, f.keys)
            # The module finds what the library set, in the partition the library chose.
            assert f.call(m, "RB.PARTEXISTS", by_cli) == [1] * 300
            assert f.call(m, "RB.PARTADD", by_cli) == [0] * 300
            assert f.call(m, "RB.PARTADD", by_module).count(1) >= 295
            # ... and the library finds what the module set, answering the same for all.
            copy_keys(m, p, f.keys[1:])
            present = run_cli(cli, "exists", "--redis", plain.url, "--name", "f",
                              lines=by_module + probe)
            answers = f.call(m, "RB.PARTEXISTS", by_module + probe)
            assert present == [x for x, a in zip(by_module + probe, answers) if a == 1]
            assert set(by_module) <= set(present)
            # The CLI on the module's server goes through RB.PARTEXISTS / RB.PARTADD itself.
            assert run_cli(cli, "exists", "--redis", with_module.url, "--name", "f",
                           lines=by_module + probe) == present
            run_cli(cli, "add", "--redis", with_module.url, "--name", "f",
                    lines=items("late", 100))
            assert f.call(m, "RB.PARTEXISTS", items("late", 100)) == [1] * 100
    finally:
        plain.kill()
        with_module.kill()


def test_bf_clients_answer_for_a_cli_filter(r, server, cli):
    """redis-py's r.bf() on a filter the CLI made (a hash and string partitions): the module
    hashes its items on the server, so every held item answers 1 and absent ones answer what
    the CLI answers; adds through BF.* reach the CLI."""
    uri = "redis://127.0.0.1:%d" % server.port
    where = ["--redis", uri, "--name", "urls"]
    run_cli(cli, "create", *where, "-n", "100000", "-p", "0.001", "--partition-size", "16KiB")
    held = items("held", 10000)
    run_cli(cli, "add", *where, lines=held)
    assert r.bf().mexists("urls", *held) == [1] * len(held)
    assert r.bf().exists("urls", held[42]) == 1
    absent = items("absent", 3000)
    cli_present = set(run_cli(cli, "exists", *where, lines=absent))
    assert r.bf().mexists("urls", *absent) == [int(x in cli_present) for x in absent]
    assert r.bf().add("urls", "via-bf") == 1
    assert r.bf().madd("urls", "via-bf", held[0]) == [0, 0]
    assert run_cli(cli, "exists", *where, lines=[b"via-bf"]) == [b"via-bf"]
    info = r.bf().info("urls")
    assert (info.capacity, info.filterNum, info.insertedNum, info.expansionRate) == \
        (100000, 1, None, None)
    with pytest.raises(redis.ResponseError, match="redbloom plain filter"):
        r.execute_command("BF.CARD", "urls")  # redis-py 4.3 has no bf().card
