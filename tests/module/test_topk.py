"""TOPK.* as RedisBloom 2.4 answers it: every reply of a recorded command sequence byte for byte
(RESP2 and RESP3), RedisBloom's RDB file loaded and answered alike, the module's own saves, AOF
rewrites and DUMP/RESTORE giving the same answers back, damaged payloads refused without a
crash, and what redbloom.so does better: decays drawn per value, so that a replica and a reload
answer as the primary. The fixtures and how they were made: fixtures/redisbloom/topk/README.md."""

import json
import random
from pathlib import Path

from module_util import (Error, Resp, dumps_restore_byte_for_byte, own_save_aof_and_restore_answer,
                         replay, server_on_fixture, start_server, wait_until, with_crc)

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "redisbloom" / "topk"
RECORDED = json.loads((FIXTURES / "replies.json").read_text())
DEBUG = ("--enable-debug-command", "yes")


def heavy_stream(seed, n=20000, distinct=400):
    """A skewed stream whose items collide in a small Top-K, so that decays happen."""
    rng = random.Random(seed)
    weights = [1.0 / (i + 1) ** 1.1 for i in range(distinct)]
    return rng.choices(["item%d" % i for i in range(distinct)], weights, k=n)


def answers(r, key, probe):
    return (r.execute_command("TOPK.LIST", key, "WITHCOUNT"),
            r.execute_command("TOPK.COUNT", key, *probe))


def test_every_reply_is_redisbloom_s(tmp_path):
    server = start_server(tmp_path / "s", options=DEBUG)
    try:
        assert replay(server, RECORDED["replies"]) == []
    finally:
        server.kill()


def test_rdb_of_redisbloom_answers_as_redisbloom(tmp_path):
    server = server_on_fixture(FIXTURES, tmp_path)
    try:
        assert server.client().type("flat") == b"TopK-TYPE"
        assert replay(server, RECORDED["after_reload"]) == []
        # RedisBloom's DUMP of each key (its RDB encoding) is what redbloom.so dumps back.
        assert dumps_restore_byte_for_byte(server.client(), b"TopK-TYPE")
    finally:
        server.kill()


def test_own_save_aof_rewrite_and_restore_answer_the_same(tmp_path):
    server = server_on_fixture(FIXTURES, tmp_path, "--appendonly", "no")
    try:
        assert own_save_aof_and_restore_answer(server, tmp_path / "data",
                                               RECORDED["after_reload"]) == []
    finally:
        server.kill()


def test_decays_continue_the_same_after_a_reload(tmp_path):
    """The draws' state travels with the value: a server that saved and reloaded half-way
    answers as one that did not (RedisBloom's clock-seeded rand() does not)."""
    server = start_server(tmp_path / "s", options=DEBUG)
    try:
        r = server.client()
        stream = heavy_stream(1)
        probe = ["item%d" % i for i in range(30)]
        for key in ("straight", "reloaded"):
            r.execute_command("TOPK.RESERVE", key, 10, 16, 3, 0.9)
            r.execute_command("TOPK.ADD", key, *stream[:10000])
        r.execute_command("DEBUG", "RELOAD")
        r.execute_command("RESTORE", "restored", 0, r.dump("straight"))
        for key in ("straight", "reloaded", "restored"):
            for start in range(10000, len(stream), 1000):
                r.execute_command("TOPK.ADD", key, *stream[start:start + 1000])
        first = answers(r, "straight", probe)
        assert answers(r, "reloaded", probe) == first
        assert answers(r, "restored", probe) == first
        # Decays did happen: the smaller items' counts are below their true frequencies.
        listed = first[0][0::2]
        assert b"item0" in listed and b"item1" in listed
        assert sum(first[1]) < sum(stream.count(p) for p in probe)
    finally:
        server.kill()


def test_a_replica_answers_as_its_primary(make_server):
    primary_server = make_server(options=DEBUG + ("--repl-diskless-sync-delay", "0"))
    primary = primary_server.client()
    stream = heavy_stream(2)
    probe = ["item%d" % i for i in range(30)]
    primary.execute_command("TOPK.RESERVE", "before", 10, 16, 3, 0.9)
    primary.execute_command("TOPK.ADD", "before", *stream[:5000])  # reaches it in the full sync
    replica = make_server(options=DEBUG + ("--replicaof", "127.0.0.1",
                                            str(primary_server.port))).client()
    wait_until(lambda: replica.info("replication")["master_link_status"] == "up",
               "the replica's link to come up")
    primary.execute_command("TOPK.RESERVE", "after", 10, 16, 3, 0.9)
    for start in range(5000, len(stream), 500):  # reach it as commands
        for key in ("before", "after"):
            primary.execute_command("TOPK.ADD", key, *stream[start:start + 500])
        primary.execute_command("TOPK.INCRBY", "after", stream[start], 3, "x", 0)
    assert primary.execute_command("WAIT", 1, 60000) == 1
    for key in ("before", "after"):
        assert answers(replica, key, probe) == answers(primary, key, probe)


def test_items_a_simple_string_cannot_hold_come_back_whole(tmp_path):
    server = start_server(tmp_path / "s", options=DEBUG)
    try:
        with Resp(server.port) as raw:
            raw("TOPK.RESERVE", "k", 3)
            odd = [b"line\r\nbreak", b"nul\x00byte", b"plain"]
            for item in odd:
                raw("TOPK.INCRBY", "k", item, 5)
            listed = [x.encode() if isinstance(x, str) else x for x in raw("TOPK.LIST", "k")]
            assert sorted(listed) == sorted(odd)
            assert raw("TOPK.QUERY", "k", *odd) == [1, 1, 1]
            raw("DEBUG", "RELOAD")
            assert raw("TOPK.COUNT", "k", *odd) == [5, 5, 5]
            assert raw("TOPK.QUERY", "k", *odd) == [1, 1, 1]
    finally:
        server.kill()


def fuzz_payloads(r, port, seed, values_per_byte=3):
    """Every byte of a small Top-K's DUMP payload changed in turn (CRC mended) and RESTOREd;
    each accepted value used by every command. Returns (refused, accepted)."""
    r.execute_command("TOPK.RESERVE", "fuzz:source", 3, 6, 2, 0.9)
    r.execute_command("TOPK.ADD", "fuzz:source", *heavy_stream(3, n=200, distinct=8))
    body = r.dump("fuzz:source")[:-8]
    rng = random.Random(seed)
    refused = accepted = 0
    with Resp(port) as raw:
        for i in range(len(body) - 2):
            for value in (0x00, 0xFF, body[i] ^ (1 << rng.randrange(8)))[:values_per_byte]:
                damaged = with_crc(body[:i] + bytes([value]) + body[i + 1:])
                if isinstance(raw("RESTORE", "fuzz:x", "0", damaged, "REPLACE"), Error):
                    refused += 1
                    continue
                accepted += 1
                for command in (("TOPK.INFO", "fuzz:x"), ("TOPK.LIST", "fuzz:x", "WITHCOUNT"),
                                ("TOPK.ADD", "fuzz:x", "item1", "item2", "new"),
                                ("TOPK.INCRBY", "fuzz:x", "item3", "1000"),
                                ("TOPK.QUERY", "fuzz:x", "item1"),
                                ("TOPK.COUNT", "fuzz:x", "item0")):
                    raw(*command)
    return refused, accepted


def test_damaged_payloads_are_errors_never_crashes(tmp_path):
    server = start_server(tmp_path / "s", "MAX_FILTER_BYTES", "16m", options=DEBUG)
    try:
        r = server.client()
        refused, accepted = fuzz_payloads(r, server.port, 7)
        assert refused > 0 and accepted > 0
        # Figures that ask for more than the memory limit allows are refused before allocating.
        body = r.dump("fuzz:source")[:-8]
        at = body.find(b"\x02\x06\x02\x02")  # width 6, depth 2 as RDB lengths
        assert at > 0
        huge = body[:at + 1] + b"\x80\x00\x10\x00\x00" + body[at + 2:]  # width 2^20
        assert isinstance(Resp(server.port)("RESTORE", "y", "0", with_crc(huge)), Error)
        assert server.alive(), server.log_tail()
    finally:
        server.kill()


def test_memory_limit_and_copy(tmp_path):
    server = start_server(tmp_path / "s", "MAX_FILTER_BYTES", "1m", options=DEBUG)
    try:
        with Resp(server.port) as raw:
            reply = raw("TOPK.RESERVE", "big", 10, 100000, 10, 0.9)
            assert isinstance(reply, Error) and "Insufficient memory" in reply
            assert raw("EXISTS", "big") == 0
            raw("TOPK.RESERVE", "t", 3)
            raw("TOPK.ADD", "t", "a", "b", "a")
            raw("COPY", "t", "u")
            assert raw("TOPK.LIST", "u", "WITHCOUNT") == raw("TOPK.LIST", "t", "WITHCOUNT")
            raw("TOPK.INCRBY", "u", "c", 50)
            assert raw("TOPK.QUERY", "t", "c") == [0] and raw("TOPK.QUERY", "u", "c") == [1]
        info = server.client().info("redbloom")
        assert info["redbloom_topk_filters"] == 2 and info["redbloom_topk_bytes"] >= 2 * 8 * 7 * 8
        assert info["redbloom_cmd_topk_reserve"] == 2 and info["redbloom_cmd_topk_incrby"] == 1
        server.client().delete("t")
        assert server.client().info("redbloom")["redbloom_topk_filters"] == 1
    finally:
        server.kill()
