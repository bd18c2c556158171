"""KnownSet (the orphan-finder): find_missing equals the set difference, exact and Bloom-only;
progress, stats, clear; and the asyncio wrappers."""

import asyncio

import pytest

import redbloom
import redbloom.aio

KNOWN = ["s3://bucket/%d.pdf" % i for i in range(30000)]
CHECKED = ["s3://bucket/%d.pdf" % i for i in range(25000, 40000)]
ORPHANS = [x for x in CHECKED if x not in set(KNOWN)]


@pytest.mark.parametrize("where", ["file", "redis"])
def test_exact_find_missing_is_the_set_difference(workdir, redis_server, where):
    location = {"file": str(workdir / "k.rbf"), "redis": redis_server.url + "#known"}[where]
    # A high error rate, so the companion has false positives to correct.
    with redbloom.KnownSet(location, capacity=30000, error_rate=0.2, exact=True,
                           overwrite=True) as known:
        progress = []
        assert known.add(iter(KNOWN), progress=progress.append) == len(KNOWN)
        assert progress[-1] == len(KNOWN)
        assert known.find_missing(CHECKED, exact=True) == ORPHANS
        bloom = known.find_missing(CHECKED, exact=False)
        assert set(bloom) <= set(ORPHANS) and len(bloom) < len(ORPHANS)
        stats = known.stats()
        assert stats["has_exact"] and stats["exact_entries"] == len(KNOWN)
        assert stats["false_positives"] == len(ORPHANS) - len(bloom)
        assert stats["filter"]["capacity"] == 30000
    with redbloom.KnownSet(location, exact=True) as again:  # reopened, not created
        assert again.find_missing(CHECKED) == ORPHANS
        again.clear()
        assert again.find_missing(KNOWN[:10]) == KNOWN[:10]


@pytest.mark.parametrize("where", ["file", "redis"])
def test_reopened_by_name_keeps_its_companion(workdir, redis_server, where):
    """A KnownSet built with exact=True and reopened by its location alone answers exactly, and
    its adds reach the companion (without it they would be missing there)."""
    location = {"file": str(workdir / "r.rbf"), "redis": redis_server.url + "#reopened"}[where]
    with redbloom.KnownSet(location, capacity=30000, error_rate=0.2, exact=True,
                           overwrite=True) as known:
        known.add(KNOWN[:20000])
    with redbloom.KnownSet(location) as again:
        assert again.stats()["has_exact"]
        again.add(KNOWN[20000:])
        assert again.find_missing(CHECKED) == ORPHANS
    with redbloom.KnownSet(location, exact=True) as third:
        assert third.stats()["exact_entries"] == len(KNOWN)


def test_exact_answers_need_the_companion(workdir):
    with redbloom.KnownSet(str(workdir / "b.rbf"), capacity=1000) as known:
        known.add(["a"])
        with pytest.raises(redbloom.InvalidArgument, match="exact"):
            known.find_missing(["a", "b"])
        assert known.find_missing(["a", "b"], exact=False) == ["b"]


def test_a_missing_set_needs_a_size(workdir):
    with pytest.raises(redbloom.NotFound, match="capacity="):
        redbloom.KnownSet(str(workdir / "none.rbf"))


def test_asyncio_wrappers_do_not_block_the_loop(workdir):
    async def main():
        known = await redbloom.aio.KnownSet.open(str(workdir / "a.rbf"), capacity=50000,
                                                 exact=True)
        seen = []
        ticker_runs = 0

        async def ticker():
            nonlocal ticker_runs
            while True:
                ticker_runs += 1
                await asyncio.sleep(0)

        tick = asyncio.create_task(ticker())
        await known.add(KNOWN, progress=seen.append)
        missing = await known.find_missing(CHECKED)
        tick.cancel()
        stats = await known.stats()
        await known.close()
        async with await redbloom.aio.open(str(workdir / "f.rbf"), capacity=100) as f:
            assert await f.add("x") is True
            assert await f.add_many(["x", "y"]) == [False, True]
            assert await f.contains("y")
        return missing, seen, stats, ticker_runs

    missing, seen, stats, ticker_runs = asyncio.run(main())
    assert missing == ORPHANS
    assert seen and seen[-1] == len(KNOWN)
    assert stats["added"] == len(KNOWN)
    assert ticker_runs > 0
