"""Damaged and hostile input, for a bounded time: random and mutated SCANDUMP headers and chunks
into BF.LOADCHUNK, mutated DUMP payloads (with a correct CRC64, so that they reach the
module's loader) into RESTORE. Every reply must be a value or an error, whatever loads must
answer every command, and the server must stay up. Seeded: a failure names its input."""

import math
import random
import struct
import time

import pytest

from module_util import (CHAIN_FIELDS, LINK_FIELDS, Error, Resp, Status, encode_header, items,
                         packed, parse_header, start_server, with_crc)

OK = Status("OK")

SECONDS = 3.3  # per part: three parts, 10 s in all
MIN_ROUNDS, MAX_ROUNDS = 50, 100000
EXTREMES = {
    "int": [0, 1, 2, 3, 7, 63, 64, 511, 512, 513, 4096, 2 ** 31 - 1, 2 ** 31, 2 ** 32 - 1],
    "big": [2 ** 32, 2 ** 32 + 512, 2 ** 53, 2 ** 63 - 1, 2 ** 64 - 1],
    "real": [0.0, -0.0, 1.0, -1.0, 0.5, 1e-300, 5e-324, 1e308, math.inf, -math.inf, math.nan],
}
WIDTH = {"layout": "I", "expansion": "I", "scaling": "B", "error_rate": "d", "capacity": "Q",
         "links": "I", "hashes": "I", "partitions": "Q", "partition_bits": "Q",
         "link_capacity": "Q", "target_error": "d", "items": "Q", "hash_scheme": "I"}


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    # Uncompressed DUMP strings, so that payloads can be taken apart and rebuilt here; a limit
    # per filter, so that what a hostile header asks for stays small.
    s = start_server(tmp_path_factory.mktemp("fuzz"), "MAX_FILTER_BYTES", "4m",
                     options=("--rdbcompression", "no", "--sanitize-dump-payload", "yes"))
    yield s
    s.kill()


@pytest.fixture(scope="module")
def seeds(server):
    """Real filters of several shapes: their SCANDUMP pieces and DUMP payloads."""
    with Resp(server.port) as raw:
        raw("BF.RESERVE", "multi", "0.01", "20", "EXPANSION", "3")
        raw("BF.MADD", "multi", *items("m", 200))
        raw("BF.RESERVE", "ns", "0.001", "50", "NONSCALING")
        raw("BF.MADD", "ns", *items("n", 50))
        raw("BF.ADD", "auto", "x")
        raw("BF.INSERT", "tiny", "CAPACITY", "1", "ERROR", "0.5", "ITEMS", "a", "b", "c")
        keys = ["multi", "ns", "auto", "tiny"]
        dumps = {}
        for key in keys:
            pieces, iterator = [], 0
            for _ in range(100):
                iterator, data = raw("BF.SCANDUMP", key, iterator)
                if iterator == 0:
                    break
                pieces.append((iterator, data))
            dumps[key] = (pieces, raw("DUMP", key))
        raw("FLUSHALL")
    return dumps


def mutate_fields(rng, header):
    chain = parse_header(header)
    for _ in range(rng.randint(1, 3)):
        target = chain if rng.random() < 0.4 else rng.choice(chain["link"])
        field = rng.choice(CHAIN_FIELDS if target is chain else LINK_FIELDS)
        if field == "link":
            continue
        kind = "real" if field in ("error_rate", "target_error") else \
            rng.choice(["int", "big"] if WIDTH.get(field, "Q") == "Q" else ["int"])
        value = rng.choice(EXTREMES[kind]) if rng.random() < 0.7 else \
            (rng.random() * 2 if kind == "real" else rng.getrandbits(16))
        if WIDTH.get(field) == "B":
            value &= 0xFF
        target[field] = value
    if rng.random() < 0.2:
        chain["link"].append(dict(rng.choice(chain["link"])))
    if rng.random() < 0.1 and len(chain["link"]) > 1:
        chain["link"].pop(rng.randrange(len(chain["link"])))
    try:
        return encode_header(chain)
    except struct.error:
        return header


def mutate_bytes(rng, data):
    data = bytearray(data)
    for _ in range(rng.randint(1, 4)):
        choice = rng.random()
        if choice < 0.5 and data:
            data[rng.randrange(len(data))] = rng.getrandbits(8)
        elif choice < 0.7 and data:
            at = rng.randrange(len(data))
            data[at] ^= 1 << rng.randrange(8)
        elif choice < 0.85:
            del data[rng.randrange(len(data) + 1):]
        else:
            at = rng.randrange(len(data) + 1)
            data[at:at] = rng.randbytes(rng.randint(1, 16))
    return bytes(data)


def random_header(rng, seeds):
    header = rng.choice(list(seeds.values()))[0][0][1]
    choice = rng.random()
    if choice < 0.1:
        return rng.randbytes(rng.randint(0, 400))
    if choice < 0.55:
        return mutate_fields(rng, header)
    return mutate_bytes(rng, header)


def exercise(raw, key):
    """Whatever loaded must answer every command with a value or an error."""
    replies = [raw("BF.INFO", key), raw("BF.CARD", key), raw("BF.EXISTS", key, "x"),
               raw("BF.MEXISTS", key, "a", "b", "c"), raw("BF.ADD", key, "fuzz"),
               raw("BF.MADD", key, *items("f", 50)), raw("RB.MADD", key, packed(items("g", 20))),
               raw("RB.MEXISTS", key, packed(items("g", 20))), raw("MEMORY", "USAGE", key),
               raw("COPY", key, key + ":copy")]
    iterator = 0
    for _ in range(20):
        reply = raw("BF.SCANDUMP", key, iterator)
        replies.append(reply)
        if isinstance(reply, Error) or reply[0] == 0:
            break
        iterator = reply[0]
    payload = raw("DUMP", key)
    replies.append(raw("RESTORE", key + ":restored", "0", payload, "REPLACE"))
    replies.append(raw("DEL", key, key + ":copy", key + ":restored"))
    assert raw("PING") == Status("PONG")
    return replies


def run(server, describe, body):
    """Runs body(rng) for SECONDS (MIN_ROUNDS at least, however slow the machine); a lost
    connection fails with the round's input."""
    rng = random.Random(20261124)
    deadline = time.monotonic() + SECONDS
    with Resp(server.port) as raw:
        for rounds in range(MAX_ROUNDS):
            if rounds >= MIN_ROUNDS and time.monotonic() > deadline:
                break
            state = rng.getstate()
            try:
                body(rng, raw)
            except (ConnectionError, OSError) as e:
                rng.setstate(state)
                pytest.fail("server lost (%s) on round %d: %s\n%s" % (
                    e, rounds, describe(rng), server.log_tail()))
        raw("FLUSHALL")
    assert server.alive(), server.log_tail()


def test_loadchunk_headers(server, seeds):
    def body(rng, raw):
        reply = raw("BF.LOADCHUNK", "f", "1", random_header(rng, seeds))
        if reply == OK:
            exercise(raw, "f")
        else:
            assert isinstance(reply, Error) and reply.startswith("ERR"), reply
            assert raw("EXISTS", "f") == 0

    run(server, lambda rng: "BF.LOADCHUNK f 1 %s" % random_header(rng, seeds).hex(), body)


def test_loadchunk_chunks(server, seeds):
    def chunk(rng):
        pieces = rng.choice(list(seeds.values()))[0]
        size = sum(len(data) for _, data in pieces[1:])
        iterator = rng.choice([rng.randint(-5, size + 70), size + 1, 2 ** 63 - 1, -2 ** 63,
                               rng.choice(pieces)[0]])
        data = rng.choice([rng.randbytes(rng.randint(0, 80)), rng.choice(pieces)[1],
                           mutate_bytes(rng, rng.choice(pieces)[1])])
        return pieces, iterator, data

    def body(rng, raw):
        pieces, iterator, data = chunk(rng)
        if raw("EXISTS", "c") == 0:
            assert raw("BF.LOADCHUNK", "c", *pieces[0]) == OK
        before = raw("BF.INFO", "c")
        reply = raw("BF.LOADCHUNK", "c", iterator, data)
        assert reply == OK or isinstance(reply, Error), reply
        assert raw("BF.INFO", "c") == before  # chunks write bits, never the shape
        if rng.random() < 0.1:
            exercise(raw, "c")

    run(server, lambda rng: "BF.LOADCHUNK c %d %s" % chunk(rng)[1:], body)


def split_dump(payload):
    """A module value's DUMP: type byte and module id (10 bytes), then (opcode 5, string)
    pairs, opcode 0; then the RDB version (2 bytes) and the CRC64 (8)."""
    body, at, strings = payload[:-10], 10, []

    def length():
        nonlocal at
        first = body[at]
        if first >> 6 == 0:
            at += 1
            return first
        if first >> 6 == 1:
            at += 2
            return (first & 0x3F) << 8 | body[at - 1]
        assert first in (0x80, 0x81), "an encoded string: DUMP with --rdbcompression no"
        width = 4 if first == 0x80 else 8
        at += 1 + width
        return int.from_bytes(body[at - width:at], "big")

    while True:
        opcode = length()
        if opcode == 0:
            break
        assert opcode == 5
        size = length()
        strings.append(body[at:at + size])
        at += size
    assert at == len(body)
    return payload[:10], strings, payload[-10:-8]


def rdb_length(n):
    if n < 64:
        return bytes([n])
    if n < 16384:
        return bytes([0x40 | n >> 8, n & 0xFF])
    return b"\x80" + n.to_bytes(4, "big") if n < 2 ** 32 else b"\x81" + n.to_bytes(8, "big")


def join_dump(prefix, strings, version):
    body = prefix + b"".join(rdb_length(5) + rdb_length(len(s)) + s for s in strings)
    return with_crc(body + rdb_length(0) + version)


def test_dump_payloads_round_trip_through_the_helpers(seeds):
    for pieces, payload in seeds.values():
        prefix, strings, version = split_dump(payload)
        assert strings == [data for _, data in pieces]
        assert join_dump(prefix, strings, version) == payload


def test_restore_refuses_another_encoding_version(server, seeds):
    payload = seeds["multi"][1]
    prefix, strings, version = split_dump(payload)
    module_id = int.from_bytes(prefix[2:10], "big")
    for encver in (0, 2, 1023):
        other = prefix[:2] + ((module_id & ~1023) | encver).to_bytes(8, "big")
        with Resp(server.port) as raw:
            reply = raw("RESTORE", "v", "0", join_dump(other, strings, version))
            assert isinstance(reply, Error), reply
            assert raw("EXISTS", "v") == 0
    assert server.alive()


def test_restore_damaged_payloads(server, seeds):
    def payload(rng):
        original = rng.choice(list(seeds.values()))[1]
        prefix, strings, version = split_dump(original)
        choice = rng.random()
        if choice < 0.3:  # anything after the module id, then a correct CRC
            return with_crc(prefix + mutate_bytes(rng, original[10:-8]))
        if choice < 0.7:
            strings = [random_header(rng, seeds)] + strings[1:]
        else:
            strings = list(strings)
            for _ in range(rng.randint(1, 3)):
                action = rng.random()
                if action < 0.4 and len(strings) > 1:
                    at = rng.randrange(1, len(strings))
                    strings[at] = mutate_bytes(rng, strings[at])
                elif action < 0.7:
                    del strings[rng.randrange(len(strings) + 1):]
                else:
                    strings.insert(rng.randrange(len(strings) + 1), rng.randbytes(
                        rng.randint(0, 100)))
        return join_dump(prefix, strings, version)

    def body(rng, raw):
        reply = raw("RESTORE", "d", "0", payload(rng), "REPLACE")
        if reply == OK:
            exercise(raw, "d")
        else:
            assert isinstance(reply, Error), reply
            assert raw("EXISTS", "d") == 0

    run(server, lambda rng: "RESTORE d 0 %s REPLACE" % payload(rng).hex(), body)


SHAPES = {  # filters whose headers are valid each on its own, of different options
    "grown": [("BF.RESERVE", "grown", "0.01", "20", "EXPANSION", "3"),
              ("BF.MADD", "grown", *items("m", 200))],
    "fixed": [("BF.RESERVE", "fixed", "0.001", "50", "NONSCALING"),
              ("BF.MADD", "fixed", *items("n", 50))],
    "auto": [("BF.ADD", "auto", "x")],
    "loose": [("BF.INSERT", "loose", "CAPACITY", "1", "ERROR", "0.5", "ITEMS", "a", "b", "c")],
    "tight": [("BF.RESERVE", "tight", "0.0001", "300", "EXPANSION", "2"),
              ("BF.MADD", "tight", *items("t", 700))],
    "tiny_rate": [("BF.RESERVE", "tiny_rate", "1e-30", "10", "EXPANSION", "1"),
                  ("BF.MADD", "tiny_rate", *items("r", 25))],
    "wide": [("BF.RESERVE", "wide", "0.05", "40", "EXPANSION", "5"),
             ("BF.MADD", "wide", *items("w", 100))],
}


def shape_dumps(raw):
    dumps = {}
    for key, commands in SHAPES.items():
        for command in commands:
            assert not isinstance(raw(*command), Error), command
        dumps[key] = split_dump(raw("DUMP", key))
    raw("FLUSHALL")
    return dumps


def restored(raw, prefix, strings, version):
    reply = raw("RESTORE", "mixed", "0", join_dump(prefix, strings, version), "REPLACE")
    assert reply == OK or isinstance(reply, Error), reply
    raw("DEL", "mixed")
    return reply == OK


def test_restore_refuses_options_of_one_filter_with_the_links_of_another(server):
    """Each header pairs the options of one real filter with the links (and bits) of another,
    or changes one link field to a value valid on its own but not what the options make: a
    filter loaded so would report a rate, size or growth it does not have."""
    with Resp(server.port) as raw:
        dumps = shape_dumps(raw)
        accepted, cases = [], 0
        for a, (prefix, strings_a, version) in dumps.items():
            chain_a = parse_header(strings_a[0])
            for b, (_, strings_b, _) in dumps.items():
                if a == b:
                    continue
                chain = parse_header(strings_b[0])
                for field in CHAIN_FIELDS[:-1]:
                    chain[field] = chain_a[field]
                cases += 1
                if restored(raw, prefix, [encode_header(chain)] + strings_b[1:], version):
                    accepted.append("options of %s, links of %s" % (a, b))
            for at in range(chain_a["links"]):
                for field, change in (("error_rate", lambda v: 1e-317), ("hashes", lambda v: v + 1),
                                      ("target_error", lambda v: v / 2),
                                      ("capacity", lambda v: v + 1),
                                      ("items", lambda v: max(v - 1, 0))):
                    chain = parse_header(strings_a[0])
                    link = chain["link"][at]
                    if field == "items" and at + 1 == chain["links"]:
                        continue  # the newest link may hold any count up to its capacity
                    link[field] = change(link[field])
                    cases += 1
                    if restored(raw, prefix, [encode_header(chain)] + strings_a[1:], version):
                        accepted.append("%s link %d with %s %r" % (a, at, field, link[field]))
        for key, (prefix, strings, version) in dumps.items():  # the originals still load
            assert restored(raw, prefix, strings, version), key
    assert cases > 100
    assert accepted == [], "%d of %d accepted: %s" % (len(accepted), cases, accepted)
    assert server.alive(), server.log_tail()


# RedisBloom-format filters (FORMAT redisbloom): RedisBloom's SCANDUMP header, little-endian,
# packed: items, links, options, expansion; per link bytes, bits, items, error, bits per entry,
# hashes, capacity, n2.
RB_CHAIN = struct.Struct("<QIII")
RB_LINK = struct.Struct("<QQQddIQB")
RB_LINK_KINDS = ["big", "big", "big", "real", "real", "int", "big", "int"]


@pytest.fixture(scope="module")
def redisbloom_seeds(server):
    with Resp(server.port) as raw:
        raw("BF.RESERVE", "rgrown", "0.01", "20", "EXPANSION", "3", "FORMAT", "redisbloom")
        raw("BF.MADD", "rgrown", *items("m", 300))
        raw("BF.RESERVE", "rfixed", "0.001", "50", "NONSCALING", "FORMAT", "redisbloom")
        raw("BF.MADD", "rfixed", *items("n", 50))
        # Past 64 sub-filters, the last ones at denormal error rates.
        raw("BF.RESERVE", "rlong", "1e-300", "1", "EXPANSION", "1", "FORMAT", "redisbloom")
        raw("BF.MADD", "rlong", *items("l", 120))
        dumps = {}
        for key in ("rgrown", "rfixed", "rlong"):
            pieces, iterator = [], 0
            for _ in range(1000):
                iterator, data = raw("BF.SCANDUMP", key, iterator)
                if iterator == 0:
                    break
                pieces.append((iterator, data))
            dumps[key] = (pieces, raw("DUMP", key))
        raw("FLUSHALL")
    return dumps


def mutate_redisbloom_header(rng, header):
    items_, count, options, expansion = RB_CHAIN.unpack_from(header)
    links = [list(RB_LINK.unpack_from(header, RB_CHAIN.size + i * RB_LINK.size))
             for i in range(count)]
    chain = [items_, count, options, expansion]
    for _ in range(rng.randint(1, 3)):
        if rng.random() < 0.3:
            at = rng.randrange(4)
            chain[at] = rng.choice(EXTREMES["big" if at == 0 else "int"]) & \
                (2 ** 64 - 1 if at == 0 else 2 ** 32 - 1)
        else:
            link = rng.choice(links)
            at = rng.randrange(len(link))
            kind = RB_LINK_KINDS[at]
            value = rng.choice(EXTREMES[kind]) if rng.random() < 0.7 else \
                (link[at] * rng.choice([0.5, 2, 0.999999]) if kind == "real"
                 else link[at] + rng.choice([-1, 1, 8, 64]))
            if kind != "real":
                value = int(value) % (2 ** {5: 32, 7: 8}.get(at, 64))
            link[at] = value
    if rng.random() < 0.2:
        links.append(list(rng.choice(links)))
    if rng.random() < 0.1 and len(links) > 1:
        links.pop(rng.randrange(len(links)))
    if rng.random() < 0.5:
        chain[1] = len(links)  # the count kept consistent, so the fields themselves are checked
    try:
        return RB_CHAIN.pack(*chain) + b"".join(RB_LINK.pack(*link) for link in links)
    except struct.error:
        return header


def test_redisbloom_format_headers_and_payloads(server, redisbloom_seeds):
    """RedisBloom-format headers with fields set to extremes or nudged (a rate halved or
    doubled, a count one off), into BF.LOADCHUNK; their DUMP payloads damaged, into RESTORE."""
    def loadchunk(rng):
        header = rng.choice(list(redisbloom_seeds.values()))[0][0][1]
        return mutate_redisbloom_header(rng, header) if rng.random() < 0.7 else \
            mutate_bytes(rng, header)

    def payload(rng):
        original = rng.choice(list(redisbloom_seeds.values()))[1]
        return with_crc(original[:10] + mutate_bytes(rng, original[10:-8]))

    def body(rng, raw):
        if rng.random() < 0.6:
            reply = raw("BF.LOADCHUNK", "r", "1", loadchunk(rng))
        else:
            reply = raw("RESTORE", "r", "0", payload(rng), "REPLACE")
        if reply == OK:
            exercise(raw, "r")
        else:
            assert isinstance(reply, Error), reply
            assert raw("EXISTS", "r") == 0

    run(server, lambda rng: "header %s / payload %s" % (loadchunk(rng).hex()[:400],
                                                        payload(rng).hex()[:400]), body)
