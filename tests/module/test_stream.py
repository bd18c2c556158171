"""RB.STREAM, the module's form of the stream script (src/redis/stream_script.hpp): one
partition and unit of items of a windowed or growing filter. The library compares it with the
script in tests/test_module_stream.cpp; here are its own argument checks, its key positions
and the keys it makes."""

import struct
import threading
import time

import pytest

from module_util import Error, Resp, items, packed, wait_until

HEADER = 8 * (1 + 2 * 32)
BITS = 4096


def stream(raw, mode, batch, keys=("r", "s0", "s1"), now=5, slice_ms=0, older=0, first=0,
           links=((b"blocked", 7, BITS, 100),), budget=0, partitions=1, index=0, header=HEADER,
           command="RB.STREAM"):
    args = [command, len(keys), *keys, mode, now, slice_ms, older, first, header, len(links),
            budget, partitions, index]
    for link in links:
        args.extend(link)
    return raw(*args, packed(batch))


def test_add_lookup_and_info_on_a_growing_filter(raw):
    batch = items("x", 50)
    added = stream(raw, "a", batch)
    assert added[:2] == [b"ok", 50] and added[2] == b"1" * 50 and added[3:] == [1, 0, 5]
    assert stream(raw, "a", batch)[2] == b"0" * 50
    assert stream(raw, "l", batch + items("absent", 5))[2] == b"1" * 50 + b"0" * 5
    slice_key = raw("GET", "s0")
    assert len(slice_key) == HEADER + BITS // 8
    assert struct.unpack(">qqq", slice_key[:24]) == (1, 50, 5)
    assert raw("GET", "r") == struct.pack(">q", 1)
    info = stream(raw, "i", [])
    assert info[:6] == [b"ok", 0, b"", 1, 0, 5]
    assert info[6][0] == 0 and info[6][1] == slice_key[:HEADER] and info[6][2] == len(slice_key)
    assert raw("PTTL", "s0") == -1


def test_keys_are_named_for_cluster_routing(raw):
    for command in ("RB.STREAM", "RB.STREAMH", "RB.STREAM_RO", "RB.STREAMH_RO"):
        assert raw("COMMAND", "GETKEYS", command, 3, "r", "s0", "s1", "l", -1, 0, 0, 0, HEADER,
                   1, 0, 1, 0, "blocked", 7, BITS, 100, b"") == [b"r", b"s0", b"s1"]


def test_the_hashed_form_takes_16_bytes_an_item(raw):
    """RB.STREAMH takes the items' hashes (the library checks that it answers and writes as
    RB.STREAM does: tests/test_module_stream.cpp)."""
    rng = __import__("random").Random(3)
    hashes = rng.randbytes(16 * 40)

    def h(mode, batch, command="RB.STREAMH"):
        return raw(command, 3, "r", "s0", "s1", mode, 5, 0, 0, 0, HEADER, 1, 0, 1, 0, "blocked",
                   7, BITS, 100, batch)
    added = h("a", hashes)
    assert added[:2] == [b"ok", 40] and added[2] == b"1" * 40
    assert h("a", hashes)[2] == b"0" * 40
    assert h("l", hashes, "RB.STREAMH_RO")[2] == b"1" * 40
    assert h("l", rng.randbytes(16 * 5), "RB.STREAMH_RO")[2] == b"0" * 5
    assert h("a", hashes[:-1]) == Error("ERR hashed items are 16 bytes each")
    assert isinstance(h("a", hashes, "RB.STREAMH_RO"), Error)  # adds need the write command
    assert raw("RB.VERSION") >= 6


def test_a_window_expires_its_slices_at_retirement(raw):
    slice_ms = 10 ** 12  # slices of ~30 years, so that retirement lies ahead of any clock
    now = 3 * slice_ms + 5
    reply = stream(raw, "a", items("w", 10), keys=("r", "s2", "s3", "s4", "s5"), now=now,
                   slice_ms=slice_ms, older=1, first=2)
    assert reply[:2] == [b"ok", 10] and reply[4] == 3
    assert raw("PEXPIRETIME", "s3") == (3 + 1 + 1) * slice_ms
    # Declared slices that do not reach the current one: nothing runs, the slice is named.
    assert stream(raw, "a", items("w", 10), keys=("r", "s0", "s1"), now=now, slice_ms=slice_ms,
                  older=1, first=0)[:5] == [b"time", 0, b"", 0, 3]


@pytest.mark.parametrize("change, says", [
    ({"keys": ("r",)}, "numkeys"),
    ({"header": 8}, "header-bytes"),
    ({"partitions": 2, "index": 2}, "index"),
    ({"links": ((b"blocked", 7, 1000, 100),)}, "partition-bits"),
    ({"links": ((b"sideways", 7, BITS, 100),)}, "layout"),
    ({"links": ((b"blocked", 0, BITS, 100),)}, "hashes"),
    ({"slice_ms": -1}, "integers"),
    # A growing filter's one slice: an add ignored an older one, a lookup then found it lost.
    ({"slice_ms": 0, "older": 1, "first": -2}, "older must be 0"),
])
def test_bad_arguments_are_refused_and_write_nothing(raw, change, says):
    reply = stream(raw, "a", items("x", 3), **change)
    assert isinstance(reply, Error) and says in str(reply), reply
    assert raw("EXISTS", "r", "s0", "s1") == 0


def test_items_of_another_partition_are_refused(raw):
    reply = stream(raw, "a", items("x", 40), partitions=2, index=0)
    assert isinstance(reply, Error) and "belongs to another partition" in str(reply)
    assert raw("EXISTS", "r", "s0", "s1") == 0


def test_a_foreign_slice_key_is_an_error_that_writes_nothing(raw):
    raw("RPUSH", "s0", "x")
    reply = stream(raw, "a", items("x", 3))
    assert isinstance(reply, Error) and str(reply).startswith("REDBLOOMSTREAM wrongtype 2 list")
    raw("DEL", "s0")
    raw("SET", "s0", b"\x00" * 600)
    reply = stream(raw, "a", items("x", 3))
    assert isinstance(reply, Error) and str(reply).startswith("REDBLOOMSTREAM damaged 2 600")
    assert raw("EXISTS", "r") == 0


def test_a_replica_that_runs_late_writes_the_slice_its_master_chose(make_server):
    """RB.STREAM on the server's clock replicates itself with the time it read: a replica (or an
    AOF replay) that ran it on its own clock later could pick another slice."""
    master_server = make_server(options=("--repl-diskless-sync-delay", "0"))
    master = master_server.client()
    replica_server = make_server(options=("--enable-debug-command", "yes", "--replicaof",
                                          "127.0.0.1", str(master_server.port)))
    replica = replica_server.client()
    wait_until(lambda: replica.info("replication")["master_link_status"] == "up",
               "the replica's link to come up")
    slice_ms = 500
    current = int(time.time() * 1000) // slice_ms
    older = 8  # live for 4.5 s, past the replica's nap
    keys = ["r"] + ["s%d" % g for g in range(current - older - 1, current + 8)]
    sleeper = threading.Thread(target=lambda: replica_server.client().execute_command(
        "DEBUG", "SLEEP", "1.5"))
    sleeper.start()
    time.sleep(0.2)  # the replica is asleep: it reads the command 1.5 s (3 slices) later
    with Resp(master_server.port) as raw:
        reply = stream(raw, "a", items("late", 20), keys=keys, now=-1, slice_ms=slice_ms,
                       older=older, first=current - older - 1)
        assert reply[:2] == [b"ok", 20], reply
        sleeper.join()
        # On the connection that wrote: WAIT waits for that client's own last write.
        assert raw("WAIT", 1, 60000) == 1
    made = "s%d" % reply[4]
    assert master.get(made) is not None
    for key in keys:
        assert replica.get(key) == master.get(key), key
    assert replica.execute_command("PEXPIRETIME", made) == \
        master.execute_command("PEXPIRETIME", made) == (reply[4] + 1 + older) * slice_ms


I64_MAX = 2 ** 63 - 1


@pytest.mark.parametrize("mode", ["a", "l", "i"])
@pytest.mark.parametrize("change", [
    # The declared slices would run to the last i64 (a loop over them could not end).
    {"now": I64_MAX, "first": I64_MAX - 1},
    {"now": 5, "first": I64_MAX - 1, "slice_ms": 1},
    # A retirement past the last i64 millisecond.
    {"now": I64_MAX, "first": 0, "older": 1, "slice_ms": 2 ** 62,
     "keys": ("r", "s0", "s1", "s2", "s3")},
])
def test_slice_numbers_near_the_ends_of_the_range_are_refused(server, raw, mode, change):
    reply = stream(raw, mode, items("x", 3) if mode != "i" else [], **change)
    assert isinstance(reply, Error) and "slice" in str(reply), reply
    assert server.alive(), server.log_tail()
    assert raw("DBSIZE") == 0


@pytest.mark.parametrize("mode", ["a", "l", "i"])
@pytest.mark.parametrize("keys", [("r", "r", "s1"), ("r", "s0", "r"), ("r", "s0", "s0")])
def test_a_key_named_twice_is_refused(server, raw, mode, keys):
    """The roster named as a slice, or a slice named twice: one key under two handles, written
    through one while the other still points at its old bytes."""
    if keys[1] != "r":
        stream(raw, "a", items("y", 20), keys=("r", keys[1], "s9"))
    before = {k: raw("GET", k) for k in ("r", "s0", "s1")}
    reply = stream(raw, mode, items("x", 20) if mode != "i" else [], keys=keys)
    assert isinstance(reply, Error) and "twice" in str(reply), reply
    assert server.alive(), server.log_tail()
    assert {k: raw("GET", k) for k in ("r", "s0", "s1")} == before


NEVER_MADE = b"\x80" + b"\x00" * 7  # a guarded roster's field before its slice is made


@pytest.mark.parametrize("mode", ["A", "L", "I"])
def test_a_guarded_roster_that_is_gone_is_an_error_that_writes_nothing(raw, mode):
    """The upper-case modes: the filter made its roster, so a missing one (evicted with its
    slices, perhaps) is an error, never an empty filter."""
    reply = stream(raw, mode, items("x", 20) if mode != "I" else [])
    assert isinstance(reply, Error) and str(reply).startswith("REDBLOOMSTREAM gone 1 0"), reply
    assert raw("DBSIZE") == 0


def test_a_guarded_roster_answers_as_before_while_it_is_there(raw):
    raw("SET", "r", NEVER_MADE)
    batch = items("x", 20)
    assert stream(raw, "A", batch)[:3] == [b"ok", 20, b"1" * 20]
    assert raw("GET", "r") == struct.pack(">q", 1)
    assert stream(raw, "L", batch)[:3] == [b"ok", 20, b"1" * 20]
    raw("DEL", "s0")
    assert str(stream(raw, "L", batch)).startswith("REDBLOOMSTREAM lost 2 0")
    raw("DEL", "r")
    assert str(stream(raw, "L", batch)).startswith("REDBLOOMSTREAM gone 1 0")


def test_the_read_only_command_reads_on_a_replica_and_never_adds(make_server):
    master_server = make_server(options=("--repl-diskless-sync-delay", "0"))
    replica_server = make_server(options=("--replicaof", "127.0.0.1", str(master_server.port)))
    replica = replica_server.client()
    wait_until(lambda: replica.info("replication")["master_link_status"] == "up",
               "the replica's link to come up")
    batch = items("rep", 30)
    with Resp(master_server.port) as raw:
        raw("SET", "r", NEVER_MADE)
        assert stream(raw, "A", batch)[:2] == [b"ok", 30]
        assert raw("WAIT", 1, 60000) == 1
    with Resp(replica_server.port) as raw:
        for mode in ("l", "L"):
            looked = stream(raw, mode, batch + items("absent", 5), command="RB.STREAM_RO")
            assert looked[:3] == [b"ok", 35, b"1" * 30 + b"0" * 5], looked
            # RB.STREAM is a write command, which a read-only replica refuses.
            refused = stream(raw, mode, batch)
            assert isinstance(refused, Error) and str(refused).startswith("READONLY"), refused
        info = stream(raw, "I", [], command="RB.STREAM_RO")
        assert info[:2] == [b"ok", 0] and len(info) == 7, info
        for mode in ("a", "A"):
            refused = stream(raw, mode, batch, command="RB.STREAM_RO")
            assert isinstance(refused, Error) and "mode is l or i" in str(refused), refused
    assert replica.get("s0") == master_server.client().get("s0")
