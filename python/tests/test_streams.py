"""Windowed and growing filters from Python: window= forgets after window + one slice, growth=
keeps the rate, max_bytes= stops with CapacityExceeded and what was committed, info() shows the
links. (Windows here run on the real clock: the C++ tests drive a clock.)"""

import contextlib
import time

import pytest

import redbloom


def test_window_remembers_then_forgets(workdir):
    # A 1 s window in slices of 250 ms: an item is present for at least the window after its
    # add, and absent once window + one slice have passed. One sleep serves both filters.
    window, slices = 1, 4
    with contextlib.ExitStack() as stack:
        options = dict(capacity=1000, error_rate=0.001, window=window, slices=slices)
        filters = [
            stack.enter_context(redbloom.open(location, **options))
            for location in ("memory:", str(workdir / "w.rbf"))
        ]
        for f in filters:
            assert f.add_many(["a", "b"]) == [True, True]
            assert f.add("a") is False
            assert "b" in f
            stream = f.info()["stream"]
            assert stream["window_seconds"] == pytest.approx(window)
            assert stream["slices"] == slices and stream["growth"] == 2
            assert len(stream["links"]) == 1
            assert "windowed" in repr(f)
        time.sleep(window + window / slices + 0.1)  # window + one slice, and a little
        for f in filters:
            assert "b" not in f, f
            assert f.add("b") is True


def test_window_string_and_reopen_with_other_options(workdir):
    path = str(workdir / "w10m.rbf")
    with redbloom.open(path, capacity=10000, window="10m") as f:
        f.add("x")
    with redbloom.open(path) as again:  # no options: the filter as it is
        assert "x" in again
        assert again.info()["stream"]["window_seconds"] == 600
    with pytest.raises(redbloom.FilterExists, match="windowed 20m"):
        redbloom.open(path, capacity=10000, window="20m")


def test_growing_filter_keeps_its_rate_and_stops_at_max_bytes(workdir):
    with redbloom.open(str(workdir / "g.rbf"), capacity=1000, error_rate=0.01, growth=2) as f:
        items = ["item-%d" % i for i in range(50000)]
        assert sum(f.add_many(items)) >= 0.99 * len(items)
        assert all(f.contains_many(items))
        absent = sum(f.contains_many("never-%d" % i for i in range(100000)))
        assert absent / 100000 <= 0.01
        stream = f.info()["stream"]
        assert len(stream["links"]) == 6 and stream["error_rate_now"] <= 0.01
    with redbloom.open("memory:", capacity=1000, error_rate=0.01, growth=2, max_bytes=5000) as f:
        with pytest.raises(redbloom.CapacityExceeded, match="over the limit") as raised:
            f.add_many("item-%d" % i for i in range(10000))
        assert 3000 <= raised.value.committed <= 3100
        answers = raised.value.answers  # of the items committed, all but false positives new
        assert len(answers) == raised.value.committed and sum(answers) >= 0.99 * len(answers)
        assert isinstance(raised.value, redbloom.IncompleteWrite)


def test_bad_stream_options_name_the_problem():
    with pytest.raises(redbloom.InvalidArgument, match="capacity"):
        redbloom.open("memory:", window="10m")
    with pytest.raises(redbloom.InvalidArgument, match="unit"):
        redbloom.open("memory:", capacity=10, window="10 parsecs")
    # A string without a unit is refused (is "3600" seconds or minutes?); a number is seconds.
    with pytest.raises(redbloom.InvalidArgument,
                       match=r"'3600' has no unit: give a number and a unit ms, s, m, h or d"):
        redbloom.open("memory:", capacity=10, window="3600")


def test_window_takes_a_timedelta_or_seconds():
    import datetime
    for window in (datetime.timedelta(minutes=10), 600, 600.0, "600s", "10m"):
        with redbloom.open("memory:", capacity=1000, window=window) as f:
            assert f.info()["stream"]["window_seconds"] == 600, window
    with pytest.raises(redbloom.InvalidArgument, match="at least 0.001 seconds"):
        redbloom.open("memory:", capacity=1000, window=datetime.timedelta(0))
    with pytest.raises(redbloom.InvalidArgument, match="window= or growth="):
        redbloom.open("memory:", capacity=10, max_bytes=10**6)
    with pytest.raises(redbloom.InvalidArgument, match="growth"):
        redbloom.open("memory:", capacity=10, growth=1)


@pytest.mark.parametrize("where", ["memory", "file"])
def test_properties_and_info_are_what_was_asked(workdir, where):
    location = "memory:" if where == "memory" else str(workdir / "asked.rbf")
    with redbloom.open(location, capacity=7000, error_rate=0.002, window="10m") as f:
        assert f.capacity == 7000 and f.error_rate == 0.002
        info = f.info()
        assert info["capacity"] == 7000 and info["error_rate"] == 0.002
    with redbloom.open("memory:", capacity=1000, error_rate=0.01, growth=3) as f:
        assert f.capacity == 1000 and f.error_rate == 0.01
        assert f.info()["capacity"] == 1000
