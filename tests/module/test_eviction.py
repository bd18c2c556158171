"""What a server that evicts keys does to the module's filters, the warning the module logs
when a filter is made on a server whose maxmemory-policy may evict any key, and the filters and
growths refused for not fitting in the room maxmemory leaves."""

import pytest

from module_util import Error, Resp, Status, items, packed, start_server

WARNING = "redbloom: maxmemory-policy is "


def warnings(server):
    return [line for line in server.log.read_text(errors="replace").splitlines()
            if WARNING in line]


def test_making_a_filter_under_an_allkeys_policy_warns_once_per_policy(tmp_path):
    server = start_server(tmp_path / "evicting", options=(
        "--maxmemory", "100mb", "--maxmemory-policy", "allkeys-lru"))
    try:
        with Resp(server.port) as raw:
            assert warnings(server) == []  # loading the module says nothing
            raw("BF.RESERVE", "reserved", "0.01", "100")
            said = warnings(server)
            assert len(said) == 1 and "allkeys-lru" in said[0] and "noeviction" in said[0], said
            raw("BF.ADD", "made", "x")  # made by an add: the same policy, no second line
            raw("BF.MADD", "reserved", "y")  # no filter made
            assert len(warnings(server)) == 1
            raw("CONFIG", "SET", "maxmemory-policy", "volatile-lru")
            raw("BF.INSERT", "inserted", "ITEMS", "x")
            assert len(warnings(server)) == 1
            raw("CONFIG", "SET", "maxmemory-policy", "allkeys-random")
            raw("RB.MADD", "packed", b"\x01\x00\x00\x00x")
            said = warnings(server)
            assert len(said) == 2 and "allkeys-random" in said[1], said
            raw("CONFIG", "SET", "maxmemory", "0")  # no limit: nothing is evicted
            raw("CONFIG", "SET", "maxmemory-policy", "allkeys-lfu")
            raw("BF.ADD", "unlimited", "x")
            assert len(warnings(server)) == 2
    finally:
        server.kill()


def test_no_warning_where_filters_are_not_evicted(tmp_path):
    server = start_server(tmp_path / "safe", options=(
        "--maxmemory", "100mb", "--maxmemory-policy", "noeviction"))
    try:
        with Resp(server.port) as raw:
            raw("BF.RESERVE", "f", "0.01", "100")
            raw("CONFIG", "SET", "maxmemory-policy", "volatile-lfu")
            raw("BF.MADD", "g", *items("x", 10))
            raw("BF.LOADCHUNK", "h", "1", raw("BF.SCANDUMP", "f", "0")[1])
        assert warnings(server) == []
    finally:
        server.kill()


def test_an_evicted_filter_comes_back_empty_from_the_next_add(tmp_path):
    """What docs/module.md says eviction does to a filter: the key goes whole, and an add makes
    a new empty one, so the items added before read as never added."""
    server = start_server(tmp_path / "evicts", options=("--maxmemory-policy", "allkeys-random"))
    try:
        with Resp(server.port) as raw:
            raw("BF.MADD", "f", *items("old", 100))
            raw("CONFIG", "SET", "maxmemory", "1")  # below what is in use: it evicts
            for _ in range(100):
                raw("SET", "filler", "x")  # a write makes the server free memory first
                if raw("EXISTS", "f") == 0:
                    break
            assert raw("EXISTS", "f") == 0, "the filter was not evicted"
            raw("CONFIG", "SET", "maxmemory", "0")
            assert raw("BF.MADD", "f", "new") == [1]
            assert raw("BF.MEXISTS", "f", *items("old", 100)) == [0] * 100
    finally:
        server.kill()


ROOM = "this server's maxmemory leaves free"


@pytest.mark.parametrize("fmt", ["redbloom", "redisbloom"])
def test_a_filter_or_growth_larger_than_the_room_maxmemory_leaves_is_refused(tmp_path, fmt):
    server = start_server(tmp_path / "limited", options=("--maxmemory", "32mb"))
    try:
        with Resp(server.port) as raw:
            raw("SET", "other", "kept")
            # About 36 MB of bits at a 32 MB limit: refused before anything is allocated.
            reply = raw("BF.RESERVE", "huge", "0.01", "30000000", "FORMAT", fmt)
            assert type(reply) is Error and ROOM in reply and "nothing was created" in reply, reply
            assert raw("EXISTS", "huge") == 0
            assert raw("BF.RESERVE", "small", "0.01", "1000", "FORMAT", fmt) == Status("OK")
            # A growth: the next sub-filter holds 10000 x 4096 items, which does not fit.
            assert raw("BF.RESERVE", "g", "0.01", "10000", "EXPANSION", "4096", "FORMAT",
                       fmt) == Status("OK")
            assert 2 not in raw("RB.MADD", "g", packed(items("g", 10000)))
            reply = raw("BF.MADD", "g", *items("h", 50))
            assert type(reply[-1]) is Error and ROOM in reply[-1], reply
            assert all(answer in (0, 1) for answer in reply[:-1])
            assert raw("BF.INFO", "g", "FILTERS") == [1]
            refused = raw("RB.MADD", "g", packed(items("i", 20)))
            assert refused.count(b"\x02") >= 10, refused
            # The server still takes writes: nothing went past its limit.
            assert raw("SET", "after", "x") == Status("OK")
            assert raw("GET", "other") == b"kept"
    finally:
        server.kill()


def test_the_maxmemory_check_can_be_turned_off(tmp_path):
    server = start_server(tmp_path / "unchecked", "MAXMEMORY_CHECK", "no",
                          options=("--maxmemory", "32mb"))
    try:
        with Resp(server.port) as raw:
            assert raw("BF.RESERVE", "huge", "0.01", "30000000") == Status("OK")
            assert raw("DEL", "huge") == 1
    finally:
        server.kill()
