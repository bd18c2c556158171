"""The BF.* and RB.* commands one by one. Replies and error texts are RedisBloom 2.4.23's
(its transcript: /work/scratch/redisbloom/transcript.txt, NOTES.md) wherever the module claims
compatibility; the module's own where it differs on purpose: the type name, the sizes, and
EXPANSION below 1 (RedisBloom then answers 1 for items it never stores)."""

import subprocess

import pytest
import redis

from module_util import (FULL, TYPE_NAME, WRONGTYPE, Error, RedisServer, Resp, Status, arity,
                         free_port, info_dict, items, module_path, packed, parse_header, scandump,
                         wait_until)

BAD_EXPANSION = Error("ERR expansion must be between 1 and 32768")
NOT_FOUND = Error("ERR not found")
LABELS = ["Capacity", "Size", "Number of filters", "Number of items inserted", "Expansion rate"]


def header(r, key):
    return parse_header(r.execute_command("BF.SCANDUMP", key, 0)[1])


def info(raw, key):
    return info_dict(raw("BF.INFO", key))


def assert_consistent(chain_info, first, expansion):
    """Capacity is first + first*x + ... over the links; a link is added only when the ones
    before it are full."""
    links = chain_info["Number of filters"]
    capacities = [first * expansion ** i for i in range(links)]
    assert chain_info["Capacity"] == sum(capacities)
    assert sum(capacities[:-1]) < chain_info["Number of items inserted"] <= sum(capacities) \
        or links == 1


# --- arity --------------------------------------------------------------------------------

ARITY = [
    ["BF.RESERVE"], ["BF.RESERVE", "k"], ["BF.RESERVE", "k", "0.01"],
    ["BF.RESERVE", "k", "0.01", "100", "EXPANSION", "2", "NONSCALING", "x"],
    ["BF.RESERVE", "k", "0.01", "100", "EXPANSION", "3", "EXPANSION", "5"],
    ["BF.ADD"], ["BF.ADD", "k"], ["BF.ADD", "k", "x", "y"],
    ["BF.MADD"], ["BF.MADD", "k"],
    ["BF.INSERT"], ["BF.INSERT", "k"], ["BF.INSERT", "k", "a"], ["BF.INSERT", "k", "ITEMS"],
    ["BF.INSERT", "k", "CAPACITY", "10"], ["BF.INSERT", "k", "CAPACITY", "10", "ITEMS"],
    ["BF.INSERT", "k", "CAPACITY"], ["BF.INSERT", "k", "ERROR"], ["BF.INSERT", "k", "EXPANSION"],
    ["BF.EXISTS"], ["BF.EXISTS", "k"], ["BF.EXISTS", "k", "x", "y"],
    ["BF.MEXISTS"], ["BF.MEXISTS", "k"],
    ["BF.CARD"], ["BF.CARD", "k", "x"],
    ["BF.INFO"], ["BF.INFO", "k", "capacity", "x"],
    ["BF.SCANDUMP", "k"], ["BF.SCANDUMP", "k", "0", "x"],
    ["BF.LOADCHUNK", "k", "1"], ["BF.LOADCHUNK", "k", "1", "x", "y"],
    ["RB.MADD", "k"], ["RB.MADD", "k", "a", "b"], ["RB.MEXISTS", "k"],
    ["RB.PARTADD", "k"], ["RB.PARTEXISTS", "k", "1", "classic", "7", "512", "1", "0"],
    ["RB.VERSION", "x"],
]


@pytest.mark.parametrize("command", ARITY, ids=" ".join)
def test_wrong_arity(raw, command):
    assert raw(*command) == arity(command[0])
    assert raw("EXISTS", "k") == 0


def test_command_names_are_case_insensitive(raw):
    assert raw("bf.add", "lower", "x") == 1
    assert raw("Bf.Exists", "lower", "x") == 1
    assert raw("bF.mExIsTs", "lower", "x", "y") == [1, 0]


# --- BF.RESERVE ---------------------------------------------------------------------------

@pytest.mark.parametrize("rate,reply", [
    ("abc", "ERR bad error rate"), ("nan", "ERR bad error rate"),
    ("1e-400", "ERR bad error rate"), ("", "ERR bad error rate"),
    (" 0.01", "ERR bad error rate"),
    ("0", "ERR (0 < error rate range < 1) "), ("1", "ERR (0 < error rate range < 1) "),
    ("-1", "ERR (0 < error rate range < 1) "), ("1.5", "ERR (0 < error rate range < 1) "),
    ("inf", "ERR (0 < error rate range < 1) "),
])
def test_reserve_bad_error_rate(raw, rate, reply):
    assert raw("BF.RESERVE", "k", rate, "100") == Error(reply)
    assert raw("BF.RESERVE", "k", rate, "abc") == Error(reply)  # the rate is checked first
    assert raw("EXISTS", "k") == 0


@pytest.mark.parametrize("capacity,reply", [
    ("abc", "ERR bad capacity"), ("1e12", "ERR bad capacity"), ("1.5", "ERR bad capacity"),
    ("+5", "ERR bad capacity"), ("99999999999999999999", "ERR bad capacity"),
    ("0", "ERR (capacity should be larger than 0)"),
    ("-5", "ERR (capacity should be larger than 0)"),
])
def test_reserve_bad_capacity(raw, capacity, reply):
    assert raw("BF.RESERVE", "k", "0.01", capacity) == Error(reply)
    assert raw("EXISTS", "k") == 0


@pytest.mark.parametrize("options,reply", [
    (["EXPANSION"], "ERR no expansion"),
    (["NONSCALING", "EXPANSION"], "ERR no expansion"),
    (["EXPANSION", "abc"], "ERR bad expansion"),
    (["EXPANSION", "1.5"], "ERR bad expansion"),
    (["NONSCALING", "EXPANSION", "2"], "Nonscaling filters cannot expand"),
    (["EXPANSION", "2", "NONSCALING"], "Nonscaling filters cannot expand"),
    (["expansion", "2", "nonscaling"], "Nonscaling filters cannot expand"),
    # The module's own: RedisBloom takes these and then answers 1 for items it never stores.
    (["EXPANSION", "0"], BAD_EXPANSION), (["EXPANSION", "-1"], BAD_EXPANSION),
    (["EXPANSION", "32769"], BAD_EXPANSION),
])
def test_reserve_bad_expansion(raw, options, reply):
    assert raw("BF.RESERVE", "k", "0.01", "100", *options) == Error(reply)
    assert raw("EXISTS", "k") == 0


def test_reserve(r, raw):
    assert raw("BF.RESERVE", "r1", "0.01", "1000") == Status("OK")
    assert raw("TYPE", "r1") == Status(TYPE_NAME)
    i = info(raw, "r1")
    assert list(i) == LABELS
    assert [type(label) for label in raw("BF.INFO", "r1")[::2]] == [Status] * 5
    assert (i["Capacity"], i["Number of filters"], i["Number of items inserted"],
            i["Expansion rate"]) == (1000, 1, 0, 2)
    assert raw("BF.RESERVE", "r1", "0.01", "1000") == Error("ERR item exists")
    h = header(r, "r1")
    assert (h["error_rate"], h["capacity"], h["expansion"], h["scaling"]) == (0.01, 1000, 2, 1)
    assert h["link"][0]["target_error"] == 0.005  # the first link at half the rate

    assert raw("BF.RESERVE", "r2", "0.001", "500", "EXPANSION", "4") == Status("OK")
    assert raw("BF.INFO", "r2", "expansion") == [4]
    assert raw("BF.RESERVE", "r3", "0.01", "100", "NONSCALING") == Status("OK")
    assert info(raw, "r3")["Expansion rate"] is None
    assert header(r, "r3")["link"][0]["target_error"] == 0.01  # one link at the whole rate
    assert raw("BF.RESERVE", "r4", "0.01", "100", "expansion", "3") == Status("OK")
    assert raw("BF.INFO", "r4", "expansion") == [3]
    assert raw("BF.RESERVE", "r5", "0.01", "100", "nonscaling") == Status("OK")
    assert raw("BF.INFO", "r5", "expansion") == [None]
    assert raw("BF.RESERVE", "r6", "0.01", "100", "EXPANSION", "32768") == Status("OK")
    assert raw("BF.RESERVE", "r7", "1e-300", "1") == Status("OK")
    assert raw("BF.RESERVE", "r8", "0.999999", "1") == Status("OK")
    assert raw("BF.RESERVE", "r9", "0.01", "100", "NONSCALING", "NONSCALING") == Status("OK")


def test_reserve_finds_options_anywhere_and_ignores_unknown_words(raw):
    # RedisBloom looks for EXPANSION and NONSCALING among all the arguments, the key included,
    # and ignores words it does not know (up to its 7 arguments).
    assert raw("BF.RESERVE", "r10", "0.01", "100", "foo") == Status("OK")
    assert raw("BF.RESERVE", "r11", "0.01", "100", "foo", "bar", "baz") == Status("OK")
    assert raw("BF.RESERVE", "EXPANSION", "0.01", "100") == Error("ERR bad expansion")
    assert raw("BF.RESERVE", "NONSCALING", "0.01", "100") == Status("OK")
    assert raw("BF.INFO", "NONSCALING", "expansion") == [None]


# --- BF.ADD / BF.MADD / BF.EXISTS / BF.MEXISTS / BF.CARD ------------------------------------

def test_auto_create_defaults(r, raw):
    for command in (["BF.ADD", "a", "x"], ["BF.MADD", "m", "x"], ["BF.INSERT", "i", "ITEMS", "x"]):
        assert raw(*command) in (1, [1])
        key = command[1]
        i = info(raw, key)
        assert (i["Capacity"], i["Number of filters"], i["Number of items inserted"],
                i["Expansion rate"]) == (100, 1, 1, 2)
        h = header(r, key)
        assert (h["capacity"], h["error_rate"], h["expansion"], h["scaling"]) == (100, 0.01, 2, 1)
        assert h["layout"] == 2  # blocked unless the module is loaded with LAYOUT classic


def test_add_madd_exists(raw):
    assert raw("BF.ADD", "a1", "x") == 1
    assert raw("BF.ADD", "a1", "x") == 0
    assert raw("BF.ADD", "a1", "y") == 1
    assert raw("BF.ADD", "a1", "") == 1
    assert raw("BF.ADD", "a1", "") == 0
    assert raw("BF.ADD", "a1", "with space") == 1
    assert raw("BF.EXISTS", "a1", "with space") == 1
    assert raw("BF.ADD", "a1", b"\x00\xff\x01") == 1
    assert raw("BF.EXISTS", "a1", b"\x00\xff\x01") == 1
    assert raw("BF.MADD", "a1", "x", "y", "z", "w") == [0, 0, 1, 1]
    assert raw("BF.MADD", "a2", "p", "q", "p") == [1, 1, 0]
    assert raw("BF.CARD", "a1") == 7
    assert raw("BF.CARD", "a2") == 2
    assert raw("BF.EXISTS", "a1", "x") == 1
    assert raw("BF.MEXISTS", "a1", "x", "y", "z", "") == [1, 1, 1, 1]
    assert raw("BF.MEXISTS", "a1", "x") == [1]
    absent = raw("BF.MEXISTS", "a1", *items("absent", 200))
    assert sum(absent) <= 10  # 0.01 at capacity; a filter 7% full answers 0 for almost all


def test_missing_key(raw):
    assert raw("BF.EXISTS", "nokey", "x") == 0
    assert raw("BF.MEXISTS", "nokey", "x", "y") == [0, 0]
    assert raw("BF.CARD", "nokey") == 0
    assert raw("BF.INFO", "nokey") == NOT_FOUND
    assert raw("BF.INFO", "nokey", "capacity") == NOT_FOUND
    assert raw("BF.SCANDUMP", "nokey", "0") == NOT_FOUND
    assert raw("BF.LOADCHUNK", "nokey", "2", "abc") == NOT_FOUND
    assert raw("BF.LOADCHUNK", "nokey", "1", "abc") == Error("ERR received bad data")
    assert raw("BF.INSERT", "nokey", "NOCREATE", "ITEMS", "a") == NOT_FOUND
    assert raw("BF.INSERT", "nokey", "NOCREATE", "NONSCALING", "ITEMS", "a") == NOT_FOUND
    assert raw("RB.MEXISTS", "nokey", packed([b"x", b"y"])) == b"\x00\x00"
    assert raw("DBSIZE") == 0


def test_wrong_type(raw):
    assert raw("SET", "str", "hello") == Status("OK")
    for command in (["BF.RESERVE", "str", "0.01", "100"], ["BF.ADD", "str", "x"],
                    ["BF.MADD", "str", "x", "y"], ["BF.INSERT", "str", "ITEMS", "x"],
                    ["BF.INSERT", "str", "NOCREATE", "ITEMS", "x"], ["BF.INFO", "str"],
                    ["BF.INFO", "str", "capacity"], ["BF.CARD", "str"],
                    ["BF.SCANDUMP", "str", "0"], ["BF.LOADCHUNK", "str", "1", "abc"],
                    ["RB.MADD", "str", packed([b"x"])], ["RB.MEXISTS", "str", packed([b"x"])]):
        assert raw(*command) == WRONGTYPE, command
    # RedisBloom reads another type as no filter here, without WRONGTYPE.
    assert raw("BF.EXISTS", "str", "x") == 0
    assert raw("BF.MEXISTS", "str", "x", "y") == [0, 0]
    assert raw("GET", "str") == b"hello"


# --- scaling and non-scaling ---------------------------------------------------------------

def test_small_scaling_filter(raw):
    assert raw("BF.RESERVE", "sc", "0.01", "3") == Status("OK")
    assert raw("BF.MADD", "sc", "a1", "a2", "a3") == [1, 1, 1]
    assert (info(raw, "sc")["Capacity"], info(raw, "sc")["Number of filters"]) == (3, 1)
    added = [raw("BF.ADD", "sc", "a%d" % n) for n in range(4, 23)]
    assert set(added) <= {0, 1}
    i = info(raw, "sc")
    assert i["Number of items inserted"] == 3 + sum(added) == raw("BF.CARD", "sc")
    assert i["Number of filters"] > 1
    assert_consistent(i, 3, 2)
    assert raw("BF.MEXISTS", "sc", *["a%d" % n for n in range(1, 23)]) == [1] * 22
    assert raw("BF.RESERVE", "sc3", "0.01", "5", "EXPANSION", "3") == Status("OK")
    added = raw("BF.MADD", "sc3", *["b%d" % n for n in range(1, 40)])
    assert_consistent(info(raw, "sc3"), 5, 3)
    assert info(raw, "sc3")["Number of items inserted"] == sum(added)


def test_non_scaling_filter_full(raw):
    assert raw("BF.RESERVE", "ns", "0.01", "2", "NONSCALING") == Status("OK")
    # RedisBloom's array ends at the refused item: later items are neither added nor answered.
    assert raw("BF.MADD", "ns", "x1", "x2", "x3", "x4") == [1, 1, FULL]
    assert raw("BF.ADD", "ns", "x5") == FULL
    assert raw("BF.ADD", "ns", "x1") == 0
    assert raw("BF.MADD", "ns", "x2", "x1") == [0, 0]
    assert raw("BF.EXISTS", "ns", "x1") == 1
    assert raw("BF.INSERT", "ns", "ITEMS", "x1", "x6", "x7") == [0, FULL]
    assert raw("BF.MEXISTS", "ns", "x1", "x2") == [1, 1]
    i = info(raw, "ns")
    assert (i["Capacity"], i["Number of filters"], i["Number of items inserted"],
            i["Expansion rate"]) == (2, 1, 2, None)
    assert raw("BF.CARD", "ns") == 2
    assert raw("BF.INSERT", "i6", "CAPACITY", "2", "NONSCALING", "ITEMS", "a", "b", "c", "d") \
        == [1, 1, FULL]


# --- BF.INSERT ----------------------------------------------------------------------------

@pytest.mark.parametrize("options,reply", [
    (["FOO"], "Unknown argument received"),
    (["CAPACITY", "abc"], "Bad capacity"), (["CAPACITY", "1e12"], "Bad capacity"),
    (["CAPACITY", "0"], "Bad argument received"), (["CAPACITY", "-5"], "Bad argument received"),
    (["ERROR", "abc"], "Bad error rate"),
    (["ERROR", "0"], "Bad argument received"), (["ERROR", "1"], "Bad argument received"),
    (["ERROR", "-1"], "Bad argument received"), (["ERROR", "1.5"], "Bad argument received"),
    (["EXPANSION", "abc"], "Bad expansion"),
    (["EXPANSION", "0"], "Bad argument received"), (["EXPANSION", "-1"], "Bad argument received"),
    (["EXPANSION", "32769"], BAD_EXPANSION),  # the module's limit
])
def test_insert_bad_option(raw, options, reply):
    assert raw("BF.INSERT", "i8", *options, "ITEMS", "a") == Error(reply)
    assert raw("EXISTS", "i8") == 0


def test_insert_checks_options_as_it_reads_them(raw):
    assert raw("BF.INSERT", "i8", "CAPACITY", "abc") == Error("Bad capacity")
    assert raw("BF.INSERT", "i8", "capacity", "abc", "ITEMS", "a") == Error("Bad capacity")
    assert raw("EXISTS", "i8") == 0


def test_insert_options(r, raw):
    assert raw("BF.INSERT", "i1", "ITEMS", "a", "b") == [1, 1]
    assert raw("BF.INSERT", "i2", "CAPACITY", "50", "ERROR", "0.001", "EXPANSION", "4", "ITEMS",
               "a", "b", "a") == [1, 1, 0]
    i = info(raw, "i2")
    assert (i["Capacity"], i["Number of items inserted"], i["Expansion rate"]) == (50, 2, 4)
    assert header(r, "i2")["error_rate"] == 0.001
    assert raw("BF.INSERT", "i3", "capacity", "50", "error", "0.001", "expansion", "4", "items",
               "a") == [1]
    assert info(raw, "i3") == dict(i, **{"Number of items inserted": 1})
    # NONSCALING with EXPANSION: RedisBloom's BF.INSERT takes both and ignores the expansion.
    assert raw("BF.INSERT", "i4", "NONSCALING", "EXPANSION", "3", "ITEMS", "a") == [1]
    assert info(raw, "i4")["Expansion rate"] is None
    assert raw("BF.INSERT", "i1", "NOCREATE", "ITEMS", "a", "c") == [0, 1]
    # The creation options are ignored on an existing filter.
    before = info(raw, "i1")
    assert raw("BF.INSERT", "i1", "CAPACITY", "999", "ERROR", "0.5", "NONSCALING", "ITEMS",
               "z") == [1]
    assert info(raw, "i1") == dict(before, **{"Number of items inserted": 4})
    assert raw("BF.INSERT", "i7", "CAPACITY", "3", "ITEMS", "a", "b", "c", "d", "e") == [1] * 5
    assert (info(raw, "i7")["Capacity"], info(raw, "i7")["Number of filters"]) == (9, 2)
    # Everything after ITEMS is an item; a repeated option wins last.
    assert raw("BF.INSERT", "i9", "ITEMS", "a", "CAPACITY") == [1, 1]
    assert raw("BF.INSERT", "i12", "CAPACITY", "1", "ITEMS", "ITEMS", "CAPACITY",
               "NOCREATE") == [1, 1, 1]
    assert raw("BF.INSERT", "i10", "CAPACITY", "10", "CAPACITY", "20", "ERROR", "0.1", "ERROR",
               "0.2", "EXPANSION", "3", "EXPANSION", "5", "ITEMS", "a") == [1]
    assert (info(raw, "i10")["Capacity"], info(raw, "i10")["Expansion rate"]) == (20, 5)
    assert header(r, "i10")["error_rate"] == 0.2
    # RedisBloom tells options apart by their first letters.
    assert raw("BF.INSERT", "i11", "c", "10", "er", "0.1", "ex", "3", "i", "a") == [1]
    assert (info(raw, "i11")["Capacity"], info(raw, "i11")["Expansion rate"]) == (10, 3)
    assert raw("BF.INSERT", "i13", "ITEMS", "a", "a") == [1, 0]


# --- BF.INFO ------------------------------------------------------------------------------

def test_info_fields(raw):
    raw("BF.RESERVE", "sc", "0.01", "3")
    raw("BF.MADD", "sc", *items("sc", 30))
    whole = info(raw, "sc")
    assert whole["Number of filters"] > 1
    for field, label in zip(["capacity", "size", "filters", "items", "expansion"], LABELS):
        for spelling in (field, field.upper(), field.capitalize()):
            assert raw("BF.INFO", "sc", spelling) == [whole[label]]
    for bad in ("Number of filters", "bogus", ""):
        assert raw("BF.INFO", "sc", bad) == Error("Invalid information value")
    raw("BF.RESERVE", "ns", "0.01", "2", "NONSCALING")
    assert raw("BF.INFO", "ns", "expansion") == [None]


def test_size_and_memory_usage_cover_the_bits(raw):
    # Any Bloom filter at rate p needs n*ln(1/p)/ln(2)^2 bits at least.
    raw("BF.RESERVE", "big", "0.01", "100000")
    least = 100000 * 4.605170 / 0.480453 / 8
    size = raw("BF.INFO", "big", "size")[0]
    assert size >= least
    assert raw("MEMORY", "USAGE", "big") >= size
    raw("BF.MADD", "big", *items("m", 1000))
    assert raw("BF.INFO", "big", "size") == [size]


# --- SCANDUMP / LOADCHUNK ------------------------------------------------------------------

def test_scandump_and_loadchunk_errors(r, raw):
    raw("BF.RESERVE", "src", "0.01", "5", "EXPANSION", "3")
    raw("BF.MADD", "src", *items("s", 8))
    pieces = scandump(r, "src")
    assert pieces[0][0] == 1 and len(pieces) == 3  # the header, then one chunk per link
    assert raw("BF.SCANDUMP", "src", "abc") == Error("Second argument must be numeric")
    assert raw("BF.SCANDUMP", "src", "-5") == [0, b""]
    assert raw("BF.SCANDUMP", "src", "99999") == [0, b""]
    end = pieces[-1][0]
    assert raw("BF.LOADCHUNK", "src", "abc", "abc") == Error("ERR Second argument must be numeric")
    assert raw("BF.LOADCHUNK", "src", "1", pieces[0][1]) == Error("ERR received bad data")
    assert raw("BF.LOADCHUNK", "src", "0", "abc") == Error("ERR received bad data")
    assert raw("BF.LOADCHUNK", "src", "-3", "abc") == Error("ERR received bad data")
    assert raw("BF.LOADCHUNK", "src", "2", "abc") == Error("ERR received bad data")
    assert raw("BF.LOADCHUNK", "src", end + 100, "abc") == \
        Error("ERR invalid offset - no link found")
    first_link_end = pieces[1][0]
    assert raw("BF.LOADCHUNK", "src", first_link_end + 2, "abc") == \
        Error("ERR invalid chunk - Too big for current filter")  # across two links
    assert raw("BF.LOADCHUNK", "src", "9", "") == Status("OK")
    assert raw("BF.LOADCHUNK", "dst", "1", "") == Error("ERR received bad data")
    assert raw("BF.LOADCHUNK", "dst", "1", b"rbchain\x01") == Error("ERR received bad data")
    assert raw("BF.LOADCHUNK", "dst", "1", pieces[0][1][:-1]) == Error("ERR received bad data")
    assert raw("BF.LOADCHUNK", "dst", "1", pieces[0][1] + b"x") == Error("ERR received bad data")
    assert raw("EXISTS", "dst") == 0
    assert raw("BF.MEXISTS", "src", *items("s", 8)) == [1] * 8


def test_loadchunk_header_only_has_counts_but_no_bits(r, raw):
    raw("BF.MADD", "src", *items("s", 8))
    header_piece = scandump(r, "src")[0]
    assert raw("BF.LOADCHUNK", "dst", *header_piece) == Status("OK")
    assert info(raw, "dst") == info(raw, "src")
    assert raw("BF.CARD", "dst") == 8
    assert raw("BF.MEXISTS", "dst", *items("s", 8)) == [0] * 8


# --- RB.MADD / RB.MEXISTS --------------------------------------------------------------------

def test_packed_commands_agree_with_bf(raw):
    batch = items("p", 3000) + items("p", 100)  # the repeats are present
    raw("BF.RESERVE", "bf", "0.01", "500")
    raw("BF.RESERVE", "rb", "0.01", "500")
    expected = raw("BF.MADD", "bf", *batch)
    got = raw("RB.MADD", "rb", packed(batch))
    assert list(got) == expected
    assert info(raw, "rb") == info(raw, "bf")
    probe = items("p", 3000, start=1500)
    assert list(raw("RB.MEXISTS", "rb", packed(probe))) == raw("BF.MEXISTS", "bf", *probe)
    assert raw("RB.MADD", "rb", b"") == b""
    assert raw("RB.MEXISTS", "rb", b"") == b""
    assert raw("RB.MADD", "rb", packed([b"", b"\x00\xff" * 300])) == b"\x01\x01"
    assert raw("RB.MEXISTS", "rb", packed([b"", b"\x00\xff" * 300])) == b"\x01\x01"
    assert raw("RB.MADD", "auto", packed([b"x"])) == b"\x01"  # created as BF.MADD creates
    assert info(raw, "auto")["Capacity"] == 100


@pytest.mark.parametrize("data", [b"\x01", b"\x01\x00\x00", b"\x05\x00\x00\x00abcd",
                                  packed([b"ok"]) + b"\x02\x00\x00\x00x",
                                  b"\xff\xff\xff\xff"])
def test_packed_items_malformed(raw, data):
    reply = "ERR packed items end inside an item"
    assert raw("RB.MADD", "k", data) == Error(reply)
    assert raw("RB.MEXISTS", "k", data) == Error(reply)
    assert raw("EXISTS", "k") == 0


def test_packed_add_refused_items(raw):
    raw("BF.RESERVE", "ns", "0.01", "2", "NONSCALING")
    assert raw("RB.MADD", "ns", packed([b"x1", b"x2", b"x1"])) == b"\x01\x01\x00"
    assert raw("RB.MADD", "ns", packed([b"x1", b"x3"])) == b"\x00\x02"
    assert raw("BF.CARD", "ns") == 2


def test_packed_add_answers_every_item_after_a_refusal(raw):
    # One byte per item, 0 present / 1 added / 2 refused: the items after a refused one are not
    # added either, so they are refused, never "present".
    raw("BF.RESERVE", "ns", "0.01", "2", "NONSCALING")
    raw("BF.MADD", "ns", "x1", "x2")
    assert raw("RB.MADD", "ns", packed([b"x3", b"x4", b"x5"])) == b"\x02\x02\x02"
    assert raw("BF.CARD", "ns") == 2


def test_packed_commands_on_redisbloom_format_filters(raw):
    # RB.MADD / RB.MEXISTS answer on RedisBloom's type as BF.MADD / BF.MEXISTS do, and past a
    # refused item of a full non-scaling filter every later new item is refused too.
    batch = items("q", 2000) + items("q", 50)
    raw("BF.RESERVE", "a", "0.01", "300", "FORMAT", "redisbloom")
    raw("BF.RESERVE", "b", "0.01", "300", "FORMAT", "redisbloom")
    assert list(raw("RB.MADD", "a", packed(batch))) == raw("BF.MADD", "b", *batch)
    assert raw("TYPE", "a") == Status("MBbloom--")
    assert info(raw, "a") == info(raw, "b")
    probe = items("q", 3000, start=1000)
    assert list(raw("RB.MEXISTS", "a", packed(probe))) == raw("BF.MEXISTS", "b", *probe)
    raw("BF.RESERVE", "ns", "0.01", "2", "NONSCALING", "FORMAT", "redisbloom")
    assert raw("RB.MADD", "ns", packed([b"x1", b"x2", b"x1", b"x3", b"x2"])) == \
        b"\x01\x01\x00\x02\x00"
    assert raw("BF.CARD", "ns") == 2


@pytest.mark.parametrize("fmt", ["redbloom", "redisbloom"])
def test_filter_id_tells_a_filter_made_again_at_the_same_key(r, raw, fmt):
    assert raw("BF.RESERVE", "f", "0.01", "100", "FORMAT", fmt) == Status("OK")
    first = raw("RB.FILTERID", "f")
    assert isinstance(first, int) and first > 0
    raw("BF.MADD", "f", *items("a", 500))  # grows: the same filter
    assert raw("RB.FILTERID", "f") == first
    raw("DEL", "f")
    assert raw("RB.FILTERID", "f") is None
    raw("BF.RESERVE", "f", "0.01", "100", "FORMAT", fmt)
    again = raw("RB.FILTERID", "f")
    assert again > 0 and again != first
    raw("BF.INSERT", "g", "FORMAT", fmt, "ITEMS", "x")  # made by an add
    assert raw("RB.FILTERID", "g") not in (0, first, again)
    dump = scandump(r, "f")
    raw("DEL", "f")
    for iterator, data in dump:
        raw("BF.LOADCHUNK", "f", iterator, data)
    assert raw("RB.FILTERID", "f") not in (0, first, again)
    # Loaded by the server: an id of 0 (its origin is not known), never a new one.
    raw("DEBUG", "RELOAD")
    assert raw("RB.FILTERID", "f") == 0 and raw("RB.FILTERID", "g") == 0
    raw("SET", "s", "x")
    assert raw("RB.FILTERID", "s") is None and raw("RB.FILTERID", "missing") is None
    assert raw("RB.FILTERID") == arity("RB.FILTERID")


def test_rb_version(raw):
    version = raw("RB.VERSION")
    assert isinstance(version, int) and version >= 1


def test_module_list(raw):
    modules = [dict(zip(m[::2], m[1::2])) for m in raw("MODULE", "LIST")]
    assert [m[b"name"] for m in modules] == [b"redbloom"]


# --- keyspace: TYPE, EXPIRE, COPY, DUMP/RESTORE, notifications -----------------------------------

def test_expire_and_ttl(r, raw):
    raw("BF.ADD", "e", "x")
    assert raw("EXPIRE", "e", "100") == 1
    assert 0 < raw("TTL", "e") <= 100
    assert raw("BF.ADD", "e", "y") == 1
    assert 0 < raw("TTL", "e") <= 100  # an add keeps the expiry
    assert raw("PEXPIRE", "e", "1") == 1
    wait_until(lambda: raw("EXISTS", "e") == 0, "the filter to expire")
    assert raw("BF.EXISTS", "e", "x") == 0
    assert raw("BF.CARD", "e") == 0


def test_rename_unlink(raw):
    raw("BF.MADD", "old", "a", "b")
    assert raw("RENAME", "old", "new") == Status("OK")
    assert raw("BF.MEXISTS", "new", "a", "b") == [1, 1]
    assert raw("BF.CARD", "old") == 0
    assert raw("UNLINK", "new") == 1
    assert raw("BF.CARD", "new") == 0


def test_error_rates_above_a_half(r, raw):
    # Accepted, as RedisBloom accepts them; a link is sized for 0.5 at most.
    assert raw("BF.RESERVE", "hi", "0.9", "100") == Status("OK")
    assert raw("BF.MADD", "hi", *items("h", 100)).count(1) > 30
    assert raw("BF.MEXISTS", "hi", *items("h", 100)) == [1] * 100
    h = header(r, "hi")
    assert (h["error_rate"], h["link"][0]["target_error"]) == (0.9, 0.45)


def test_copy_is_independent(r, raw):
    raw("BF.RESERVE", "src", "0.01", "100")
    raw("BF.MADD", "src", *items("c", 300))
    assert raw("COPY", "src", "dst") == 1
    assert raw("TYPE", "dst") == Status(TYPE_NAME)
    assert info(raw, "dst") == info(raw, "src")
    probe = items("c", 1000)
    assert raw("BF.MEXISTS", "dst", *probe) == raw("BF.MEXISTS", "src", *probe)
    assert raw("DEBUG", "DIGEST-VALUE", "src")[0] == raw("DEBUG", "DIGEST-VALUE", "dst")[0]
    assert raw("COPY", "src", "dst") == 0
    card = raw("BF.CARD", "src")
    raw("BF.MADD", "dst", *items("new", 50))
    assert raw("BF.CARD", "src") == card
    assert raw("BF.MEXISTS", "src", *items("new", 50)).count(1) <= 5


def test_dump_restore(r, raw):
    raw("BF.RESERVE", "src", "0.01", "50")
    raw("BF.MADD", "src", *items("d", 400))
    payload = r.dump("src")
    assert raw("RESTORE", "dst", "0", payload) == Status("OK")
    assert raw("TYPE", "dst") == Status(TYPE_NAME)
    assert info(raw, "dst") == info(raw, "src")
    probe = items("d", 1000)
    assert raw("BF.MEXISTS", "dst", *probe) == raw("BF.MEXISTS", "src", *probe)
    assert raw("DEBUG", "DIGEST-VALUE", "src")[0] == raw("DEBUG", "DIGEST-VALUE", "dst")[0]
    assert raw("RESTORE", "dst", "0", payload) == Error("BUSYKEY Target key name already exists.")
    assert raw("RESTORE", "dst", "0", payload, "REPLACE") == Status("OK")


def test_keyspace_notifications(server, r):
    r.config_set("notify-keyspace-events", "Eg")
    p = server.client().pubsub()
    p.psubscribe("__keyevent@0__:*")

    def next_message(kind):
        for _ in range(60):
            m = p.get_message(timeout=1.0)
            if m and m["type"] == kind:
                return m
        pytest.fail("no %s message" % kind)

    def next_event():
        m = next_message("pmessage")
        return m["channel"].decode().split(":", 1)[1], m["data"].decode()

    next_message("psubscribe")  # subscribed before the first command
    r.execute_command("BF.RESERVE", "n1", 0.01, 100)
    assert next_event() == ("bf.reserve", "n1")
    r.execute_command("BF.ADD", "n1", "x")
    assert next_event() == ("bf.add", "n1")
    r.execute_command("BF.ADD", "n1", "x")  # nothing changed: no event; the next one is n2's
    r.execute_command("BF.MADD", "n2", "x", "y")
    assert next_event() == ("bf.madd", "n2")
    r.execute_command("BF.INSERT", "n3", "ITEMS", "x")
    assert next_event() == ("bf.insert", "n3")
    r.execute_command("RB.MADD", "n4", packed([b"x"]))
    assert next_event() == ("bf.madd", "n4")
    piece = r.execute_command("BF.SCANDUMP", "n1", 0)
    r.execute_command("BF.LOADCHUNK", "n5", *piece)
    assert next_event() == ("bf.loadchunk", "n5")
    r.set("part", b"\x00" * 65)  # a partition of redbloom's plain-string filters
    r.execute_command("RB.PARTADD", "part", 65, "classic", 7, 512, 1, 0, packed([b"x"]))
    assert next_event() == ("rb.partadd", "part")
    r.delete("n5")
    assert next_event() == ("del", "n5")
    p.close()


# --- module arguments ------------------------------------------------------------------------

def test_module_arguments_set_the_defaults(make_server):
    s = make_server("ERROR_RATE", "0.004", "initial_size", "400", "EXPANSION", "3", "LAYOUT",
                    "classic")
    c = s.client()
    assert c.execute_command("BF.ADD", "k", "x") == 1
    h = parse_header(c.execute_command("BF.SCANDUMP", "k", 0)[1])
    assert (h["capacity"], h["error_rate"], h["expansion"], h["layout"]) == (400, 0.004, 3, 1)
    assert c.execute_command("BF.RESERVE", "r", 0.01, 10) in (b"OK", True)
    assert parse_header(c.execute_command("BF.SCANDUMP", "r", 0)[1])["layout"] == 1


def test_module_load_at_run_time(tmp_path):
    server = RedisServer(tmp_path, "--enable-module-command", "yes")
    try:
        with Resp(server.port) as raw:
            assert raw("MODULE", "LOAD", module_path(), "LAYOUT", "classic",
                       "CF_MAX_EXPANSIONS", "32") == Status("OK")
            assert raw("BF.ADD", "k", "x") == 1
            assert parse_header(raw("BF.SCANDUMP", "k", "0")[1])["layout"] == 1
            # A module whose type has values cannot go away under them.
            assert isinstance(raw("MODULE", "UNLOAD", "redbloom"), Error)
            assert raw("BF.EXISTS", "k", "x") == 1
    finally:
        server.kill()


@pytest.mark.parametrize("args", [["LAYOUT", "bogus"], ["LAYOUT"], ["ERROR_RATE", "1"],
                                  ["ERROR_RATE", "abc"], ["INITIAL_SIZE", "0"],
                                  ["EXPANSION", "0"], ["MAX_FILTER_BYTES", "12x"],
                                  ["MAX_FILTER_BYTES", "0"], ["NOSUCH", "1"]])
def test_bad_module_arguments_fail_the_load(tmp_path, args):
    log = tmp_path / "redis.log"
    process = subprocess.Popen(["redis-server", "--port", str(free_port()), "--bind", "127.0.0.1", "--save",
                                "", "--dir", str(tmp_path), "--logfile", str(log),
                                "--loadmodule", module_path(), *args])
    try:
        assert process.wait(60) != 0
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert "redbloom:" in log.read_text()


# --- redis-py's bf() ------------------------------------------------------------------------

def test_redis_py_bf_api(r):
    bf = r.bf()
    assert bf.create("f", 0.01, 1000)
    with pytest.raises(redis.ResponseError, match="item exists"):
        bf.create("f", 0.01, 1000)
    assert bf.add("f", "a") == 1
    assert bf.add("f", "a") == 0
    assert bf.madd("f", "b", "c", "a") == [1, 1, 0]
    assert bf.exists("f", "b") == 1
    assert bf.mexists("f", "a", "b", "zz") == [1, 1, 0]
    assert bf.insert("g", ["x", "y"], capacity=10, error=0.001, expansion=4) == [1, 1]
    assert bf.insert("f", ["d"], noCreate=True) == [1]
    with pytest.raises(redis.ResponseError, match="not found"):
        bf.insert("nope", ["x"], noCreate=True)
    i = bf.info("g")
    assert (i.capacity, i.filterNum, i.insertedNum, i.expansionRate) == (10, 1, 2, 4)
    assert bf.info("f").insertedNum == 4
    assert bf.create("n", 0.01, 10, noScale=True)
    assert bf.info("n").expansionRate is None
    # redis-py 4.3 has no bf().card: the command itself.
    assert r.execute_command("BF.CARD", "f") == 4
    pieces = []
    it = 0
    for _ in range(100):
        it, data = bf.scandump("g", it)
        if it == 0:
            break
        pieces.append((it, data))
    for it, data in pieces:
        assert bf.loadchunk("g2", it, data)
    assert bf.mexists("g2", "x", "y") == [1, 1]
