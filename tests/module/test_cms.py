"""CMS.* as RedisBloom 2.4 answers it: every reply of a recorded command sequence byte for byte
(RESP2 and RESP3), RedisBloom's RDB file loaded and answered alike, each sketch saved in
RedisBloom's encoding byte for byte, the module's own saves, AOF rewrites, DUMP/RESTORE and
replication giving the same answers back, and damaged payloads refused without a crash. The
fixtures and how they were made: fixtures/redisbloom/cms/README.md."""

import json
import random
import struct
from pathlib import Path

from module_util import (Error, RawReplies, Resp, own_save_aof_and_restore_answer, replay,
                         server_on_fixture, start_server, wait_until, with_crc)

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "redisbloom" / "cms"
RECORDED = json.loads((FIXTURES / "replies.json").read_text())
DEBUG = ("--enable-debug-command", "yes")


def play_sequence(server):
    """The recorded sequence (RESP2 part) on the server, as the fixture script ran it."""
    c = RawReplies(server.port)
    try:
        for command, _ in RECORDED["replies"]:
            if command[0] != "RESP3":
                c.call(*command)
        c.call("DEL", "str")
    finally:
        c.close()


def encodings(r):
    """Each sketch's RDB encoding: its DUMP payload without the RDB version and checksum."""
    return {key: r.dump(key)[:-10].hex() for key in RECORDED["dumps"]}


def test_every_reply_is_redisbloom_s(tmp_path):
    server = start_server(tmp_path / "s", options=DEBUG)
    try:
        assert replay(server, RECORDED["replies"]) == []
    finally:
        server.kill()


def test_rdb_of_redisbloom_answers_as_redisbloom(tmp_path):
    server = server_on_fixture(FIXTURES, tmp_path)
    try:
        assert server.client().type("dim") == b"CMSk-TYPE"
        assert replay(server, RECORDED["after_reload"]) == []
    finally:
        server.kill()


def test_sketches_are_saved_in_redisbloom_s_encoding(tmp_path):
    """The same commands give each key the bytes RedisBloom saved for it, and RedisBloom's
    saved bytes come back unchanged."""
    server = start_server(tmp_path / "s", options=DEBUG)
    try:
        play_sequence(server)
        assert encodings(server.client()) == RECORDED["dumps"]
    finally:
        server.kill()
    server = server_on_fixture(FIXTURES, tmp_path)
    try:
        assert encodings(server.client()) == RECORDED["dumps"]
    finally:
        server.kill()


def test_own_save_aof_rewrite_and_restore_answer_the_same(tmp_path):
    server = server_on_fixture(FIXTURES, tmp_path, "--appendonly", "no")
    try:
        assert own_save_aof_and_restore_answer(server, tmp_path / "data",
                                               RECORDED["after_reload"], digest=True) == []
    finally:
        server.kill()


def test_replica_answers_as_the_master(make_server):
    master_server = make_server(options=DEBUG + ("--repl-diskless-sync-delay", "0"))
    master = master_server.client()
    master.execute_command("CMS.INITBYDIM", "before", 100, 4)
    master.execute_command("CMS.INCRBY", "before", "a", 5, "b", 7)
    replica = make_server(options=DEBUG + ("--replicaof", "127.0.0.1",
                                            str(master_server.port))).client()
    wait_until(lambda: replica.info("replication")["master_link_status"] == "up",
               "the replica's link to come up")
    master.execute_command("CMS.INITBYPROB", "after", 0.01, 0.01)
    master.execute_command("CMS.INITBYPROB", "merged", 0.01, 0.01)
    rng = random.Random(3)
    for _ in range(20):
        pairs = [x for _ in range(50) for x in ("i%d" % rng.randrange(500), rng.randint(0, 9))]
        master.execute_command("CMS.INCRBY", "after", *pairs)
    master.execute_command("CMS.INCRBY", "before", "a", 2 ** 32)  # saturates: an error inside
    master.execute_command("CMS.MERGE", "merged", 2, "after", "after", "WEIGHTS", 2, 1)
    assert master.execute_command("WAIT", 1, 60000) == 1
    probes = ["a", "b"] + ["i%d" % i for i in range(500)]
    for key in ("before", "after", "merged"):
        assert replica.execute_command("CMS.QUERY", key, *probes) == \
            master.execute_command("CMS.QUERY", key, *probes)
        assert replica.execute_command("CMS.INFO", key) == master.execute_command("CMS.INFO", key)
        assert replica.dump(key) == master.dump(key)


def fuzz_payloads(r, port, rounds, seed):
    """Damaged DUMP payloads of a sketch (checksum mended): each refused, or a sketch that
    answers every command. Returns (refused, accepted)."""
    r.execute_command("CMS.INITBYDIM", "src", 6, 3)
    r.execute_command("CMS.INCRBY", "src", *[x for i in range(30) for x in ("k%d" % i, i)])
    body = r.dump("src")[:-8]
    rng = random.Random(seed)
    refused = accepted = 0
    with Resp(port) as raw:
        for _ in range(rounds):
            i = rng.randrange(len(body) - 2)
            value = rng.choice((0x00, 0xFF, body[i] ^ (1 << rng.randrange(8)), rng.randrange(256)))
            damaged = with_crc(body[:i] + bytes([value]) + body[i + 1:])
            if isinstance(raw("RESTORE", "x", "0", damaged, "REPLACE"), Error):
                refused += 1
                continue
            accepted += 1
            for command in (("CMS.INFO", "x"), ("CMS.QUERY", "x", "k1", "k7", "zz"),
                            ("CMS.INCRBY", "x", "k1", "3", "new", "4"),
                            ("CMS.MERGE", "x", "2", "x", "src", "WEIGHTS", "1", "1"),
                            ("CMS.MERGE", "src", "1", "x"), ("DUMP", "x")):
                raw(*command)
    return refused, accepted


def test_damaged_payloads_are_errors_never_crashes(tmp_path):
    server = start_server(tmp_path / "s", "MAX_FILTER_BYTES", "16m", options=DEBUG)
    try:
        r = server.client()
        refused, accepted = fuzz_payloads(r, server.port, 3000, 7)
        assert refused > 0 and accepted > 0
        # Dimensions that ask for more than the memory limit are refused before the counters
        # are read; a counters' length that differs from the dimensions' is refused.
        body = r.dump("src")[:-8]
        with Resp(server.port) as raw:
            # The width follows the type byte and the module id (0x81 and 8 bytes): a module
            # unsigned (0x02) of 6, made 2^40 by RDB's 8-byte length form (0x81).
            assert body[10:12] == b"\x02\x06"
            huge = body[:10] + b"\x02\x81" + struct.pack(">Q", 1 << 40) + body[12:]
            assert isinstance(raw("RESTORE", "y", "0", with_crc(huge)), Error)
            wider = body[:11] + b"\x07" + body[12:]
            assert isinstance(raw("RESTORE", "y", "0", with_crc(wider)), Error)
            assert raw("EXISTS", "y") == 0
        assert server.alive(), server.log_tail()
    finally:
        server.kill()


def test_memory_limit_copy_and_info_counters(tmp_path):
    server = start_server(tmp_path / "s", "MAX_FILTER_BYTES", "1m", options=DEBUG)
    try:
        with Resp(server.port) as raw:
            reply = raw("CMS.INITBYDIM", "big", "1000000", "5")
            assert isinstance(reply, Error) and reply.startswith(
                "CMS: Insufficient memory to create the key")
            reply = raw("CMS.INITBYPROB", "big", "1e-10", "0.5")
            assert isinstance(reply, Error) and "MAX_FILTER_BYTES" in reply
            assert raw("EXISTS", "big") == 0
            raw("CMS.INITBYDIM", "d", "50", "3")
            raw("CMS.INCRBY", "d", "a", "3")
            raw("COPY", "d", "e")
            raw("CMS.INCRBY", "e", "a", "1")
            assert raw("CMS.QUERY", "d", "a") == [3] and raw("CMS.QUERY", "e", "a") == [4]
            assert raw("MEMORY", "USAGE", "d") > 50 * 3 * 8
        info = server.client().info("redbloom")
        assert info["redbloom_cmd_cms_incrby"] == 2
        assert info["redbloom_cmd_cms_initbydim"] == 2
        assert info["redbloom_cmd_cms_query"] == 2
    finally:
        server.kill()
