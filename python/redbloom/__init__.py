"""redbloom: Bloom filters for deduplication and membership tests, in a file, in Redis (one
server, several, or a cluster) or in memory; the same bits as the redbloom CLI and C++ library.

    import redbloom
    with redbloom.open("urls.rbf", capacity=10_000_000, error_rate=0.001) as seen:
        if seen.add("https://example.com/a"):      # True: new (atomic test-and-set)
            ...
        "https://example.com/b" in seen             # False: certainly never added
"""

from ._errors import (
    CapacityExceeded,
    Error,
    FilterExists,
    FormatError,
    IncompleteFilter,
    IncompleteWrite,
    Interrupted,
    InvalidArgument,
    NotFound,
    RedbloomWarning,
    StorageError,
)
from ._redbloom import Filter, KnownSet, RecordKey
from .records import dedup_records
from ._version import __version__  # written by CMake: the version `redbloom --version` prints

__all__ = [
    "open",
    "Filter",
    "KnownSet",
    "RecordKey",
    "dedup_records",
    "Error",
    "InvalidArgument",
    "FilterExists",
    "NotFound",
    "StorageError",
    "FormatError",
    "IncompleteFilter",
    "IncompleteWrite",
    "Interrupted",
    "CapacityExceeded",
    "RedbloomWarning",
]


def open(location, capacity=None, error_rate=None, layout=None, *, name="", bits=None,
         hashes=None, create=True, read_only=False, window=None, slices=None, growth=None,
         max_bytes=None, engine=None, nonscaling=False, kind=None, wait_for_creator=None):
    """Opens the filter at `location` (a path, "redis://host:port#name", "redis://a,redis://b#name",
    "redis+cluster://host:port#name" or "memory:"; rediss:// and rediss+cluster:// for TLS, as
    "rediss://host:6380?tls_ca=/path/ca.crt#name"); with a size (capacity=, error_rate=, layout=)
    and create=True, creates it when missing. A size given must match the filter's
    (FilterExists otherwise); without one, the filter must exist (NotFound).

    window= (seconds, a timedelta, or "10m") makes a filter that remembers items that long,
    capacity= being the items per window; growth= (e.g. 2) one that grows instead of filling
    up; max_bytes= caps either (CapacityExceeded when reached).

    engine="bf" uses a filter of the Redis server's own Bloom engine (RedisBloom, Redis 8,
    valkey-bloom, redbloom.so) through its BF.* commands: when missing it is created with
    BF.RESERVE from capacity=, error_rate=, growth= (its EXPANSION) or nonscaling=True; an
    existing one is used as the server made it. engine=None opens whichever kind is there.

    kind="cuckoo" makes a cuckoo filter (from capacity=, error_rate=, growth=, max_bytes=), in
    memory or in a file: it can also forget items (remove, remove_many) and count them. Removing
    an item that was never added can make another item disappear: remove only items you added.
    kind=None opens whichever kind is there; kind="bloom" or "cuckoo" insists on one.

    wait_for_creator= (seconds, a timedelta, or "2m"; default 30 seconds) is how long to wait
    for another process that is still creating the filter in Redis before IncompleteFilter."""
    return Filter.open(location, name=name, capacity=capacity, error_rate=error_rate,
                       layout=layout, bits=bits, hashes=hashes, create=create,
                       read_only=read_only, window=window, slices=slices, growth=growth,
                       max_bytes=max_bytes, engine=engine, nonscaling=nonscaling, kind=kind,
                       wait_for_creator=wait_for_creator)
