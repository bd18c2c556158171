"""What a server that evicts keys does to the module's filters, and the warning the module
logs when a filter is made on a server whose maxmemory-policy may evict any key."""

from module_util import Resp, items, start_server

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
