"""Operating the module as RedisBloom's users operate theirs: the `INFO redbloom` section
(filters and bytes per type, calls per command) and a replica's background (async) load of
the module's values. Active defragmentation cannot run on Debian's redis-server (its jemalloc
lacks the defragmentation hint); its callbacks are tested in the core
(tests/test_chain_relocation.cpp, tests/test_redisbloom_chain.cpp)."""

from module_util import items, wait_until

ACTIVE_DEFRAG_REFUSAL = "requires a Redis server compiled with a modified Jemalloc"


def section(r):
    return {k: int(v) for k, v in r.info("redbloom").items()}


def test_info_counts_filters_bytes_and_commands(make_server):
    r = make_server().client()
    start = section(r)
    assert start["redbloom_own_filters"] == 0 and start["redbloom_redisbloom_filters"] == 0
    r.execute_command("BF.RESERVE", "own", 0.01, 1000)
    r.execute_command("BF.RESERVE", "rb", 0.01, 1000, "FORMAT", "redisbloom")
    r.execute_command("BF.MADD", "auto", *items("a", 10))
    r.execute_command("BF.MEXISTS", "rb", "x", "y")
    r.execute_command("BF.MEXISTS", "rb", "x")
    r.execute_command("RB.VERSION")
    now = section(r)
    assert now["redbloom_own_filters"] == 2 and now["redbloom_redisbloom_filters"] == 1
    assert now["redbloom_cmd_bf_reserve"] == 2
    assert now["redbloom_cmd_bf_madd"] == 1 and now["redbloom_cmd_bf_mexists"] == 2
    # Every command the module registers is counted, its own RB.* ones too.
    assert now["redbloom_cmd_rb_version"] == 1 and now["redbloom_cmd_rb_partadd"] == 0
    assert now["redbloom_cmd_rb_stream"] == 0 and now["redbloom_cmd_rb_stream_ro"] == 0
    # The bits as the server's allocator holds them: at least what BF.DEBUG says of the bytes.
    debug = r.execute_command("BF.DEBUG", "rb")
    bits_bytes = sum(int(line.split()[0].split(b":")[1]) for line in debug[1:])
    assert bits_bytes <= now["redbloom_redisbloom_bytes"] < bits_bytes + 4096
    assert now["redbloom_own_bytes"] > 0
    # Growth, COPY, and their end (DEL, and UNLINK of a big chain, freed in the background).
    r.execute_command("BF.MADD", "rb", *items("g", 3000))
    grown = section(r)
    assert grown["redbloom_redisbloom_bytes"] > now["redbloom_redisbloom_bytes"]
    r.copy("rb", "rb2")
    r.copy("own", "own2")
    copied = section(r)
    assert copied["redbloom_redisbloom_filters"] == 2 and copied["redbloom_own_filters"] == 3
    assert copied["redbloom_redisbloom_bytes"] == 2 * grown["redbloom_redisbloom_bytes"]
    r.execute_command("BF.RESERVE", "long", 0.0001, 1, "EXPANSION", 1, "FORMAT", "redisbloom")
    r.execute_command("BF.MADD", "long", *items("l", 200))  # a sub-filter per item
    r.delete("own", "auto", "rb2")
    r.unlink("own2", "long", "rb")
    wait_until(lambda: section(r)["redbloom_redisbloom_filters"] == 0
               and section(r)["redbloom_own_filters"] == 0, "the filters to be freed")
    wait_until(lambda: section(r)["redbloom_redisbloom_bytes"] == 0
               and section(r)["redbloom_own_bytes"] == 0, "their bytes to be freed")


def test_info_counts_filters_loaded_from_disk(make_server):
    server = make_server()
    r = server.client()
    r.execute_command("BF.MADD", "own", *items("a", 500))
    r.execute_command("BF.RESERVE", "rb", 0.01, 100, "FORMAT", "redisbloom")
    r.execute_command("BF.MADD", "rb", *items("a", 500))
    before = section(r)
    r.save()
    server.restart()
    after = section(server.client())
    for field in ("own_filters", "own_bytes", "redisbloom_filters", "redisbloom_bytes"):
        assert after["redbloom_" + field] == before["redbloom_" + field], field


def test_a_replica_loads_the_module_s_values_in_the_background(make_server):
    """With repl-diskless-load swapdb a replica loads a full sync beside the data it serves,
    which Redis 7.0 does only when every module says its values allow it."""
    master_server = make_server(options=("--repl-diskless-sync", "yes",
                                         "--repl-diskless-sync-delay", "0"))
    master = master_server.client()
    master.execute_command("BF.MADD", "own", *items("a", 2000))
    master.execute_command("BF.RESERVE", "rb", 0.001, 100, "FORMAT", "redisbloom")
    master.execute_command("BF.MADD", "rb", *items("a", 2000))
    replica_server = make_server(options=("--repl-diskless-load", "swapdb", "--replicaof",
                                          "127.0.0.1", str(master_server.port)))
    replica = replica_server.client()
    wait_until(lambda: replica.info("replication")["master_link_status"] == "up",
               "the replica's link to come up")
    log = replica_server.log.read_text(errors="replace")
    assert "not aware of async replication" not in log
    assert "Swapping active DB with loaded DB" in log
    probe = items("a", 2000) + items("b", 2000)
    for key in ("own", "rb"):
        assert replica.execute_command("BF.MEXISTS", key, *probe) == \
            master.execute_command("BF.MEXISTS", key, *probe)
    assert section(replica)["redbloom_redisbloom_filters"] == 1


def test_this_server_refuses_active_defragmentation(make_server):
    """Documents why the server-level defragmentation test is not here: when this fails, the
    server can defragment, and a test that fragments memory and waits for the module's
    `*_defrag_moved` counters belongs in its place."""
    r = make_server().client()
    try:
        r.config_set("activedefrag", "yes")
    except Exception as e:  # noqa: BLE001 - the refusal is the expected reply
        assert ACTIVE_DEFRAG_REFUSAL in str(e)
        return
    raise AssertionError("this redis-server defragments: test the module's callbacks on it")
