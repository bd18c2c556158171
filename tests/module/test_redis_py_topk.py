"""redis-py's Top-K client (`Redis.topk()`, Debian's python3-redis) on redbloom.so: the cases
redis-py's own tests give for TOPK.RESERVE, ADD, INCRBY, QUERY, COUNT, LIST [WITHCOUNT] and
INFO, with the answers RedisBloom gives."""

import pytest


@pytest.fixture
def client(server):
    c = server.client(decode_responses=True)
    c.flushall()
    yield c
    c.close()


def test_reserve(client):
    assert client.topk().reserve("topk", 5, 100, 5, 0.9)
    # Debian's redis-py (4.3) asks for every figure; the defaults through the plain command.
    assert client.execute_command("TOPK.RESERVE", "topk_default", 3)
    info = client.topk().info("topk_default")  # redis-py's TopKInfo parser
    assert (info.k, info.width, info.depth) == (3, 8, 7)


def test_add_query_count(client):
    assert client.topk().reserve("topk", 3, 50, 4, 0.9)
    added = ["A", "B", "C", "D", "E", "A", "A", "B", "C", "G", "D", "B", "D", "A", "E", "E", 1]
    expelled = [None, None, None, "A", "C", "D", None, None, "E", None, "B", "C", None, None,
                None, "D", None]
    assert client.topk().add("topk", *added) == expelled
    assert client.topk().query("topk", "A", "B", "C", "D", "E", "F", "G") == [1, 1, 0, 0, 1, 0, 0]
    assert client.topk().count("topk", "A", "B", "C", "D", "E", "F", "G") == [4, 3, 2, 3, 3, 0, 1]


def test_list_and_info(client):
    assert client.topk().reserve("topklist", 3, 50, 3, 0.9)
    client.topk().add("topklist", "A", "B", "C", "D", "E", "A", "A", "B", "C", "G", "D", "B",
                      "D", "A", "E", "E")
    assert client.topk().list("topklist") == ["A", "B", "E"]
    assert client.topk().list("topklist", withcount=True) == ["A", 4, "B", 3, "E", 3]
    info = client.topk().info("topklist")
    assert (info.k, info.width, info.depth) == (3, 50, 3)
    assert round(float(info.decay), 1) == 0.9


def test_incrby(client):
    assert client.topk().reserve("topk", 3, 10, 3, 1)
    assert client.topk().incrby("topk", ["bar", "baz", "42"], [3, 6, 2]) == [None, None, None]
    assert client.topk().incrby("topk", ["42", "xyzzy"], [8, 4]) == [None, "bar"]
    assert client.topk().count("topk", "bar", "baz", "42", "xyzzy", 4) == [3, 6, 10, 4, 0]
