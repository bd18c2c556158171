"""redbloom.Filter: opening and creating at every location, answers, info, lifecycle, and the
measured false-positive rate against theory with zero false negatives."""

import math

import pytest

import redbloom


def locations(workdir, redis_server):
    return {
        "memory": "memory:",
        "file": str(workdir / "f.rbf"),
        # The test's own directory names it: an object's id() is reused once it is freed.
        "redis": redis_server.url + "#pytest-filter-" + workdir.name,
    }


@pytest.mark.parametrize("where", ["memory", "file", "redis"])
def test_add_contains_and_batches(workdir, redis_server, where):
    location = locations(workdir, redis_server)[where]
    with redbloom.open(location, capacity=10000, error_rate=0.001) as f:
        assert f.add("a") is True
        assert f.add("a") is False
        assert "a" in f and f.contains("a")
        assert "never-added" not in f
        assert f.add_many(["x", "y", "x", "a"]) == [True, True, False, False]
        assert f.contains_many(["x", "zz", "y"]) == [True, False, True]
        f.update("item-%d" % i for i in range(1000))
        assert all(f.contains_many("item-%d" % i for i in range(1000)))
        assert abs(len(f) - 1003) < 30
        info = f.info()
        assert info["capacity"] == 10000 and info["layout"] == "classic"
        assert info["set_bits"] > 0 and 0 < info["fill_ratio"] < 1
        f.flush()
    assert f.closed
    with pytest.raises(redbloom.InvalidArgument, match="closed"):
        f.add("b")


@pytest.mark.parametrize("where", ["file", "redis"])
def test_reopened_filter_keeps_its_items(workdir, redis_server, where):
    location = locations(workdir, redis_server)[where]
    with redbloom.Filter.create(location, capacity=1000, layout="blocked") as f:
        f.add_many(["p", "q"])
    with redbloom.open(location) as f:
        assert f.layout == "blocked" and f.capacity == 1000
        assert f.contains_many(["p", "q", "r"]) == [True, True, False]
    with redbloom.Filter.open(location, read_only=True) as f:
        assert "p" in f


def test_open_without_a_size_needs_an_existing_filter(workdir):
    with pytest.raises(redbloom.NotFound, match="capacity="):
        redbloom.open(str(workdir / "missing.rbf"))
    with pytest.raises(redbloom.NotFound):
        redbloom.Filter.open(str(workdir / "missing.rbf"))
    with pytest.raises(redbloom.InvalidArgument, match="memory filter needs its size"):
        redbloom.open("memory:")


def test_a_size_that_differs_from_the_filter_is_refused(workdir):
    path = str(workdir / "f.rbf")
    redbloom.Filter.create(path, capacity=1000).close()
    with pytest.raises(redbloom.FilterExists, match="other parameters"):
        redbloom.open(path, capacity=2000)
    with pytest.raises(redbloom.FilterExists):
        redbloom.Filter.create(path, capacity=1000)
    redbloom.Filter.create(path, capacity=2000, overwrite=True).close()
    assert redbloom.open(path).capacity == 2000


def test_explicit_bits_and_hashes(workdir):
    with redbloom.Filter.create("memory:", bits=1 << 20, hashes=5) as f:
        assert f.hashes == 5 and f.bits >= 1 << 20
    with pytest.raises(redbloom.InvalidArgument, match="go together"):
        redbloom.Filter.create("memory:", bits=1 << 20)


@pytest.mark.parametrize("capacity, error_rate, layout, message", [
    (-5, 0.01, None, "capacity"),
    (float("inf"), 0.01, None, "capacity"),
    (1000, 1.5, None, "error rate"),
    (1000, 0.01, "bloomier", "layout"),
    ("many", 0.01, None, "capacity must be a number"),
])
def test_bad_sizes_say_what_is_wrong(capacity, error_rate, layout, message):
    with pytest.raises(redbloom.InvalidArgument, match=message) as raised:
        redbloom.open("memory:", capacity=capacity, error_rate=error_rate, layout=layout)
    assert isinstance(raised.value, ValueError)


@pytest.mark.parametrize("layout", ["classic", "blocked"])
@pytest.mark.parametrize("where", ["file", "redis"])
def test_false_positive_rate_of_theory_and_no_false_negatives(workdir, redis_server, layout,
                                                               where):
    n, p, trials = 20000, 0.01, 200000
    location = locations(workdir, redis_server)[where] + ("" if where == "file" else "-" + layout)
    with redbloom.Filter.create(location, capacity=n, error_rate=p, layout=layout) as f:
        added = ["member-%d" % i for i in range(n)]
        f.update(added)
        assert all(f.contains_many(added)), "a false negative"
        hits = sum(f.contains_many("stranger-%d" % i for i in range(trials)))
        expected = f.error_rate_at(n) * trials
        # Binomial: 5 standard deviations either way.
        assert abs(hits - expected) < 5 * math.sqrt(expected) + 1, (hits, expected)


def test_repr_names_the_location_and_size(workdir):
    with redbloom.open(str(workdir / "r.rbf"), capacity=100) as f:
        assert "r.rbf" in repr(f) and "capacity 100" in repr(f)
