"""Filters survive what Redis does with values: RDB save and restart, AOF rewrite and restart
(with and without the RDB preamble, so the module's own rewrite is used too), DEBUG RELOAD and
SCANDUMP/LOADCHUNK into a new key; after each, the same answers, BF.INFO and bits."""

import subprocess

import pytest
import redis

from module_util import (crc64, free_port, items, loadchunks, module_path, populate, scandump,
                         snapshot, wait_until)

DEBUG = ("--enable-debug-command", "yes")
def test_scandump_loadchunk_round_trip(make_server):
    r = make_server(options=DEBUG).client()
    keys = populate(r)
    for key in keys:
        loadchunks(r, "copy:" + key, scandump(r, key))
        if r.pttl(key) > 0:  # a value's digest counts its expiry
            r.pexpire("copy:" + key, r.pttl(key))
        assert snapshot(r, ["copy:" + key], False)["copy:" + key] == snapshot(r, [key])[key]
        assert r.execute_command("DEBUG", "DIGEST-VALUE", key) == \
            r.execute_command("DEBUG", "DIGEST-VALUE", "copy:" + key)
    assert len(scandump(r, "scaled")) > 3  # a header and one chunk per link, several links
    # Into a server whose new filters have the other layout: the dump keeps its own.
    other = make_server("LAYOUT", "classic", options=DEBUG).client()
    for key in keys:
        loadchunks(other, key, scandump(r, key))
    assert snapshot(other, keys, False) == snapshot(r, keys, False)


def test_rdb_save_and_restart(make_server):
    server = make_server(options=DEBUG)
    r = server.client()
    keys = populate(r)
    before = snapshot(r, keys)
    assert r.save()
    server.restart()
    r = server.client()
    assert snapshot(r, keys) == before
    assert 0 < r.ttl("expiring") <= 100000
    assert r.execute_command("BF.ADD", "scaled", "after restart") == 1


@pytest.mark.parametrize("preamble", ["yes", "no"])
def test_aof_rewrite_and_restart(make_server, preamble):
    server = make_server(options=DEBUG + ("--appendonly", "yes", "--aof-use-rdb-preamble",
                                          preamble))
    r = server.client()
    keys = populate(r, "old:")

    def rewritten():
        p = r.info("persistence")
        return p["aof_rewrite_in_progress"] == 0 and p["aof_rewrite_scheduled"] == 0

    wait_until(rewritten, "a rewrite at startup to end")
    r.bgrewriteaof()
    wait_until(rewritten, "BGREWRITEAOF to end")
    assert r.info("persistence")["aof_last_bgrewrite_status"] == "ok"
    base = [f for f in (server.directory / "appendonlydir").iterdir() if ".base." in f.name]
    assert len(base) == 1
    body = base[0].read_bytes()
    if preamble == "no":  # written by the module's rewrite callback
        assert b"BF.LOADCHUNK" in body and not body.startswith(b"REDIS")
    else:
        assert body.startswith(b"REDIS")
    keys += populate(r, "new:")  # after the rewrite: in the AOF as commands
    r.execute_command("BF.MADD", "old:scaled", *items("b", 300))
    before = snapshot(r, keys)
    server.restart()
    r = server.client()
    assert snapshot(r, keys) == before


def test_debug_reload(make_server):
    r = make_server(options=DEBUG).client()
    keys = populate(r)
    before = snapshot(r, keys)
    assert r.execute_command("DEBUG", "RELOAD")
    assert snapshot(r, keys) == before


def test_whatever_commands_build_can_be_loaded_again(make_server):
    server = make_server(options=DEBUG)
    r = server.client()
    r.execute_command("BF.RESERVE", "long", 0.01, 1, "EXPANSION", 1)
    for item in items("l", 100):  # a link per item (or, past a limit, an error per item)
        try:
            r.execute_command("BF.ADD", "long", item)
        except redis.ResponseError:
            pass
    before = snapshot(r, ["long"])
    assert r.restore("restored", 0, r.dump("long"))
    loadchunks(r, "loaded", scandump(r, "long"))
    for key in ("restored", "loaded"):
        assert snapshot(r, [key], False)[key] == before["long"]
    r.delete("restored", "loaded")
    assert r.execute_command("DEBUG", "RELOAD")
    assert snapshot(r, ["long"]) == before
    assert r.save()
    server.restart()
    assert snapshot(server.client(), ["long"]) == before


@pytest.mark.parametrize("field,offset,value", [("layout", 8, 7), ("links", 8 + 25, 0),
                                                ("hashes", 8 + 29 + 4, 0)])
def test_a_damaged_rdb_fails_the_load_cleanly(make_server, field, offset, value):
    server = make_server(options=("--rdbcompression", "no"))
    r = server.client()
    populate(r)
    assert r.save()
    server.kill()
    rdb = server.directory / "dump.rdb"
    data = bytearray(rdb.read_bytes())
    at = data.index(b"rbchain\x01") + offset
    data[at:at + 4] = value.to_bytes(4, "little")
    data[-8:] = crc64(bytes(data[:-8])).to_bytes(8, "little")  # the file's own checksum
    rdb.write_bytes(bytes(data))
    process = subprocess.Popen(["redis-server", "--port", str(free_port()), "--bind",
                                "127.0.0.1", "--dir", str(server.directory), "--logfile",
                                str(server.log), "--loadmodule", module_path()],
                               stdout=subprocess.DEVNULL)
    try:
        # The load fails and the server exits; by a signal would be a crash. (The exit code is
        # redis-check-rdb's, which Redis runs on the file then: 0, as it skips module values.)
        assert process.wait(60) >= 0
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    log = server.log.read_text()
    assert "redbloom: filter not loaded" in log and "crashed by signal" not in log, log[-2000:]


def test_a_link_over_16_mib_moves_in_pieces(make_server):
    r = make_server(options=DEBUG).client()
    r.execute_command("BF.RESERVE", "big", 0.01, 20000000)  # one link of about 24 MB
    r.execute_command("BF.MADD", "big", *items("big", 1000))
    pieces = scandump(r, "big")
    sizes = [len(data) for _, data in pieces[1:]]
    assert sizes[0] == 16 << 20 and 0 < sizes[-1] <= 16 << 20 and len(sizes) == 2
    assert [it for it, _ in pieces] == [1, 1 + sizes[0], 1 + sum(sizes)]
    loadchunks(r, "loaded", pieces)
    assert r.restore("restored", 0, r.dump("big"))
    digests = r.execute_command("DEBUG", "DIGEST-VALUE", "big", "loaded", "restored")
    assert len(set(digests)) == 1
    assert r.execute_command("BF.MEXISTS", "restored", *items("big", 1000)) == [1] * 1000
