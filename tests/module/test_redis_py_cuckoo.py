"""redis-py's cuckoo-filter client (`Redis.cf()`, Debian's python3-redis) on redbloom.so: the
cases redis-py's own tests and documentation give for CF.RESERVE/CREATE, ADD, ADDNX, INSERT,
INSERTNX, EXISTS, MEXISTS, COUNT, DEL, INFO (its CFInfo parser), SCANDUMP and LOADCHUNK."""

import pytest


@pytest.fixture
def client(server):
    c = server.client(decode_responses=True)
    c.flushall()
    yield c
    c.close()


def test_create_and_reserve(client):
    assert client.cf().create("cuckoo", 1000)
    assert client.cf().create("cuckoo_e", 1000, expansion=1)
    assert client.cf().create("cuckoo_bs", 1000, bucket_size=4)
    assert client.cf().create("cuckoo_mi", 1000, max_iterations=10)
    # reserve(), an alias of create() in newer redis-py, is not in Debian's 4.3.
    assert client.cf().create("r_all", 1000, bucket_size=4, max_iterations=10, expansion=2)
    info = client.cf().info("r_all")
    assert (info.bucketSize, info.maxIteration, info.expansionRate) == (4, 10, 2)


def test_add_and_insert(client):
    assert client.cf().create("cuckoo", 1000)
    assert client.cf().add("cuckoo", "filter")
    assert not client.cf().addnx("cuckoo", "filter")
    assert 1 == client.cf().addnx("cuckoo", "newItem")
    assert [1] == client.cf().insert("captest", ["foo"])
    assert [1] == client.cf().insert("captest", ["foo"], capacity=1000)
    assert [1] == client.cf().insertnx("captest", ["bar"])
    assert [1] == client.cf().insertnx("captest", ["food"], nocreate="1")
    assert [0, 0, 1] == client.cf().insertnx("captest", ["foo", "bar", "baz"])
    assert [0] == client.cf().insertnx("captest", ["bar"], capacity=1000)
    assert [1] == client.cf().insert("empty1", ["foo"], capacity=1000)
    assert [1] == client.cf().insertnx("empty2", ["bar"], capacity=1000)
    info = client.cf().info("captest")
    assert (info.insertedNum, info.deletedNum, info.filterNum) == (5, 0, 1)
    assert (info.bucketNum, info.bucketSize, info.expansionRate, info.maxIteration) == \
        (512, 2, 1, 20)
    assert info.size == 40 + 16 + 1024


def test_exists_and_del(client):
    assert client.cf().create("cuckoo", 1000)
    assert client.cf().add("cuckoo", "filter")
    assert client.cf().exists("cuckoo", "filter")
    assert not client.cf().exists("cuckoo", "notexist")
    assert [1, 0] == client.cf().mexists("cuckoo", "filter", "notexist")
    assert 1 == client.cf().count("cuckoo", "filter")
    assert 0 == client.cf().count("cuckoo", "notexist")
    assert client.cf().delete("cuckoo", "filter")
    assert 0 == client.cf().count("cuckoo", "filter")


def test_scandump_and_loadchunk(server):
    client = server.client()  # chunks are bytes
    client.flushall()
    client.cf().create("cf", 1000, expansion=2)
    for x in range(3000):
        client.cf().add("cf", x)
    chunks, it = [], 0
    while True:
        it, data = client.cf().scandump("cf", it)
        if it == 0:
            break
        chunks.append((it, data))
    before = client.execute_command("CF.DEBUG", "cf")
    client.delete("cf")
    for it, data in chunks:
        assert client.cf().loadchunk("cf", it, data)
    assert client.execute_command("CF.DEBUG", "cf") == before
    assert all(client.cf().mexists("cf", *range(3000)))
