"""Helpers for the module's tests: servers with redbloom.so loaded, packed batches, DUMP's
CRC64, the filter header's fields, SCANDUMP/LOADCHUNK loops, and replies recorded from
RedisBloom replayed byte for byte."""

import math
import os
import re
import shutil
import struct
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "support"))
from redis_server import RedisServer, free_port, wait_until  # noqa: E402,F401
from resp import Error, Resp, Status  # noqa: E402,F401

# The connection the fixture scripts record RedisBloom's replies with.
sys.path.insert(0, str(Path(__file__).resolve().parent / "fixtures" / "redisbloom"))
from recorder import Raw  # noqa: E402

TYPE_NAME = "redbloomF"
WRONGTYPE = Error("WRONGTYPE Operation against a key holding the wrong kind of value")
MEMORY_LIMIT = Error("ERR filter cannot grow: it would pass the module's memory limit per filter "
                     "(MAX_FILTER_BYTES) or its 64 sub-filters")
FULL = Error("ERR non scaling filter is full")


def module_path():
    path = os.environ.get("REDBLOOM_MODULE")
    if not path or not os.path.isfile(path):
        pytest.fail("REDBLOOM_MODULE must name the built redbloom.so (ctest sets it), got %r" % path)
    return path


def start_server(directory, *module_args, options=(), wrapper=()):
    """A server with the module loaded (module_args after its path), started in directory
    (under wrapper, a memory checker's command line, when given)."""
    directory.mkdir(parents=True, exist_ok=True)
    return RedisServer(directory, *options, "--loadmodule", module_path(), *module_args,
                       wrapper=wrapper)


def arity(command):
    return Error("ERR wrong number of arguments for '%s' command" % command.lower())


def items(prefix, count, start=0):
    return [b"%s:%d" % (prefix.encode(), i) for i in range(start, start + count)]


def packed(batch):
    return b"".join(struct.pack("<I", len(item)) + item for item in batch)


def info_dict(reply):
    """BF.INFO's flat array as {label: value}."""
    labels = [x.decode() if isinstance(x, bytes) else str(x) for x in reply[::2]]
    return dict(zip(labels, reply[1::2]))


# Redis's crc64 (src/crc64.c): Jones polynomial, reflected, initial value 0, no final xor.
_CRC_TABLE = []
for _byte in range(256):
    _crc = _byte
    for _ in range(8):
        _crc = (_crc >> 1) ^ 0x95AC9329AC4BC9B5 if _crc & 1 else _crc >> 1
    _CRC_TABLE.append(_crc)


def crc64(data, crc=0):
    for byte in data:
        crc = _CRC_TABLE[(crc ^ byte) & 0xFF] ^ (crc >> 8)
    return crc


def with_crc(body_and_version):
    """A DUMP payload: the serialized value and 2-byte RDB version, then their CRC64."""
    return body_and_version + struct.pack("<Q", crc64(body_and_version))


# chain_format.hpp: "rbchain\x01", then the chain's options and one record per link.
_CHAIN = struct.Struct("<IIBdQI")
_LINK = struct.Struct("<IIQQQddQI")
CHAIN_FIELDS = ("layout", "expansion", "scaling", "error_rate", "capacity", "links")
LINK_FIELDS = ("layout", "hashes", "partitions", "partition_bits", "capacity", "error_rate",
               "target_error", "items", "hash_scheme")


def parse_header(header):
    assert header[:8] == b"rbchain\x01"
    chain = dict(zip(CHAIN_FIELDS, _CHAIN.unpack_from(header, 8)))
    at = 8 + _CHAIN.size
    chain["link"] = []
    for _ in range(chain["links"]):
        chain["link"].append(dict(zip(LINK_FIELDS, _LINK.unpack_from(header, at))))
        at += _LINK.size
    assert at == len(header)
    return chain


def encode_header(chain):
    out = b"rbchain\x01" + _CHAIN.pack(*(chain[f] for f in CHAIN_FIELDS))
    for link in chain["link"]:
        out += _LINK.pack(*(link[f] for f in LINK_FIELDS))
    return out


def scandump(r, key, limit=10000):
    """Every (iterator, data) pair of BF.SCANDUMP, the header first, until [0, ""]."""
    pieces, iterator = [], 0
    for _ in range(limit):
        iterator, data = r.execute_command("BF.SCANDUMP", key, iterator)
        if iterator == 0:
            return pieces
        pieces.append((iterator, data))
    pytest.fail("BF.SCANDUMP %s did not end within %d chunks" % (key, limit))


def loadchunks(r, key, pieces):
    for iterator, data in pieces:
        assert r.execute_command("BF.LOADCHUNK", key, iterator, data) in (b"OK", True)


# Filters of every shape, and what a client sees of them, for before/after comparisons.

PROBE = items("a", 300) + items("b", 300) + items("absent", 2000)


def populate(r, prefix=""):
    """Filters of every shape: auto-created, scaled over several links, non-scaling and full,
    with INSERT's options, from packed items, from LOADCHUNK."""
    r.execute_command("BF.ADD", prefix + "auto", "x")
    r.execute_command("BF.RESERVE", prefix + "scaled", 0.01, 50, "EXPANSION", 3)
    r.execute_command("BF.MADD", prefix + "scaled", *items("a", 300))
    r.execute_command("BF.RESERVE", prefix + "full", 0.001, 20, "NONSCALING")
    r.execute_command("BF.MADD", prefix + "full", *items("a", 30))
    r.execute_command("BF.INSERT", prefix + "insert", "CAPACITY", 10, "ERROR", 0.2, "ITEMS",
                      *items("b", 300))
    r.execute_command("RB.MADD", prefix + "packed", packed(items("a", 200)))
    loadchunks(r, prefix + "loaded", scandump(r, prefix + "scaled"))
    r.execute_command("BF.ADD", prefix + "expiring", "x")
    r.expire(prefix + "expiring", 100000)
    return [prefix + k for k in ("auto", "scaled", "full", "insert", "packed", "loaded",
                                 "expiring")]


def snapshot(r, keys, dataset=True):
    """Everything a client can see of the filters: INFO, CARD, answers, the dumped bits (and
    the digest of the whole dataset)."""
    state = {}
    for key in keys:
        assert r.type(key).decode() == TYPE_NAME
        state[key] = (info_dict(r.execute_command("BF.INFO", key)),
                      r.execute_command("BF.CARD", key),
                      r.execute_command("BF.MEXISTS", key, *PROBE),
                      scandump(r, key))
    if dataset:
        state["digest"] = r.execute_command("DEBUG", "DIGEST")
    return state


# Replies recorded from RedisBloom (fixtures/redisbloom/*/replies.json), replayed byte for byte.
class RawReplies(Raw):
    """A connection that returns each reply as the text (latin-1) of the bytes the server sent."""

    def __init__(self, port, resp3=False):
        super().__init__(port, resp3, timeout=60)

    def call(self, *args):
        return super().call(*args).decode("latin-1")


def data_from_fixtures(fixtures, tmp_path, names=("dump.rdb",)):
    """A server's data directory under tmp_path holding copies of the named files (or
    directories) of a fixtures directory."""
    directory = tmp_path / "data"
    directory.mkdir(parents=True, exist_ok=True)
    for name in names:
        source = fixtures / name
        if source.is_dir():
            shutil.copytree(source, directory / name)
        else:
            shutil.copy(source, directory / name)
    return directory


def server_on_fixture(fixtures, tmp_path, *options):
    """A server (DEBUG allowed) started on the dump.rdb of a fixtures directory."""
    return start_server(data_from_fixtures(fixtures, tmp_path),
                        options=("--enable-debug-command", "yes") + options)


def dumps_restore_byte_for_byte(r, key_type):
    """Whether the DUMP of every key of `key_type` RESTOREs under a new name to the same DUMP."""
    for k in r.keys("*"):
        if r.type(k) != key_type:
            continue
        payload = r.dump(k)
        r.restore(b"again:" + k, 0, payload)
        if r.dump(b"again:" + k) != payload:
            return False
    return True


def own_save_aof_and_restore_answer(server, data_directory, reads, digest=False):
    """The module's own RDB (a restart), then its own AOF rewrite (RESTORE of each key's DUMP,
    no RDB preamble, replayed by DEBUG LOADAOF), each answering `reads` (recorded commands and
    replies) as recorded (and, with `digest`, holding the same DEBUG DIGEST); then every key's
    DUMP RESTOREs to itself. The differences found."""
    r = server.client()
    dumps = {k: r.dump(k) for k in r.keys("*")}
    before = r.execute_command("DEBUG", "DIGEST") if digest else None
    differences = []

    def same_digest(when):
        if digest and server.client().execute_command("DEBUG", "DIGEST") != before:
            differences.append(("DEBUG DIGEST", when))

    r.save()
    server.restart()
    differences += replay(server, reads)
    same_digest("after the restart")
    r = server.client()
    r.config_set("aof-use-rdb-preamble", "no")
    r.config_set("appendonly", "yes")
    wait_until(lambda: r.info("persistence")["aof_rewrite_in_progress"] == 0 and
               r.info("persistence")["aof_rewrite_scheduled"] == 0, "the AOF rewrite")
    base = list(data_directory.glob("appendonlydir/*.base.aof"))
    assert len(base) == 1 and b"RESTORE" in base[0].read_bytes()
    r.execute_command("DEBUG", "LOADAOF")  # empties the data set, then replays the AOF
    differences += replay(server, reads)
    same_digest("after the AOF")
    r = server.client()
    for k, payload in dumps.items():
        r.restore(b"copy:" + k, 0, payload)
        if r.dump(b"copy:" + k) != payload:
            differences.append(("DUMP of a RESTOREd copy", k))
    return differences


_NUMBER = re.compile(rb"(\$\d+\r\n|,)([-+0-9.eEinfa]+)\r\n")


def same_values(expected, got):
    """Whether two replies hold the same values: byte for byte, or with each number the same
    double (Redis 7.2 and later write doubles in their shortest form, 7.0 with 17 digits)."""
    if expected == got:
        return True

    def values(reply):
        numbers = []

        def keep(m):
            try:
                v = float(m.group(2))
            except ValueError:
                return m.group(0)
            numbers.append(v)
            return b"#\r\n"
        return _NUMBER.sub(keep, reply.encode("latin-1")), numbers

    (shape_e, e), (shape_g, g) = values(expected), values(got)
    return shape_e == shape_g and len(e) == len(g) and all(
        a == b or (math.isnan(a) and math.isnan(b)) for a, b in zip(e, g))


def replay(server, recorded):
    """Each recorded command on the server; the ones whose reply differs, with both replies."""
    resp2, resp3 = RawReplies(server.port), RawReplies(server.port, resp3=True)
    differences = []
    try:
        for command, expected in recorded:
            conn = resp3 if command[0] == "RESP3" else resp2
            args = command[1:] if command[0] == "RESP3" else command
            got = conn.call(*args)
            if not same_values(expected, got):
                differences.append((command[:4], expected[:200], got[:200]))
    finally:
        resp2.close()
        resp3.close()
    return differences
