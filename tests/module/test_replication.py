"""A replica answers as its master, for filters it got in the full sync and for those the
command stream built (auto-created, scaled, loaded, packed, plain-string partitions); a
3-master cluster with the module on each serves redis-py's RedisCluster client."""

import os
import subprocess

import pytest
from redis.cluster import RedisCluster

from module_util import (PROBE, Error, Resp, free_port, items, packed, populate, snapshot,
                         start_server, wait_until)

DEBUG = ("--enable-debug-command", "yes")


def caught_up(master, replica):
    offset = master.info("replication")["master_repl_offset"]
    r = replica.info("replication")
    return r["master_link_status"] == "up" and r["slave_repl_offset"] == offset


def test_replica_answers_as_the_master(make_server):
    master_server = make_server(options=DEBUG + ("--repl-diskless-sync-delay", "0"))
    master = master_server.client()
    keys = populate(master, "before:")  # reaches the replica in the full sync (RDB)
    replica = make_server(options=DEBUG + ("--replicaof", "127.0.0.1",
                                            str(master_server.port))).client()
    wait_until(lambda: replica.info("replication")["master_link_status"] == "up",
               "the replica's link to come up")
    keys += populate(master, "after:")  # reaches it as commands
    master.execute_command("BF.MADD", "before:scaled", *items("b", 300))  # grows a link
    master.execute_command("BF.RESERVE", "ns", 0.01, 2, "NONSCALING")
    master.execute_command("BF.MADD", "ns", "x1", "x2", "x3")  # the third refused
    keys.append("ns")
    master.set("part", b"\x00" * 65)
    master.execute_command("RB.PARTADD", "part", 65, "classic", 7, 512, 1, 0,
                           packed(items("p", 20)))
    assert master.execute_command("WAIT", 1, 60000) == 1
    wait_until(lambda: caught_up(master, replica), "the replica to catch up")
    assert snapshot(replica, keys) == snapshot(master, keys)
    for key in keys:
        assert replica.execute_command("BF.MEXISTS", key, *PROBE) == \
            master.execute_command("BF.MEXISTS", key, *PROBE)
    assert replica.get("part") == master.get("part")
    # The replica's filters came from its master: id 0 there, never one of its own that would
    # read as a filter made again once it is promoted.
    assert master.execute_command("RB.FILTERID", "ns") > 0
    for key in keys:
        assert replica.execute_command("RB.FILTERID", key) in (0, None)
    with Resp(replica.connection_pool.connection_kwargs["port"]) as raw:
        reply = raw("BF.ADD", "before:auto", "y")
        assert isinstance(reply, Error) and reply.startswith("READONLY"), reply
        assert raw("RB.PARTEXISTS", "part", 65, "classic", 7, 512, 1, 0,
                   packed(items("p", 20))) == b"\x01" * 20


def test_bf_adds_on_a_cli_filter_reach_the_replica(make_server):
    """BF.MADD on a filter the CLI made writes its string partitions on the server; the command
    goes to the replica as it is, which hashes the items the same way."""
    cli = os.environ.get("REDBLOOM_CLI")
    if not cli or not os.access(cli, os.X_OK):
        pytest.fail("REDBLOOM_CLI must name the built redbloom command (ctest sets it)")
    master_server = make_server(options=DEBUG + ("--repl-diskless-sync-delay", "0"))
    master = master_server.client()
    replica = make_server(options=DEBUG + ("--replicaof", "127.0.0.1",
                                            str(master_server.port))).client()
    wait_until(lambda: replica.info("replication")["master_link_status"] == "up",
               "the replica's link to come up")
    subprocess.run([cli, "create", "--redis", "redis://127.0.0.1:%d" % master_server.port,
                    "--name", "urls", "-n", "100000", "--partition-size", "16KiB", "-q"],
                   check=True, timeout=120)
    added = items("bf", 3000)
    assert master.execute_command("BF.MADD", "urls", *added) == [1] * len(added)
    assert master.execute_command("WAIT", 1, 60000) == 1
    wait_until(lambda: caught_up(master, replica), "the replica to catch up")
    parts = [key for key in master.keys("urls:bits:*")]
    assert len(parts) > 1
    assert [replica.get(key) for key in parts] == [master.get(key) for key in parts]
    assert replica.execute_command("BF.MEXISTS", "urls", *added) == [1] * len(added)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    nodes = [start_server(tmp_path_factory.mktemp("node"), options=(
        "--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf", "--cluster-port",
        str(free_port()))) for _ in range(3)]
    clients = [n.client() for n in nodes]
    for client, (first, last) in zip(clients, [(0, 5460), (5461, 10922), (10923, 16383)]):
        client.execute_command("CLUSTER", "ADDSLOTSRANGE", first, last)
    for client in clients[1:]:
        bus = int(client.config_get("cluster-port")["cluster-port"])
        port = client.connection_pool.connection_kwargs["port"]
        clients[0].execute_command("CLUSTER", "MEET", "127.0.0.1", port, bus)

    def ok():
        for client in clients:
            info = client.cluster("info")
            if info["cluster_state"] != "ok" or int(info["cluster_known_nodes"]) != 3:
                return False
        return True

    wait_until(ok, "cluster_state:ok on the 3 masters")
    yield nodes
    for node in nodes:
        node.kill()


def test_cluster(cluster):
    rc = RedisCluster(host="127.0.0.1", port=cluster[0].port, socket_timeout=60)
    keys = ["filter:%d" % n for n in range(300)]
    for key in keys:
        assert rc.execute_command("BF.ADD", key, "item") == 1
        assert rc.execute_command("BF.MADD", key, *items(key, 20)) == [1] * 20
    for key in keys:
        assert rc.execute_command("BF.EXISTS", key, "item") == 1
        assert rc.execute_command("BF.MEXISTS", key, *items(key, 20)) == [1] * 20
        assert rc.execute_command("BF.CARD", key) == 21
    sizes = [n.client().dbsize() for n in cluster]
    assert sum(sizes) == 300 and min(sizes) > 50  # every master holds some
    bf = rc.bf()
    assert bf.create("cluster:reserved", 0.01, 10)
    assert bf.madd("cluster:reserved", *items("r", 100)).count(1) >= 95
    assert bf.info("cluster:reserved").filterNum > 1
    assert rc.execute_command("BF.EXISTS", "no such filter", "item") == 0
    rc.close()


def test_cli_on_a_cluster(cluster):
    cli = os.environ.get("REDBLOOM_CLI")
    if not cli or not os.access(cli, os.X_OK):
        pytest.fail("REDBLOOM_CLI must name the built redbloom command (ctest sets it)")
    uri = "redis+cluster://127.0.0.1:%d" % cluster[0].port
    # Partitions spread over the masters; RB.PARTADD / RB.PARTEXISTS on each.
    subprocess.run([cli, "create", "--redis", uri, "--name", "c", "-n", "100000",
                    "--partition-size", "16KiB", "-q"], check=True, timeout=120)
    added = items("cli", 2000)
    subprocess.run([cli, "add", "--redis", uri, "--name", "c", "-q"], check=True, timeout=120,
                   input=b"\n".join(added) + b"\n")
    found = subprocess.run([cli, "exists", "--redis", uri, "--name", "c", "-q"], timeout=120,
                           input=b"\n".join(added + items("absent", 2000)) + b"\n",
                           capture_output=True)
    assert found.returncode == 0, found.stderr.decode()
    present = found.stdout.splitlines()
    assert present[:2000] == added and len(present) < 2000 + 100
    calls = sum(int(n.client().info("commandstats").get("cmdstat_rb.partaddh", {}).get(
        "calls", 0)) for n in cluster)
    assert calls > 0
    assert all(n.client().dbsize() > 0 for n in cluster)
