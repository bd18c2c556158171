"""RedisBloom's cuckoo filters on redbloom.so, byte for byte. The fixture
(fixtures/redisbloom_cuckoo, made by RedisBloom 2.4.23 with make_fixtures.py there) holds a
fixed sequence of CF.* commands, RedisBloom's reply to each, what it then held (CF.INFO,
CF.DEBUG, CF.MEXISTS, CF.COUNT, MEMORY USAGE, the SCANDUMP chunks and the DUMP payload of each
key), its RDB file and an AOF rewrite of it. redbloom.so must give the same replies and hold
the same bytes after the sequence (so RedisBloom loads what it saves: the way back), and
started on RedisBloom's RDB or AOF must hold what RedisBloom held."""

import importlib.util
import json
from pathlib import Path

import pytest

from module_util import data_from_fixtures, start_server, wait_until

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "redisbloom_cuckoo"
_spec = importlib.util.spec_from_file_location("make_cuckoo_fixtures",
                                               FIXTURES / "make_fixtures.py")
maker = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(maker)
RECORDED = json.loads((FIXTURES / "cuckoo.json").read_text())
DEBUG = ("--enable-debug-command", "yes")


@pytest.fixture
def server_on(tmp_path):
    """Starts a server on copies of fixture files (server_on(*options, files=...)); the test's
    servers are stopped by pid when it ends."""
    started = []

    def start(*options, files=()):
        directory = data_from_fixtures(FIXTURES, tmp_path, files)
        started.append(start_server(directory, options=DEBUG + options))
        return started[-1]

    yield start
    for server in started:
        server.kill()


def same_held(r, with_dump=True):
    held = maker.record(r, with_dump)
    for key, recorded in RECORDED["held"].items():
        expected = dict(recorded)
        if not with_dump:
            expected.pop("dump", None)
        for field, value in expected.items():
            assert held[key][field] == value, (key, field)


def test_the_sequence_answers_and_holds_as_redisbloom(server_on):
    r = server_on().client()
    replies = maker.run_sequence(r)
    for step, (ours, theirs) in enumerate(zip(replies, RECORDED["replies"])):
        assert ours == theirs, (step, maker.SEQUENCE[step])
    same_held(r)


def test_rdb_of_redisbloom_answers_as_redisbloom(server_on):
    server = server_on(files=("dump.rdb",))
    r = server.client()
    assert sorted(k.decode() for k in r.keys()) == sorted(maker.KEYS)
    same_held(r)
    # Saved again, and loaded again: the same (RedisBloom's encoding written back).
    assert r.save()
    server.restart()
    same_held(server.client())


def test_aof_of_redisbloom_replays(server_on):
    server = server_on("--appendonly", "yes", "--aof-use-rdb-preamble", "no",
                       files=("appendonlydir",))
    same_held(server.client())


def test_the_aof_rewrite_is_redisbloom_s(server_on):
    server = server_on(files=("dump.rdb",))
    r = server.client()
    r.config_set("aof-use-rdb-preamble", "no")
    r.config_set("appendonly", "yes")

    def rewritten():
        p = r.info("persistence")
        return p["aof_rewrite_in_progress"] == 0 and p["aof_rewrite_scheduled"] == 0 and \
            p["aof_last_bgrewrite_status"] == "ok"

    wait_until(rewritten, "the AOF rewrite to end")

    def commands(directory):
        base = next(f for f in (directory / "appendonlydir").iterdir() if ".base." in f.name)
        # One key's commands per block: the keys' order is the server's hash order.
        blocks = {}
        for part in base.read_bytes().split(b"*4\r\n$12\r\nCF.LOADCHUNK\r\n")[1:]:
            key = part.split(b"\r\n")[1]
            blocks.setdefault(key, []).append(part)
        return blocks

    assert commands(server.directory) == commands(FIXTURES)
