"""Each error class, its built-in bases, and IncompleteWrite.committed when a server dies
mid-batch."""

import pickle
import threading

import pytest

import redbloom


def test_the_hierarchy_mirrors_the_library_and_the_builtins():
    assert issubclass(redbloom.InvalidArgument, (redbloom.Error, ValueError))
    assert issubclass(redbloom.FilterExists, redbloom.InvalidArgument)
    assert issubclass(redbloom.NotFound, redbloom.InvalidArgument)
    assert issubclass(redbloom.NotFound, LookupError)
    assert issubclass(redbloom.StorageError, redbloom.Error)
    assert issubclass(redbloom.StorageError, OSError)
    assert issubclass(redbloom.FormatError, redbloom.StorageError)
    assert issubclass(redbloom.IncompleteFilter, redbloom.FormatError)
    assert issubclass(redbloom.IncompleteWrite, redbloom.StorageError)
    error = redbloom.IncompleteWrite("lost", 7)
    assert str(error) == "lost" and error.committed == 7
    copy = pickle.loads(pickle.dumps(error))
    assert copy.committed == 7 and str(copy) == "lost"


def test_a_file_that_is_not_a_filter_is_a_format_error(workdir):
    (workdir / "junk.rbf").write_bytes(b"x" * 4096)
    with pytest.raises(redbloom.FormatError, match="not a redbloom filter"):
        redbloom.open(str(workdir / "junk.rbf"))


def test_an_unreadable_location_is_a_storage_error(workdir):
    (workdir / "dir.rbf").mkdir()
    with pytest.raises(redbloom.StorageError) as raised:
        redbloom.open(str(workdir / "dir.rbf"))
    assert isinstance(raised.value, OSError)


def test_a_bad_uri_is_an_invalid_argument():
    with pytest.raises(redbloom.InvalidArgument):
        redbloom.open("redis://127.0.0.1:notaport#x", capacity=10)


def test_a_uri_without_a_name_says_how_to_give_one():
    with pytest.raises(redbloom.InvalidArgument) as raised:
        redbloom.open("redis://127.0.0.1:1")
    assert 'redis://127.0.0.1:1#NAME), or give the name on its own' in str(raised.value)
    assert 'name="NAME" in Python' in str(raised.value)


def test_no_server_is_a_storage_error():
    from conftest import free_port
    with pytest.raises(redbloom.StorageError):
        redbloom.open("redis://127.0.0.1:%d#x" % free_port(), capacity=10)


def test_a_filter_still_being_created_is_waited_for_as_long_as_asked(redis_server):
    import datetime
    import time
    client = redis_server.client()
    # What a creator at work (or one that died) leaves: the claim, no partitions yet.
    client.hset("halfmade", mapping={"format": "redbloom", "version": "1", "state": "creating",
                                     "partitions": "1"})
    try:
        for wait, shown in ((0.3, "300ms"), (datetime.timedelta(milliseconds=400), "400ms"),
                            ("500ms", "500ms")):
            started = time.monotonic()
            with pytest.raises(redbloom.IncompleteFilter, match="after waiting " + shown):
                redbloom.open(redis_server.url + "#halfmade", wait_for_creator=wait)
            assert 0.25 <= time.monotonic() - started < 20
        with pytest.raises(redbloom.InvalidArgument, match="wait_for_creator"):
            redbloom.open(redis_server.url + "#halfmade", wait_for_creator=-1)
    finally:
        client.delete("halfmade")


def test_a_server_killed_mid_batch_reports_what_was_committed(tmp_path):
    from conftest import RedisServer
    # Every write is on disk before its reply, so what was reported committed survives a kill.
    server = RedisServer(tmp_path, "--appendonly", "yes", "--appendfsync", "always")
    try:
        f = redbloom.open(server.url + "#dying", capacity=1_000_000, error_rate=0.01)
        items = ["event-%d" % i for i in range(1_000_000)]
        outcome = {}

        def writer():
            try:
                f.add_many(items)
                outcome["finished"] = True
            except redbloom.IncompleteWrite as e:
                outcome["error"] = e

        thread = threading.Thread(target=writer)
        thread.start()
        threading.Event().wait(0.5)
        server.kill()
        thread.join(120)
        assert not thread.is_alive()
        assert "finished" not in outcome, "the batch ended before the kill; make it larger"
        error = outcome["error"]
        assert isinstance(error, OSError) and 0 <= error.committed < len(items)
        assert error.answers == [True] * error.committed  # the answers of what was committed
        server.start()  # the same port and directory: the AOF is replayed
        with redbloom.open(server.url + "#dying") as again:
            assert all(again.contains_many(items[:error.committed]))
    finally:
        server.kill()
