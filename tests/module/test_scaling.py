"""Growth: a scaling filter far past its capacity keeps its error rate (module LAYOUT classic and
blocked), and the module's memory limit per filter (MAX_FILTER_BYTES) refuses what is over it
while the server stays up."""

import pytest

from module_util import (FULL, MEMORY_LIMIT, Error, Resp, Status, info_dict, items, packed,
                         parse_header, start_server)

CHUNK = 5000


@pytest.fixture(scope="module", params=["classic", "blocked"])
def layout(request, tmp_path_factory):
    s = start_server(tmp_path_factory.mktemp(request.param), "LAYOUT", request.param)
    yield request.param, s
    s.kill()


def madd(r, key, batch):
    replies = []
    for at in range(0, len(batch), CHUNK):
        replies += r.execute_command("BF.MADD", key, *batch[at:at + CHUNK])
    return replies


def mexists(r, key, batch):
    replies = []
    for at in range(0, len(batch), CHUNK):
        replies += r.execute_command("BF.MEXISTS", key, *batch[at:at + CHUNK])
    return replies


def test_scaling_keeps_the_error_rate(layout):
    name, server = layout
    r = server.client()
    r.execute_command("BF.RESERVE", "s", 0.01, 1000)
    present = items("in", 20000)
    added = madd(r, "s", present)
    assert set(added) <= {0, 1}
    info = info_dict(r.execute_command("BF.INFO", "s"))
    links = info["Number of filters"]
    assert links > 1
    assert info["Capacity"] == sum(1000 * 2 ** i for i in range(links))
    assert sum(1000 * 2 ** i for i in range(links - 1)) < 20000 <= info["Capacity"]
    assert info["Number of items inserted"] == sum(added) == r.execute_command("BF.CARD", "s")
    header = parse_header(r.execute_command("BF.SCANDUMP", "s", 0)[1])
    assert header["layout"] == {"classic": 1, "blocked": 2}[name]
    for i, link in enumerate(header["link"]):
        assert link["capacity"] == 1000 * 2 ** i
        assert link["target_error"] == 0.01 * 0.5 ** (i + 1)
        assert link["items"] == (link["capacity"] if i + 1 < links else
                                 info["Number of items inserted"] - sum(
                                     x["items"] for x in header["link"][:-1]))
    assert mexists(r, "s", present) == [1] * 20000  # no false negatives
    false_positives = sum(mexists(r, "s", items("out", 100000)))
    assert false_positives / 100000 <= 0.01


@pytest.fixture(scope="module")
def limited(tmp_path_factory):
    s = start_server(tmp_path_factory.mktemp("limited"), "MAX_FILTER_BYTES", "1m")
    yield s
    s.kill()


def test_a_filter_over_the_limit_is_refused(limited):
    with Resp(limited.port) as raw:
        raw("FLUSHALL")
        for command in (["BF.RESERVE", "k", "0.0001", "100000000"],
                        ["BF.INSERT", "k", "CAPACITY", "100000000", "ERROR", "0.0001", "ITEMS",
                         "a"]):
            reply = raw(*command)
            assert isinstance(reply, Error) and reply.startswith("ERR"), reply
            assert raw("EXISTS", "k") == 0
        assert raw("BF.RESERVE", "k", "0.01", "100000") == Status("OK")  # 120 KB: below it
        assert raw("PING") == Status("PONG")
    assert limited.alive()


def test_growth_stops_at_the_limit(limited):
    with Resp(limited.port) as raw:
        raw("FLUSHALL")
        # Links of 1000 and 32000 items fit in 1 MiB; the third, of 1024000, does not.
        assert raw("BF.RESERVE", "g", "0.01", "1000", "EXPANSION", "32") == Status("OK")
        added = 0
        for n in range(100):
            reply = raw("BF.MADD", "g", *items("g%d" % n, 1000))
            added += sum(x == 1 for x in reply)
            if isinstance(reply[-1], Error):
                # As for a full non-scaling filter, the array ends at the refused item.
                assert reply[-1] == MEMORY_LIMIT
                assert all(x in (0, 1) for x in reply[:-1])
                break
        else:
            pytest.fail("the filter grew past 100000 items under a 1 MiB limit")
        info = info_dict(raw("BF.INFO", "g"))
        assert (info["Number of filters"], info["Capacity"]) == (2, 33000)
        assert info["Number of items inserted"] == added == 33000
        for item in items("refused", 5):  # an error per refused item
            assert raw("BF.ADD", "g", item) == MEMORY_LIMIT
        assert raw("BF.MADD", "g", "g0:1", "refused:9") == [0, MEMORY_LIMIT]
        assert raw("RB.MADD", "g", packed([b"g0:1"])) == b"\x00"
        assert raw("RB.MADD", "g", packed([b"refused:10"])) == b"\x02"
        assert raw("BF.ADD", "g", "g0:1") == 0
        assert raw("BF.EXISTS", "g", "g0:1") == 1
        assert info_dict(raw("BF.INFO", "g")) == info
        assert raw("PING") == Status("PONG")
    assert limited.alive()


def test_big_filters_do_not_come_in_by_other_doors(limited, make_server):
    unlimited = make_server()
    big = unlimited.client()
    big.execute_command("BF.RESERVE", "big", 0.001, 2000000)  # about 3.6 MB
    with Resp(limited.port) as raw:
        raw("FLUSHALL")
        reply = raw("RESTORE", "big", "0", big.dump("big"))
        assert isinstance(reply, Error), reply
        header = big.execute_command("BF.SCANDUMP", "big", 0)
        reply = raw("BF.LOADCHUNK", "big", *header)
        assert isinstance(reply, Error), reply
        assert raw("EXISTS", "big") == 0
        assert raw("PING") == Status("PONG")
    assert limited.alive()


def test_non_scaling_full_with_packed_items(limited):
    with Resp(limited.port) as raw:
        raw("FLUSHALL")
        raw("BF.RESERVE", "ns", "0.01", "100", "NONSCALING")
        raw("BF.MADD", "ns", *items("n", 100))
        assert raw("BF.ADD", "ns", "n:0") == 0
        assert raw("BF.ADD", "ns", "other") == FULL
