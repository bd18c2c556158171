"""redbloom.open and the Scrapy dupefilter over TLS (rediss://), against redis-servers that take
TLS only, with certificates made by the test (tests/support/make-tls-certs.sh)."""

import time

import pytest
from scrapy import Request
from scrapy.core.scheduler import Scheduler
from scrapy.utils.test import get_crawler

import redbloom
from redis_server import RedisServer, make_tls_certificates


@pytest.fixture(scope="module")
def certs(tmp_path_factory):
    return make_tls_certificates(tmp_path_factory.mktemp("tls"))


@pytest.fixture(scope="module")
def tls_server(tmp_path_factory, certs):
    server = RedisServer(tmp_path_factory.mktemp("redis-tls"), tls=certs)
    yield server
    server.kill()


@pytest.fixture(scope="module")
def mutual_server(tmp_path_factory, certs):
    server = RedisServer(tmp_path_factory.mktemp("redis-mtls"), tls=certs, tls_auth_clients=True)
    yield server
    server.kill()


@pytest.mark.parametrize("which", ["tls_server", "mutual_server"])
def test_open_add_many_and_reopen(request, which):
    server = request.getfixturevalue(which)
    assert server.url.startswith("rediss://")
    items = ["item-%d" % i for i in range(5000)]
    with redbloom.open(server.url + "#py", capacity=100_000, error_rate=1e-3) as f:
        assert f.add_many(items) == [True] * len(items)
        assert f.add_many(items[:10] + ["fresh"]) == [False] * 10 + [True]
    with redbloom.open(server.url + "#py") as f:
        assert f.contains_many(items) == [True] * len(items)
    assert server.client().exists("py") == 1
    server.client().delete("py")


def test_failures_say_what_failed(tls_server, mutual_server, certs):
    port = tls_server.port
    cases = [
        ("rediss://127.0.0.1:%d?tls_ca=%s#f" % (port, certs / "other-ca.crt"),
         "did not verify: .*its CA is not the one in tls_ca="),
        ("%s&tls_server_name=redis.example.com#f" % tls_server.url, "hostname mismatch"),
        ("redis://127.0.0.1:%d#f" % port, "use rediss://"),
        ("rediss://127.0.0.1:%d?tls_ca=%s#f" % (mutual_server.port, certs / "ca.crt"),
         "give tls_cert= and tls_key="),
    ]
    for location, message in cases:
        start = time.monotonic()
        with pytest.raises(redbloom.StorageError, match=message.replace("(", r"\(")):
            redbloom.open(location, capacity=1000, error_rate=0.01)
        assert time.monotonic() - start < 60, location


def test_scrapy_dupefilter_from_settings(tls_server):
    crawler = get_crawler(settings_dict={"DUPEFILTER_CLASS": "redbloom.scrapy.RedbloomDupeFilter",
                                         "REQUEST_FINGERPRINTER_IMPLEMENTATION": "2.7",
                                         "REDBLOOM_URL": tls_server.url,
                                         "REDBLOOM_KEY": "tls-%(spider)s",
                                         "REDBLOOM_CAPACITY": 5000})
    df = Scheduler.from_crawler(crawler).df
    df.open()
    assert df.request_seen(Request("http://example.com/tls")) is False
    assert df.request_seen(Request("http://example.com/tls")) is True
    df.close("finished")
    client = tls_server.client()
    assert client.exists("tls-scrapy") == 1
    # The fingerprinter is recorded beside the filter over the same TLS settings.
    assert client.get("tls-scrapy:scrapy-fingerprinter").startswith(b"scrapy.")
