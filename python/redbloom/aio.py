"""asyncio wrappers: every call runs in the event loop's default executor, where redbloom
releases the GIL, so filters and known sets never block the loop.

    known = await redbloom.aio.KnownSet.open("redis://cache#s3-urls", capacity=10_000_000,
                                             exact=True)
    await known.add(s3_urls, progress=lambda done: log.info("%d cached", done))
    orphans = await known.find_missing(db_urls)
"""

import asyncio
import functools

from . import _redbloom
from . import open as _open_filter

__all__ = ["open", "Filter", "KnownSet"]


async def _run(function, *args, **kwargs):
    loop = asyncio.get_running_loop()
    return await loop.run_in_executor(None, functools.partial(function, *args, **kwargs))


def _on_loop(progress):
    """A progress callback called from the executor thread runs on the loop's thread."""
    if progress is None:
        return None
    loop = asyncio.get_running_loop()
    return lambda done: loop.call_soon_threadsafe(progress, done)


class _Awaitable:
    """What both wrappers share: the wrapped object (`.sync`), flush, close, `async with`."""

    def __init__(self, sync):
        self.sync = sync

    async def flush(self):
        return await _run(self.sync.flush)

    async def close(self):
        return await _run(self.sync.close)

    async def __aenter__(self):
        return self

    async def __aexit__(self, *exc):
        await self.close()


class Filter(_Awaitable):
    """An awaitable face of redbloom.Filter (the same filter: `.sync`)."""

    async def add(self, item):
        return await _run(self.sync.add, item)

    async def contains(self, item):
        return await _run(self.sync.contains, item)

    async def add_many(self, items):
        return await _run(self.sync.add_many, items)

    async def contains_many(self, items):
        return await _run(self.sync.contains_many, items)

    async def update(self, items):
        return await _run(self.sync.update, items)

    async def remove(self, item):
        return await _run(self.sync.remove, item)

    async def remove_many(self, items):
        return await _run(self.sync.remove_many, items)

    async def count(self, item):
        return await _run(self.sync.count, item)

    async def info(self):
        return await _run(self.sync.info)


async def open(location, *args, **kwargs):
    """redbloom.open, awaited."""
    return Filter(await _run(_open_filter, location, *args, **kwargs))


class KnownSet(_Awaitable):
    """An awaitable face of redbloom.KnownSet: its calls never block the event loop."""

    @classmethod
    async def open(cls, location, **kwargs):
        return cls(await _run(_redbloom.KnownSet, location, **kwargs))

    async def add(self, items, progress=None):
        return await _run(self.sync.add, items, _on_loop(progress))

    async def find_missing(self, items, exact=True, progress=None):
        return await _run(self.sync.find_missing, items, exact, _on_loop(progress))

    async def stats(self, measure_storage=True):
        return await _run(self.sync.stats, measure_storage)

    async def clear(self):
        return await _run(self.sync.clear)
