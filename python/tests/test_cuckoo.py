"""Cuckoo filters from Python: kind="cuckoo" in memory, in a file and in Redis, remove,
remove_many and count against a model, info()'s cuckoo fields, growth past the first table, a
full filter's CapacityExceeded with what it committed, a Bloom filter's remove refused, the same
rules as the CLI for options that make no sense for a cuckoo filter, a file the CLI reads, and
safe removes through a KnownSet with its exact set."""

import asyncio
import collections
import json
import subprocess
import warnings

import pytest

import redbloom
import redbloom.aio


def location(workdir, where, redis_server=None):
    if where == "redis":
        return redis_server.url + "#pytest-cuckoo-" + workdir.name
    return "memory:" if where == "memory" else str(workdir / "c.rbf")


@pytest.mark.parametrize("where", ["memory", "file", "redis"])
def test_add_remove_count_follow_a_model(workdir, redis_server, where):
    with redbloom.open(location(workdir, where, redis_server), capacity=20000, error_rate=1e-6,
                       kind="cuckoo") as f:
        assert f.kind == "cuckoo"
        assert f.add("a") is True and f.add("a") is False  # test-and-set, as a Bloom filter's
        assert "a" in f and f.count("a") == 1
        assert f.count("never-added") == 0 and "never-added" not in f
        with pytest.warns(redbloom.RedbloomWarning, match="never added can remove another"):
            assert f.remove("a") is True
        assert "a" not in f and f.count("a") == 0
        assert f.remove("a") is False  # nothing left to remove
        # A model: the filter holds exactly the items added and not removed (at p = 1e-6 a
        # false positive among these few thousand lookups has a chance of about 1 in 300).
        held = collections.Counter()
        items = ["item-%d" % i for i in range(5000)]
        assert f.add_many(items[:2500]) == [True] * 2500
        f.update(items[2500:])  # no answers: adds all the same
        assert f.add_many(items[2490:2510]) == [False] * 20
        held.update(items)
        gone = items[::3]
        assert f.remove_many(gone) == [True] * len(gone)
        held.subtract(gone)
        assert f.remove_many(gone[:10] + ["x-never"]) == [False] * 11
        answers = f.contains_many(items)
        assert answers == [held[item] > 0 for item in items]
        assert [f.count(item) for item in items[:30]] == [held[i] for i in items[:30]]
        info = f.info()
        assert info["kind"] == "cuckoo"
        cuckoo = info["cuckoo"]
        assert cuckoo["items"] == sum(held.values()) == len(f)
        assert cuckoo["capacity"] == 20000 and cuckoo["error_rate"] == 1e-6
        assert cuckoo["growth"] == 0 and cuckoo["max_bytes"] == 0
        assert len(cuckoo["links"]) == 1
        link = cuckoo["links"][0]
        assert link["fingerprint_bits"] == 23 and link["items"] == cuckoo["items"]
        assert link["bytes"] > 0 and cuckoo["bytes"] >= link["bytes"]
        assert 0 < cuckoo["error_rate_now"] < 1e-6
        assert "23-bit fingerprints" in cuckoo["description"]
        assert info["layout"] is None and info["set_bits"] is None


def test_a_file_keeps_its_items_and_kind(workdir):
    path = str(workdir / "c.rbf")
    with redbloom.Filter.create(path, capacity=1000, error_rate=0.001, kind="cuckoo") as f:
        f.add_many(["p", "q", "r"])
        with pytest.warns(redbloom.RedbloomWarning):
            f.remove("q")
    with redbloom.open(path) as f:  # no kind: whichever is there
        assert f.kind == "cuckoo"
        assert "cuckoo, 1000 items at p=0.001 (13-bit fingerprints)" in repr(f)
        assert f.params["kind"] == "cuckoo" and f.params["capacity"] == 1000
        assert f.layout is None and f.bits is None and f.hashes is None
        assert f.contains_many(["p", "q", "r"]) == [True, False, True]
    with redbloom.open(path, kind="cuckoo", read_only=True) as f:
        assert "p" in f and f.count("p") == 1
    with pytest.raises(redbloom.InvalidArgument, match="is a cuckoo filter"):
        redbloom.open(path, kind="bloom")
    # A size given must be the filter's, as for a Bloom filter.
    with pytest.raises(redbloom.FilterExists, match="other parameters"):
        redbloom.open(path, capacity=5000, error_rate=0.001, kind="cuckoo")


def test_the_cli_reads_a_python_made_cuckoo_filter(workdir, cli):
    path = str(workdir / "shared.rbf")
    with redbloom.open(path, capacity=1000, error_rate=1e-4, kind="cuckoo") as f:
        f.add_many(["one", "two", "three"])
        with pytest.warns(redbloom.RedbloomWarning):
            f.remove("two")
    done = subprocess.run([cli, "count", "-f", path, "-q"], input="one\ntwo\nthree\n",
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "1\tone\n0\ttwo\n1\tthree\n"
    info = json.loads(subprocess.run([cli, "info", "-f", path, "--json"], capture_output=True,
                                     text=True, check=True).stdout)
    assert info["cuckoo"]["items"] == 2


def test_the_caveat_is_said_once_per_filter():
    with redbloom.open("memory:", capacity=1000, kind="cuckoo") as f:
        f.add_many(["a", "b", "c"])
        with warnings.catch_warnings(record=True) as said:
            warnings.simplefilter("always")
            f.remove("a")
            f.remove_many(["b", "c"])
            f.remove("never-added")
        assert [str(w.message) for w in said] == [
            "removing an item that was never added can remove another item's fingerprint "
            "(that item then reads as absent): remove only items you added"]


def test_remove_beside_an_exact_set_goes_through_the_known_set(workdir, cli):
    path = str(workdir / "e.rbf")
    subprocess.run([cli, "create", "--kind", "cuckoo", "-f", path, "-n", "1000", "--exact", "-q"],
                   check=True, capture_output=True)
    subprocess.run([cli, "add", "-f", path, "--exact", "-q"], input="x\nkept\n", text=True,
                   check=True, capture_output=True)
    with redbloom.open(path) as f:
        for call in (lambda: f.remove("x"), lambda: f.remove_many(["x"])):
            with pytest.raises(redbloom.InvalidArgument, match="has an exact set"):
                call()
        assert f.contains_many(["x", "kept"]) == [True, True]
    # Through the known set: only what the exact set holds goes, from both.
    with redbloom.KnownSet(path, exact=True) as known:
        assert known.remove(["x", "never-added", "x"]) == [True, False, False]
        stats = known.stats()
        assert stats["removed"] == 1 and stats["refused"] == 2
        assert known.find_missing(["x", "kept"]) == ["x"]
    with redbloom.open(path) as f:
        assert f.contains_many(["x", "kept"]) == [False, True]


@pytest.mark.parametrize("where", ["file", "redis"])
def test_a_known_set_over_a_cuckoo_filter_removes_safely(workdir, redis_server, where):
    # 20000 added, 20000 never added: removing those is refused, and no added item goes missing.
    location = (str(workdir / "k.rbf") if where == "file"
                else redis_server.url + "#pytest-known-cuckoo-" + workdir.name)
    added = ["added-%d" % i for i in range(20000)]
    never = ["never-%d" % i for i in range(20000)]
    with redbloom.KnownSet(location, capacity=20000, error_rate=0.01, kind="cuckoo",
                           exact=True) as known:
        assert known.add(added) == 20000
        assert known.remove(never) == [False] * 20000
        assert known.find_missing(added, exact=False) == []
        assert known.remove(added[:10000]) == [True] * 10000
        assert known.find_missing(added[10000:], exact=False) == []
        assert known.find_missing(added[:10000]) == added[:10000]
        assert known.stats()["refused"] == 20000


def test_growth_past_the_first_table(workdir):
    with redbloom.open(str(workdir / "g.rbf"), capacity=1000, error_rate=1e-6, growth=2,
                       kind="cuckoo") as f:
        items = ["item-%d" % i for i in range(20000)]
        assert f.add_many(items) == [True] * len(items)
        assert all(f.contains_many(items))
        cuckoo = f.info()["cuckoo"]
        assert cuckoo["growth"] == 2 and len(cuckoo["links"]) >= 5
        bits = [link["fingerprint_bits"] for link in cuckoo["links"]]
        assert bits == sorted(bits) and bits[-1] > bits[0]  # each link at a tighter rate
        assert cuckoo["items"] == 20000 and cuckoo["error_rate_now"] <= 1e-6


def test_max_bytes_stops_the_growth():
    with redbloom.open("memory:", capacity=1000, error_rate=0.01, growth=2, max_bytes=20000,
                       kind="cuckoo") as f:
        items = ["item-%d" % i for i in range(100000)]
        with pytest.raises(redbloom.CapacityExceeded) as raised:
            f.add_many(items)
        committed = raised.value.committed
        assert 3000 < committed < 100000 and len(raised.value.answers) == committed
        assert f.info()["cuckoo"]["bytes"] <= 20000
        assert all(f.contains_many(items[:committed]))


@pytest.mark.parametrize("where", ["memory", "file"])
def test_a_full_filter_says_what_it_committed(workdir, where):
    with redbloom.open(location(workdir, where), capacity=1000, error_rate=0.01,
                       kind="cuckoo") as f:
        items = ["item-%d" % i for i in range(5000)]
        with pytest.raises(redbloom.CapacityExceeded, match="full") as raised:
            f.add_many(items)
        committed = raised.value.committed
        assert 1000 <= committed < 5000
        assert len(raised.value.answers) == committed
        assert isinstance(raised.value, redbloom.IncompleteWrite)
        assert all(f.contains_many(items[:committed]))
        # Removing makes room again.
        with pytest.warns(redbloom.RedbloomWarning):
            assert all(f.remove_many(items[:100]))
        assert f.add("room-again") is True


def test_a_bloom_filter_cannot_remove(workdir):
    with redbloom.open("memory:", capacity=1000, error_rate=0.01) as f:
        assert f.kind == "bloom"
        f.add("a")
        for call in (lambda: f.remove("a"), lambda: f.remove_many(["a"]),
                     lambda: f.count("a")):
            with pytest.raises(redbloom.InvalidArgument,
                               match="Bloom filter, which cannot forget or count an item; a "
                                     "cuckoo filter can: create one with kind='cuckoo'"):
                call()
        assert "a" in f
        assert f.info()["kind"] == "bloom" and f.info()["cuckoo"] is None
    path = str(workdir / "b.rbf")
    redbloom.Filter.create(path, capacity=1000).close()
    with pytest.raises(redbloom.InvalidArgument, match="is a Bloom filter"):
        redbloom.open(path, kind="cuckoo")


def test_options_a_cuckoo_filter_cannot_take_are_named():
    cases = [
        (dict(layout="blocked"), "layout= cannot apply to a cuckoo filter"),
        (dict(window="10m"), "window= cannot apply to a cuckoo filter"),
        (dict(bits=1000, hashes=3), "cannot apply to a cuckoo filter"),
        (dict(engine="bf"), "engine= cannot apply to a cuckoo filter"),
        (dict(max_bytes="1MiB"), "max_bytes="),
        (dict(error_rate=1e-12), "rate"),
    ]
    for extra, message in cases:
        keywords = dict(capacity=1000, kind="cuckoo")
        keywords.update(extra)
        with pytest.raises(redbloom.InvalidArgument, match=message):
            redbloom.open("memory:", **keywords)
    with pytest.raises(redbloom.InvalidArgument, match="kind= is 'bloom'"):
        redbloom.open("memory:", capacity=1000, kind="quotient")
    with pytest.raises(redbloom.InvalidArgument, match="capacity"):
        redbloom.open("memory:", error_rate=0.01, kind="cuckoo")


def test_error_rate_at_points_to_info():
    with redbloom.open("memory:", capacity=1000, kind="cuckoo") as f:
        with pytest.raises(redbloom.InvalidArgument, match="error_rate_now"):
            f.error_rate_at(10)


def test_asyncio_wrapper_removes_and_counts(workdir):
    async def run():
        async with await redbloom.aio.open(str(workdir / "a.rbf"), capacity=100,
                                           kind="cuckoo") as f:
            assert await f.add_many(["a", "b"]) == [True, True]
            with pytest.warns(redbloom.RedbloomWarning):
                assert await f.remove("a") is True
            assert await f.remove_many(["a", "b"]) == [False, True]
            assert await f.count("b") == 0 and await f.contains("b") is False
    asyncio.run(run())


def test_the_command_line_s_request_opens_as_python_s(workdir, cli):
    path = str(workdir / "same.rbf")
    subprocess.run([cli, "create", "-q", "--kind", "cuckoo", "-f", path, "-n", "5000", "-p",
                    "0.1%", "--growth", "2", "--max-bytes", "1MiB"], check=True)
    # A size given must be the filter's: the same options in keywords open it.
    with redbloom.open(path, capacity=5000, error_rate="0.1%", growth=2, max_bytes="1MiB",
                       kind="cuckoo") as f:
        assert f.params["growth"] == 2 and f.params["max_bytes"] == 1 << 20
    refused = subprocess.run([cli, "create", "--kind", "cuckoo", "-f", path + ".2", "--layout",
                              "blocked"], capture_output=True, text=True)
    assert refused.returncode == 2
    assert "--layout cannot apply to a cuckoo filter (--kind cuckoo)" in refused.stderr
    with pytest.raises(redbloom.InvalidArgument,
                       match=r"layout= cannot apply to a cuckoo filter \(kind='cuckoo'\)"):
        redbloom.open("memory:", capacity=5000, layout="blocked", kind="cuckoo")
