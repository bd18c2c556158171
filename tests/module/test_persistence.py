"""Filters survive what Redis does with values: RDB save and restart, AOF rewrite and restart
(with and without the RDB preamble, so the module's own rewrite is used too), DEBUG RELOAD and
SCANDUMP/LOADCHUNK into a new key; after each, the same answers, BF.INFO and bits."""

import pytest

from module_util import items, loadchunks, populate, scandump, snapshot, wait_until

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
