"""The package and the Scrapy dupefilter on a server set up like a managed service: TLS only, no
default user, CONFIG renamed away, users limited to a key pattern without @dangerous (CONFIG,
DEBUG, MODULE, KEYS, INFO). Each filter is used by a user allowed only that filter's names (NAME,
NAME:*): the server's ACL LOG then shows any key read or written outside them."""

import pytest
from scrapy import Request
from scrapy.core.scheduler import Scheduler
from scrapy.utils.test import get_crawler

import redbloom
from redis_server import RedisServer, make_tls_certificates

ADMIN = ("admin", "admin-secret")
# Every creation there warns that the eviction policy cannot be read (tested once, below).
pytestmark = pytest.mark.filterwarnings("ignore:.*maxmemory-policy could not be read")


@pytest.fixture(scope="module")
def managed(tmp_path_factory):
    certificates = make_tls_certificates(tmp_path_factory.mktemp("tls"))
    server = RedisServer(tmp_path_factory.mktemp("managed"),
                         "--rename-command", "CONFIG", "",
                         "--user", "default", "off",
                         "--user", "app", "on", ">app-secret", "~app:*", "resetchannels",
                         "+@all", "-@dangerous",
                         "--user", *ADMIN[:1], "on", ">" + ADMIN[1], "~*", "&*", "+@all",
                         tls=certificates, auth=ADMIN)
    yield server
    server.kill()


def user_for(server, *names):
    """A URI of a user whose keys are exactly those of the named filters."""
    user = "u-" + "-".join(n.replace(":", "_") for n in names)
    patterns = [p for n in names for p in ("~" + n, "~" + n + ":*")]
    server.client().execute_command("ACL", "SETUSER", user, "on", ">pw-" + user, "resetkeys",
                                    *patterns, "resetchannels", "+@all", "-@dangerous")
    return login(server, user, "pw-" + user)


def login(server, user, password):
    """The server's URI (rediss:// with the test CA) with a user and password."""
    scheme, rest = server.url.split("://", 1)
    return "%s://%s:%s@%s" % (scheme, user, password, rest)


def refused_keys(server):
    """The keys the server refused anyone since the last call."""
    client = server.client()
    refused = [entry["object"] for entry in client.acl_log() if entry["reason"] == "key"]
    client.acl_log_reset()
    return refused


def test_an_eviction_policy_that_cannot_be_read_is_said(managed):
    client = managed.client()
    with pytest.raises(Exception, match="unknown command"):
        client.execute_command("CONFIG", "GET", "maxmemory")
    with pytest.warns(redbloom.RedbloomWarning, match="maxmemory-policy could not be read"):
        app = redbloom.open(login(managed, "app", "app-secret") + "#app:probe",
                            capacity=1000, error_rate=0.01)
    assert app.add("x") is True
    app.close()
    refused_keys(managed)


def test_filters_of_every_kind_touch_only_their_own_keys(managed):
    refused_keys(managed)
    items = ["https://example.com/%d" % i for i in range(5000)]
    plain = redbloom.open(user_for(managed, "app:plain") + "#app:plain", capacity=20000,
                          error_rate=0.001, layout="blocked")
    assert plain.add_many(items) == [True] * len(items)
    assert plain.add_many(items[:100]) == [False] * 100
    assert all(plain.contains_many(items))
    plain.update(["bulk-%d" % i for i in range(50000)])
    assert "bulk-7" in plain
    assert plain.info()["capacity"] == 20000
    plain.close()

    windowed = redbloom.open(user_for(managed, "app:window") + "#app:window", capacity=10000,
                             error_rate=0.001, window="10m")
    assert sum(windowed.add_many(items)) == len(items)
    assert not any(windowed.add_many(items))
    windowed.info()
    windowed.close()

    growing = redbloom.open(user_for(managed, "app:growing") + "#app:growing", capacity=500,
                            error_rate=0.001, growth=2)
    growing.add_many(items)
    assert all(growing.contains_many(items))
    assert len(growing.info()["stream"]["links"]) >= 2
    growing.close()

    assert refused_keys(managed) == []


def test_a_name_outside_the_users_keys_is_refused_naming_the_permission(managed):
    with pytest.raises(redbloom.StorageError) as refused:
        redbloom.open(login(managed, "app", "app-secret") + "#elsewhere",
                      capacity=1000, error_rate=0.01)
    assert "the Redis user may not use a key of this filter" in str(refused.value)
    assert "~NAME ~NAME:*" in str(refused.value)
    assert "app-secret" not in str(refused.value)
    refused_keys(managed)


def test_the_scrapy_dupefilter_uses_only_its_own_keys(managed):
    refused_keys(managed)
    crawler = get_crawler(settings_dict={
        "DUPEFILTER_CLASS": "redbloom.scrapy.RedbloomDupeFilter",
        "REQUEST_FINGERPRINTER_IMPLEMENTATION": "2.7",
        "REDBLOOM_URL": user_for(managed, "app:crawl-scrapy"),
        "REDBLOOM_KEY": "app:crawl-%(spider)s",
        "REDBLOOM_CAPACITY": 10000})
    scheduler = Scheduler.from_crawler(crawler)
    df = scheduler.df
    df.open()
    assert df.request_seen(Request("http://example.com/a")) is False
    assert df.request_seen(Request("http://example.com/a")) is True
    assert df.request_seen(Request("http://example.com/b")) is False
    df.close("finished")
    stats = crawler.stats.get_stats()
    assert stats["redbloom/new_requests"] == 2 and stats["redbloom/dropped_requests"] == 1
    assert managed.client().exists("app:crawl-scrapy") == 1
    assert refused_keys(managed) == []
