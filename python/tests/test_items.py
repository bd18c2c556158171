"""Items: str (UTF-8), bytes, any buffer, numpy arrays read in place, any iterable; the same
item in every form sets the same bits; anything else is a TypeError."""

import array

import numpy as np
import pytest

import redbloom


@pytest.fixture
def f():
    with redbloom.open("memory:", capacity=100000, error_rate=1e-6) as filter_:
        yield filter_


def test_every_form_of_one_item_is_the_same_item(f):
    assert f.add("café") is True
    for same in ["café", "café".encode(), bytearray("café".encode()),
                 memoryview("café".encode()), np.frombuffer("café".encode(), dtype=np.uint8),
                 array.array("B", "café".encode()), np.bytes_("café".encode())]:
        assert same in f, type(same)
        assert f.add(same) is False, type(same)


def test_batches_take_any_iterable(f):
    items = ["u%d" % i for i in range(5000)]
    assert f.add_many(iter(items)) == [True] * 5000
    assert f.contains_many(x.encode() for x in items) == [True] * 5000
    assert f.contains_many(tuple(items[:3]) + ("other",)) == [True, True, True, False]
    assert f.add_many([]) == [] and f.contains_many(()) == []


def test_numpy_fixed_width_arrays_are_read_in_place(f):
    words = [b"alpha", b"beta", b"gamma", b"", b"x" * 16]
    arr = np.array(words, dtype="S16")
    assert f.add_many(arr) == [True] * 5
    assert f.contains_many(words) == [True] * 5
    # A strided view (every other element) and a 2-D uint8 array, one row an item.
    assert f.contains_many(arr[::2]) == [True, True, True]
    rows = np.frombuffer(b"row1row2row3", dtype=np.uint8).reshape(3, 4)
    assert f.add_many(rows) == [True, True, True]
    assert f.contains_many([b"row1", b"row2", b"row3"]) == [True, True, True]
    # numpy strips trailing NULs from S<n> elements: the item is what arr[i] gives.
    assert arr[3] == b"" and b"" in f


def test_numpy_unicode_arrays_are_their_strings(f):
    arr = np.array(["ä", "bb", "ccc"])
    assert f.add_many(arr) == [True, True, True]
    assert f.contains_many(["ä", "bb", "ccc"]) == [True, True, True]


@pytest.mark.parametrize("bad", [3, 2.5, None, object(), ("tuple",), ["list"]])
def test_anything_else_is_a_type_error(f, bad):
    with pytest.raises(TypeError, match="str, bytes or a bytes-like object"):
        f.add(bad)
    with pytest.raises(TypeError):
        bad in f


def test_a_batch_of_the_wrong_things_adds_nothing_past_the_error(f):
    with pytest.raises(TypeError, match="not int"):
        f.add_many(["fine", 7])
    with pytest.raises(TypeError, match="iterable"):
        f.add_many(42)
    with pytest.raises(TypeError, match="one str"):
        f.add_many("a string is one item")
    with pytest.raises(TypeError, match="one bytes"):
        f.update(b"bytes too")


def test_an_iterator_that_raises_propagates(f):
    def items():
        yield "one"
        raise RuntimeError("source failed")

    with pytest.raises(RuntimeError, match="source failed"):
        f.add_many(items())
