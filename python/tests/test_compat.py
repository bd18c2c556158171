"""redbloom.compat.BloomFilter, shaped as pybloomfiltermmap3's, opens an existing file."""

import pytest

import redbloom
from redbloom.compat import BloomFilter


def test_the_constructor_opens_an_existing_file_instead_of_wiping_it(workdir):
    path = str(workdir / "requests.bloom")
    bf = BloomFilter(100000, 0.01, path)
    assert bf.add("https://a") is False  # pybloomfiltermmap: True means "was present"
    assert bf.add("https://a") is True
    bf.update(["https://b", "https://c"])
    bf.close()
    again = BloomFilter(100000, 0.01, path)
    assert "https://a" in again and "https://c" in again
    assert len(again) == 3 and again.capacity == 100000 and again.num_hashes == 7
    again.close()
    fresh = BloomFilter(100000, 0.01, path, overwrite=True)
    assert "https://a" not in fresh


def test_open_and_read_only(workdir):
    path = str(workdir / "r.bloom")
    BloomFilter(1000, 0.01, path).add("x")
    ro = BloomFilter.open(path, "r")
    assert "x" in ro
    with pytest.raises(redbloom.InvalidArgument, match="read-only"):
        ro.add("y")
    with pytest.raises(ValueError):
        BloomFilter.open(path, "w")


def test_in_memory_and_bad_values():
    bf = BloomFilter(1000, 0.001)
    assert bf.filename is None and bf.add("m") is False and "m" in bf
    with pytest.raises(ValueError):
        BloomFilter(1000, 1.5)
    with pytest.raises(TypeError):
        bf.add(12)
