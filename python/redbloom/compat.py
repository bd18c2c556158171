"""Migration from pybloomfiltermmap3: a BloomFilter with its constructor and method names.

    from redbloom.compat import BloomFilter
    bf = BloomFilter(1_000_000, 0.01, "requests.bloom")   # opens the file if it exists

Differences, on purpose: the constructor opens an existing file instead of wiping it (give
`overwrite=True` for the old behaviour); items are str, bytes or bytes-like only (other objects
raise TypeError instead of being hashed with Python's hash()); the file is a redbloom filter
(readable by the redbloom CLI), not a pybloomfiltermmap file. As in pybloomfiltermmap,
add() returns True when the item was already present (redbloom.Filter.add says the opposite).
"""

from . import _redbloom

__all__ = ["BloomFilter"]


class BloomFilter:
    def __init__(self, capacity, error_rate, filename=None, *, overwrite=False):
        if not 0 < error_rate < 1:
            raise ValueError("error_rate must be in (0, 1), got %r" % (error_rate,))
        location = "memory:" if filename is None else str(filename)
        if filename is None or overwrite:
            self._filter = _redbloom.Filter.create(location, capacity=capacity,
                                                   error_rate=error_rate, overwrite=overwrite)
        else:
            self._filter = _redbloom.Filter.open(location, capacity=capacity,
                                                 error_rate=error_rate, create=True)
        self._filename = filename

    @classmethod
    def open(cls, filename, mode="rw"):
        """Opens an existing filter file (mode "r": read only)."""
        if mode not in ("r", "rw"):
            raise ValueError('mode must be "r" or "rw"')
        self = cls.__new__(cls)
        self._filter = _redbloom.Filter.open(str(filename), read_only=(mode == "r"))
        self._filename = filename
        return self

    def add(self, item):
        """Adds the item; True if it was (by the filter's answer) already present."""
        return not self._filter.add(item)

    def update(self, items):
        self._filter.update(items)

    def __contains__(self, item):
        return item in self._filter

    def __len__(self):
        return len(self._filter)

    @property
    def approx_len(self):
        return len(self._filter)

    @property
    def capacity(self):
        return self._filter.capacity

    @property
    def error_rate(self):
        return self._filter.error_rate

    @property
    def num_bits(self):
        return self._filter.bits

    @property
    def num_hashes(self):
        return self._filter.hashes

    @property
    def bit_count(self):
        return self._filter.info()["set_bits"]

    @property
    def filename(self):
        return self._filename

    name = filename

    def sync(self):
        self._filter.flush()

    def close(self):
        self._filter.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

