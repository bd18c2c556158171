"""The module's commands under valgrind's memcheck, fed hostile arguments for a bounded time:
integers at the ends of their ranges (slice numbers and times near 2^63, counts, lengths,
offsets), one key named in two places, keys of other types and lengths, damaged packed items.
Every command must answer with a value or an error, memcheck must see no invalid access in
the server, and an add that answers "new" must leave the item found. Seeded: a failure names
the command that caused it, and the same seed replays it."""

import random
import re
import shutil
import struct
import time

import pytest

from module_util import Error, Resp, Status, items, packed, start_server, with_crc
from test_fuzz import join_dump, mutate_bytes, mutate_fields, split_dump

SEED = 20261126
SECONDS = 12  # of random commands per test, after the directed ones
MIN_ROUNDS, MAX_ROUNDS = 150, 100000

# Debian's redis-server allocates with jemalloc: memcheck replaces its allocator too, so that
# it sees every block the server hands the module (strings, arguments, the filters).
MEMCHECK = ("valgrind", "--tool=memcheck", "--soname-synonyms=somalloc=libjemalloc.so*",
            "--error-exitcode=99", "--track-origins=no", "--leak-check=no")
ERROR_LINE = re.compile(r"==\d+== (Invalid (read|write|free)|Conditional jump|Use of uninit|"
                        r"Syscall param|Mismatched free|Source and destination overlap|"
                        r"Process terminating|Jump to the invalid|Argument .* fishy)")

I64_MAX, I64_MIN = 2 ** 63 - 1, -2 ** 63
EXTREME = [I64_MAX, I64_MAX - 1, I64_MAX - 2, I64_MIN, I64_MIN + 1, -1, -2, 0, 1, 2,
           2 ** 31 - 1, 2 ** 31, 2 ** 32 - 1, 2 ** 32, 2 ** 32 + 1, 2 ** 53, 2 ** 62,
           2 ** 63 - 512, 2 ** 64, -2 ** 64, "x", "", "1.5", "0x10"]
HEADER = 8 * (1 + 2 * 4)


class Memcheck:
    """A server under memcheck, and what its log said since the last look."""

    def __init__(self, directory):
        self.log_path = directory / "memcheck.log"
        # LZF compression reads its own uninitialised hash table by design (a false report
        # on every save): saves here are uncompressed. A crash skips the server's memory test,
        # which would take minutes under memcheck.
        # A small limit per filter: memcheck makes every byte a filter asks for slow.
        self.server = start_server(directory, "MAX_FILTER_BYTES", "4m", options=(
            "--enable-debug-command", "yes", "--rdbcompression", "no",
            "--crash-memcheck-enabled", "no"),
            wrapper=MEMCHECK + ("--log-file=%s" % self.log_path,))
        self.seen = 0

    def new_errors(self):
        text = self.log_path.read_text(errors="replace")
        fresh, self.seen = text[self.seen:], len(text)
        return fresh if ERROR_LINE.search(fresh) else None

    def stop(self):
        """A clean shutdown, then memcheck's count of errors over the whole run."""
        self.server.stop(timeout=120)
        summary = re.findall(r"ERROR SUMMARY: (\d+) errors", self.log_path.read_text())
        return int(summary[-1]) if summary else None


def stop_and_check(checked):
    """Stops a server under memcheck; fails if it died or memcheck counted any error."""
    alive = checked.server.alive()
    errors = checked.stop()
    assert alive, "redis-server died under memcheck:\n" + checked.server.log_tail()
    assert errors == 0, "memcheck counted %s errors:\n%s" % (
        errors, checked.log_path.read_text(errors="replace")[-6000:])


def run_on_fixture_under_memcheck(tmp_path, rdb, use):
    """A server under memcheck started on a fixture's RDB file; use(client, port) works on it,
    then the whole is saved and loaded again. Fails on any invalid access memcheck saw, or if
    the server died."""
    directory = tmp_path / "memcheck"
    directory.mkdir()
    shutil.copy(rdb, directory / "dump.rdb")
    checked = Memcheck(directory)
    try:
        use(checked.server.client(), checked.server.port)
        checked.server.client().execute_command("DEBUG", "RELOAD")
        assert checked.new_errors() is None, checked.new_errors()
    finally:
        stop_and_check(checked)


@pytest.fixture
def memcheck(tmp_path):
    checked = Memcheck(tmp_path / "memcheck")
    yield checked
    stop_and_check(checked)


def send(memcheck, raw, command, description=None):
    """Runs one command; fails with it when the server is lost or memcheck reports an error."""
    shown = description or " ".join(repr(a) for a in command)[:3000]
    try:
        reply = raw(*command)
    except (ConnectionError, OSError) as e:
        pytest.fail("server lost (%s) on: %s\n%s\n%s" % (
            e, shown, memcheck.server.log_tail(), memcheck.new_errors() or ""))
    errors = memcheck.new_errors()
    if errors:
        pytest.fail("memcheck reports an error on: %s\n%s" % (shown, errors[-6000:]))
    return reply


def timed_rounds(body):
    rng = random.Random(SEED)
    deadline = time.monotonic() + SECONDS
    for rounds in range(MAX_ROUNDS):
        if rounds >= MIN_ROUNDS and time.monotonic() > deadline:
            return rounds
        body(rng)
    return MAX_ROUNDS


def prepare_keys(raw):
    """Keys of every kind the commands may meet."""
    raw("FLUSHALL")
    raw("RPUSH", "list", "a")
    raw("HSET", "hash", "a", "b")
    raw("SET", "num", "12345")  # kept as a number, not as bytes
    raw("SET", "short", b"\x00" * 7)
    raw("SET", "part", b"\x00" * 513)  # a partition of 4096 bits and its seal
    raw("BF.ADD", "filter", "x")


# RB.STREAM numkeys roster slices... mode now-ms slice-ms older first header-bytes M budget
#           partitions index M x (layout hashes partition-bits capacity) packed-items

def stream_command(keys, mode="a", now=5, slice_ms=0, older=0, first=0, header=HEADER,
                   links=((b"blocked", 7, 4096, 100),), budget=0, partitions=1, index=0,
                   batch=(), numkeys=None):
    command = ["RB.STREAM", len(keys) if numkeys is None else numkeys, *keys, mode, now,
               slice_ms, older, first, header, len(links), budget, partitions, index]
    for link in links:
        command.extend(link)
    command.append(packed(batch))
    return command


def check_added_items_are_found(memcheck, raw, command, reply):
    """An add that answered "new" for an item must leave it found by a lookup with the same
    arguments (the claim that broke when the roster was also named as a slice)."""
    if isinstance(reply, Error) or not isinstance(reply, list) or reply[0] != b"ok":
        return
    mode_at = 2 + int(command[1])
    if command[mode_at + 2] != 0:
        return  # slices of a window expire at an absolute time, long past for small times
    flags = reply[2]
    lookup = list(command)
    lookup[mode_at] = "l"
    lookup[mode_at + 1] = reply[5]  # the time the add used
    found = send(memcheck, raw, lookup)
    assert isinstance(found, list) and found[0] == b"ok", (command, reply, found)
    for i, flag in enumerate(flags[:reply[1]]):
        if flag == ord("1"):
            assert found[2][i] == ord("1"), \
                "item %d answered new but is not found: %r -> %r, lookup %r" % (
                    i, command, reply, found)


# Each was a crash or an invalid access: slice numbers at the end of the i64 range, where a
# loop over slices wrapped and read past the arguments; the roster named as a slice, whose
# bytes moved under the slice that pointed at them.
DIRECTED_STREAM = [
    dict(keys=("r", "s0", "s1"), now=I64_MAX, slice_ms=1, first=I64_MAX - 1),
    dict(keys=("r", "s0", "s1"), now=I64_MAX, slice_ms=1, first=I64_MAX - 1, mode="l"),
    dict(keys=("r", "s0", "s1"), now=I64_MAX, slice_ms=1, first=I64_MAX - 1, mode="i"),
    dict(keys=("r", "s0"), now=I64_MAX, slice_ms=1, first=I64_MAX),
    dict(keys=("r", "s0", "s1", "s2"), now=I64_MAX, slice_ms=1, first=I64_MAX - 2, older=1),
    dict(keys=("r", "s0", "s1"), now=I64_MAX, slice_ms=1, first=I64_MAX - 1, older=2 ** 31 - 1),
    dict(keys=("r", "s0", "s1"), now=I64_MAX - 1, slice_ms=1, first=I64_MAX - 1),
    dict(keys=("r", "s0", "s1"), now=I64_MAX, slice_ms=2 ** 62, first=0, older=1),
    dict(keys=("r", "s0", "s1"), now=I64_MAX, slice_ms=I64_MAX, first=0, older=1),
    dict(keys=("r", "s0", "s1"), now=0, slice_ms=1, first=I64_MIN),
    dict(keys=("r", "s0", "s1"), now=5, slice_ms=1, first=I64_MIN + 1, older=2 ** 31 - 1),
    dict(keys=("r", "s0", "s1"), now=I64_MIN, slice_ms=1, first=0),
    dict(keys=("r", "r"), batch=items("x", 20)),
    dict(keys=("r", "s0", "r"), batch=items("x", 20)),
    dict(keys=("r", "r", "s1"), batch=items("x", 20)),
    dict(keys=("r", "s0", "s0"), batch=items("x", 20)),
    dict(keys=("r", "s0", "s0"), batch=items("x", 20), slice_ms=10, now=15, older=1),
    dict(keys=("r", "s0", "s1", "s0"), batch=items("x", 20), slice_ms=10, now=25, older=2),
    dict(keys=("r", "r"), batch=items("x", 20), mode="l"),
    dict(keys=("r", "r"), mode="i"),
    dict(keys=("num", "s0"), batch=items("x", 5)),
    dict(keys=("r", "num"), batch=items("x", 5)),
    dict(keys=("r", "filter"), batch=items("x", 5)),
    dict(keys=("r", "short"), batch=items("x", 5)),
    dict(keys=("list", "s0"), batch=items("x", 5)),
    dict(keys=("r", "s0"), header=2 ** 20, batch=items("x", 5)),
    dict(keys=("r", "s0"), links=((b"blocked", 7, 2 ** 32, 100),) * 2, batch=items("x", 5)),
    dict(keys=("r", "s0"), links=((b"classic", 64, 512, I64_MAX),), batch=items("x", 50)),
    dict(keys=("r", "s0"), budget=I64_MAX, links=((b"blocked", 7, 512, 1),) * 4,
         batch=items("x", 50)),
    dict(keys=("r", "s0"), partitions=2 ** 32, index=2 ** 32 - 1, batch=()),
]


def test_stream_extreme_integers_and_aliased_keys(memcheck):
    with Resp(memcheck.server.port) as raw:
        for case in DIRECTED_STREAM:
            prepare_keys(raw)
            command = stream_command(**case)
            reply = send(memcheck, raw, command)
            assert reply is not None, command
            check_added_items_are_found(memcheck, raw, command, reply)
            for wrong in (1, len(command) - 2, 2 ** 31, I64_MAX, -1):  # numkeys past argc
                send(memcheck, raw, [command[0], wrong] + command[2:])
            send(memcheck, raw, ["COMMAND", "GETKEYS", *command])


def random_stream(rng):
    """A mostly valid RB.STREAM (or RB.STREAMH) with a few fields out of range or keys
    repeated."""
    count = rng.randint(1, 4)
    pool = ["r", "s0", "s1", "s2", "s3", "num", "short", "list", "filter", "part"]
    keys = ["r"] + ["s%d" % g for g in range(count)]
    if rng.random() < 0.35:  # one key in two places
        a, b = rng.randrange(len(keys)), rng.randrange(len(keys))
        keys[a] = keys[b] if rng.random() < 0.7 else rng.choice(pool)
    links = [(rng.choice([b"blocked", b"classic"]), rng.randint(1, 12),
              512 * rng.randint(1, 8), rng.randint(1, 40)) for _ in range(rng.randint(1, 3))]
    slice_ms = rng.choice([0, 0, 10, 1000])
    first = rng.choice([0, 0, 1, 2])
    fields = dict(keys=keys, mode=rng.choice("aaali"), now=slice_ms * (first + rng.randint(0, 4)),
                  slice_ms=slice_ms, older=rng.randint(0, 3), first=first,
                  header=8 * (1 + 2 * len(links)) + 8 * rng.choice([0, 0, 1, 8]), links=links,
                  budget=rng.choice([0, 0, 4096]), partitions=1, index=0,
                  batch=items("i%d" % rng.randint(0, 3), rng.randint(0, 60)))
    for _ in range(rng.choice([0, 1, 1, 2, 3])):
        name = rng.choice(["now", "slice_ms", "older", "first", "header", "budget",
                           "partitions", "index", "numkeys", "link"])
        if name == "link":
            at = rng.randrange(len(links))
            link = list(links[at])
            link[rng.randrange(4)] = rng.choice(EXTREME + [b"sideways", 0, 64, 65, 513])
            links[at] = tuple(link)
        else:
            fields[name] = rng.choice(EXTREME)
    command = stream_command(**fields)
    if rng.random() < 0.3:  # the hashed form: 16 bytes an item
        command[0] = "RB.STREAMH"
        command[-1] = rng.randbytes(16 * len(fields["batch"]))
    if rng.random() < 0.1:  # damaged packed items (or hashes)
        command[-1] = command[-1][:rng.randrange(len(command[-1]) + 1)] + rng.randbytes(
            rng.randint(0, 6))
    return command


def test_stream_fuzz(memcheck):
    with Resp(memcheck.server.port) as raw:
        prepare_keys(raw)

        def body(rng):
            command = random_stream(rng)
            reply = send(memcheck, raw, command)
            numkeys = command[1]
            if isinstance(numkeys, int) and 2 <= numkeys < len(command) - 2 and \
                    numkeys == len(set(command[2:2 + numkeys])):
                check_added_items_are_found(memcheck, raw, command, reply)
            if rng.random() < 0.05:
                prepare_keys(raw)

        rounds = timed_rounds(body)
    assert rounds >= MIN_ROUNDS


def random_other(rng):
    """One of the other commands, with arguments at the ends of their ranges."""
    def number(usual):
        return rng.choice(EXTREME) if rng.random() < 0.4 else usual

    key = rng.choice(["f", "f", "part", "num", "short", "list", "filter", "missing"])
    batch = items("o%d" % rng.randint(0, 3), rng.randint(0, 30))
    choice = rng.randrange(10)
    if choice < 2:
        name = rng.choice(["RB.PARTADD", "RB.PARTEXISTS", "RB.PARTADDH", "RB.PARTEXISTSH"])
        data = packed(batch) if not name.endswith("H") else rng.randbytes(
            rng.choice([0, 15, 16, 160, 161]))
        command = [name, key, number(513), rng.choice(["classic", "blocked", "other"]),
                   number(7), number(4096), number(1), number(0), data]
    elif choice < 4:
        data = packed(batch)
        if rng.random() < 0.3:
            data = data[:rng.randrange(len(data) + 1)] + struct.pack(
                "<I", rng.choice([1, 2 ** 31, 2 ** 32 - 1]))
        command = [rng.choice(["RB.MADD", "RB.MEXISTS"]), key, data]
    elif choice == 4:
        command = ["BF.RESERVE", key, number(0.01), number(100)] + rng.choice(
            [[], ["EXPANSION", number(2)], ["NONSCALING"], ["EXPANSION", number(3), "NONSCALING"]])
    elif choice == 5:
        command = ["BF.INSERT", key, "CAPACITY", number(10), "ERROR", number(0.1), "EXPANSION",
                   number(2), "ITEMS", *(batch[:5] or [b"x"])]
    elif choice == 6:
        command = ["BF.SCANDUMP", key, number(rng.choice([0, 1, 100]))]
    elif choice == 7:
        command = ["BF.LOADCHUNK", key, number(rng.choice([1, 100, 600])),
                   rng.randbytes(rng.choice([0, 1, 64, 512]))]
    elif choice == 8:
        command = [rng.choice(["BF.MADD", "BF.MEXISTS", "BF.CARD", "BF.INFO", "BF.ADD",
                               "BF.EXISTS"]), key, *batch[:3]]
    else:
        command = [rng.choice(["RB.VERSION", "RB.PARTADD", "RB.STREAM", "RB.STREAMH"]),
                   *[number(1) for _ in range(rng.randint(0, 3))]]
    return command


def test_other_commands_fuzz(memcheck):
    with Resp(memcheck.server.port) as raw:
        prepare_keys(raw)
        send(memcheck, raw, ["BF.RESERVE", "f", "0.01", "20", "EXPANSION", "2"])
        send(memcheck, raw, ["BF.MADD", "f", *items("f", 100)])

        header = send(memcheck, raw, ["BF.SCANDUMP", "f", 0])[1]
        prefix, strings, version = split_dump(send(memcheck, raw, ["DUMP", "f"]))

        def loaded(command, shown):
            """A filter made from damaged bytes must answer every command, and save."""
            if send(memcheck, raw, command, shown) == Status("OK"):
                for then in (["BF.MADD", "h", *items("h", 40)], ["BF.MEXISTS", "h", "a"],
                             ["BF.SCANDUMP", "h", 1], ["BF.INFO", "h"], ["DEBUG", "RELOAD"]):
                    send(memcheck, raw, then, shown + " then " + then[0])
            raw("DEL", "h")

        def body(rng):
            if rng.random() < 0.1:  # a damaged header into BF.LOADCHUNK
                damaged = (mutate_fields if rng.random() < 0.5 else mutate_bytes)(rng, header)
                loaded(["BF.LOADCHUNK", "h", 1, damaged], "BF.LOADCHUNK h 1 %s" % damaged.hex())
            if rng.random() < 0.1:  # a damaged DUMP (with a right checksum) into RESTORE
                pieces = list(strings)
                at = rng.randrange(len(pieces))
                pieces[at] = (mutate_fields if at == 0 and rng.random() < 0.5 else mutate_bytes)(
                    rng, pieces[at])
                if rng.random() < 0.2:
                    del pieces[rng.randrange(len(pieces)):]
                payload = join_dump(prefix, pieces, version)
                loaded(["RESTORE", "h", 0, payload], "RESTORE h 0 %s" % payload.hex())
            send(memcheck, raw, random_other(rng))
            if rng.random() < 0.03:
                prepare_keys(raw)

        rounds = timed_rounds(body)
        send(memcheck, raw, ["DEBUG", "RELOAD"])  # every filter the commands left is saved
    assert rounds >= MIN_ROUNDS


def random_tdigest(rng):
    """A TDIGEST.* command with random arguments (keys of every kind, extreme numbers)."""
    key = rng.choice(["t", "u", "list", "num", "filter", "missing"])
    number = lambda: str(rng.choice(EXTREME + [0.5, -0.5, 1e308, -1e308, "inf", "-inf", "nan"]))
    name = rng.choice(["CREATE", "ADD", "RESET", "MERGE", "MIN", "MAX", "QUANTILE", "CDF", "RANK",
                       "REVRANK", "BYRANK", "BYREVRANK", "TRIMMED_MEAN", "INFO"])
    args = [number() for _ in range(rng.randrange(0, 5))]
    if name == "MERGE":
        args = [rng.choice(["1", "2", "3", number()]), rng.choice(["t", "u", key])] + \
            rng.choice([[], ["COMPRESSION", number()], ["OVERRIDE"], ["u"]])
    elif name == "CREATE" and rng.random() < 0.7:
        args = ["COMPRESSION", number()]
    return ["TDIGEST." + name, key] + args


def test_tdigest_fuzz(memcheck):
    with Resp(memcheck.server.port) as raw:
        prepare_keys(raw)
        send(memcheck, raw, ["TDIGEST.CREATE", "t", "COMPRESSION", "3"])
        send(memcheck, raw, ["TDIGEST.ADD", "t", *[str(i * 0.25) for i in range(60)]])
        payload = send(memcheck, raw, ["DUMP", "t"])
        body = payload[:-8]

        def body_round(rng):
            if rng.random() < 0.2:  # a damaged DUMP (with a right checksum) into RESTORE
                at = rng.randrange(len(body) - 2)
                damaged = with_crc(body[:at] + bytes([rng.randrange(256)]) + body[at + 1:])
                if send(memcheck, raw, ["RESTORE", "u", 0, damaged, "REPLACE"]) == Status("OK"):
                    for then in (["TDIGEST.ADD", "u", "1", "2", "3"], ["TDIGEST.QUANTILE", "u", "0.5"],
                                 ["TDIGEST.INFO", "u"], ["DEBUG", "RELOAD"]):
                        send(memcheck, raw, then, "RESTORE u %s then %s" % (damaged.hex(), then[0]))
            send(memcheck, raw, random_tdigest(rng))
            if rng.random() < 0.03:
                prepare_keys(raw)
                send(memcheck, raw, ["TDIGEST.CREATE", "t", "COMPRESSION", "3"])
                send(memcheck, raw, ["TDIGEST.ADD", "t", "1", "2"])

        rounds = timed_rounds(body_round)
        send(memcheck, raw, ["DEBUG", "RELOAD"])
    assert rounds >= MIN_ROUNDS
