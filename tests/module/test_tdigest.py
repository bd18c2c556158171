"""TDIGEST.* as RedisBloom 2.4 answers it: every reply of a recorded command sequence byte for
byte (RESP2 and RESP3), RedisBloom's RDB file loaded and answered alike, the module's own saves,
AOF rewrites and DUMP/RESTORE giving the same answers back, and damaged payloads refused without
a crash. The fixtures and how they were made: fixtures/redisbloom/tdigest/README.md."""

import json
import random
import struct
from pathlib import Path

from module_util import (Error, Resp, dumps_restore_byte_for_byte, own_save_aof_and_restore_answer,
                         replay, server_on_fixture, start_server, with_crc)

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "redisbloom" / "tdigest"
RECORDED = json.loads((FIXTURES / "replies.json").read_text())
DEBUG = ("--enable-debug-command", "yes")


def test_every_reply_is_redisbloom_s(tmp_path):
    server = start_server(tmp_path / "s", options=DEBUG)
    try:
        assert replay(server, RECORDED["replies"]) == []
    finally:
        server.kill()


def test_rdb_of_redisbloom_answers_as_redisbloom(tmp_path):
    server = server_on_fixture(FIXTURES, tmp_path)
    try:
        assert server.client().type("uniform") == b"TDIS-TYPE"
        assert replay(server, RECORDED["after_reload"]) == []
        # RedisBloom's DUMP of each key (its RDB encoding) is what redbloom.so dumps back.
        assert dumps_restore_byte_for_byte(server.client(), b"TDIS-TYPE")
    finally:
        server.kill()


def test_own_save_aof_rewrite_and_restore_answer_the_same(tmp_path):
    server = server_on_fixture(FIXTURES, tmp_path, "--appendonly", "no")
    try:
        assert own_save_aof_and_restore_answer(server, tmp_path / "data",
                                               RECORDED["after_reload"]) == []
    finally:
        server.kill()


def test_damaged_payloads_are_errors_never_crashes(tmp_path):
    """Every byte of a DUMP payload changed in turn (CRC mended): RESTORE refuses it or gives a
    digest that answers every command; the server stays up."""
    server = start_server(tmp_path / "s", "MAX_FILTER_BYTES", "16m", options=DEBUG)
    try:
        r = server.client()
        r.execute_command("TDIGEST.CREATE", "d", "COMPRESSION", "5")
        r.execute_command("TDIGEST.ADD", "d", *[str(i * 1.5) for i in range(40)])
        body = r.dump("d")[:-8]
        rng = random.Random(7)
        refused = accepted = 0
        with Resp(server.port) as raw:
            for i in range(len(body) - 2):
                for value in (0x00, 0xFF, body[i] ^ (1 << rng.randrange(8))):
                    damaged = with_crc(body[:i] + bytes([value]) + body[i + 1:])
                    reply = raw("RESTORE", "x", "0", damaged, "REPLACE")
                    if isinstance(reply, Error):
                        refused += 1
                        continue
                    accepted += 1
                    for command in (("TDIGEST.INFO", "x"), ("TDIGEST.QUANTILE", "x", "0", "0.5", "1"),
                                    ("TDIGEST.CDF", "x", "3"), ("TDIGEST.ADD", "x", "1", "2"),
                                    ("TDIGEST.RANK", "x", "4"), ("TDIGEST.TRIMMED_MEAN", "x", "0.1", "0.9")):
                        raw(*command)
        assert refused > 0 and accepted > 0
        # A header that asks for more than the memory limit allows is refused before allocating.
        huge = struct.pack("<d", 1e8)
        at = body.find(struct.pack("<d", 5.0))
        assert at > 0
        assert isinstance(Resp(server.port)("RESTORE", "y", "0", with_crc(body[:at] + huge + body[at + 8:])), Error)
        assert server.alive(), server.log_tail()
    finally:
        server.kill()


def test_memory_limit_and_copy(tmp_path):
    server = start_server(tmp_path / "s", "MAX_FILTER_BYTES", "1m", options=DEBUG)
    try:
        with Resp(server.port) as raw:
            reply = raw("TDIGEST.CREATE", "big", "COMPRESSION", "100000")
            assert isinstance(reply, Error) and reply.startswith("ERR T-Digest: allocation failed")
            assert raw("EXISTS", "big") == 0
            raw("TDIGEST.CREATE", "d")
            raw("TDIGEST.ADD", "d", "1", "2", "3")
            raw("COPY", "d", "e")
            assert raw("TDIGEST.QUANTILE", "e", "0.5") == raw("TDIGEST.QUANTILE", "d", "0.5")
            raw("TDIGEST.ADD", "e", "100")
            assert raw("TDIGEST.MAX", "d") == b"3" and raw("TDIGEST.MAX", "e") == b"100"
    finally:
        server.kill()
