"""redis-py's Count-Min Sketch client (`Redis.cms()`, Debian's python3-redis) on redbloom.so:
the cases redis-py's own tests give for CMS.INITBYDIM, INITBYPROB, INCRBY, QUERY, MERGE (with
and without weights) and INFO (its CMSInfo parser); errors and a pipeline."""

import pytest
import redis


@pytest.fixture
def client(server):
    c = server.client(decode_responses=True)
    c.flushall()
    yield c
    c.close()


def test_cms(client):
    assert client.cms().initbydim("dim", 1000, 5)
    assert client.cms().initbyprob("prob", 0.01, 0.01)
    assert client.cms().incrby("dim", ["foo"], [5])
    assert [0] == client.cms().query("dim", "notexist")
    assert [5] == client.cms().query("dim", "foo")
    assert [10, 15] == client.cms().incrby("dim", ["foo", "bar"], [5, 15])
    assert [10, 15] == client.cms().query("dim", "foo", "bar")
    info = client.cms().info("dim")
    assert (info.width, info.depth, info.count) == (1000, 5, 25)
    info = client.cms().info("prob")
    assert (info.width, info.depth, info.count) == (200, 7, 0)


def test_cms_merge(client):
    assert client.cms().initbydim("A", 1000, 5)
    assert client.cms().initbydim("B", 1000, 5)
    assert client.cms().initbydim("C", 1000, 5)
    assert client.cms().incrby("A", ["foo", "bar", "baz"], [5, 3, 9])
    assert client.cms().incrby("B", ["foo", "bar", "baz"], [2, 3, 1])
    assert [5, 3, 9] == client.cms().query("A", "foo", "bar", "baz")
    assert [2, 3, 1] == client.cms().query("B", "foo", "bar", "baz")
    assert client.cms().merge("C", 2, ["A", "B"])
    assert [7, 6, 10] == client.cms().query("C", "foo", "bar", "baz")
    assert client.cms().merge("C", 2, ["A", "B"], ["1", "2"])
    assert [9, 9, 11] == client.cms().query("C", "foo", "bar", "baz")
    assert client.cms().merge("C", 2, ["A", "B"], ["2", "3"])
    assert [16, 15, 21] == client.cms().query("C", "foo", "bar", "baz")


def test_cms_errors_and_pipeline(client):
    with pytest.raises(redis.ResponseError, match="CMS: key does not exist"):
        client.cms().query("missing", "foo")
    assert client.cms().initbydim("A", 100, 3)
    with pytest.raises(redis.ResponseError, match="CMS: key already exists"):
        client.cms().initbydim("A", 100, 3)
    with pytest.raises(redis.ResponseError, match="CMS: Number cannot be negative"):
        client.cms().incrby("A", ["foo"], [-1])
    pipe = client.pipeline()  # Debian's 4.3 has no cms().pipeline(): commands by name
    pipe.execute_command("CMS.INCRBY", "A", "x", 1, "y", 2)
    pipe.execute_command("CMS.QUERY", "A", "x", "y")
    pipe.execute_command("CMS.INFO", "A")
    incremented, queried, info = pipe.execute()
    assert incremented == [1, 2] and queried == [1, 2]
    assert (info.width, info.depth, info.count) == (100, 3, 3)
