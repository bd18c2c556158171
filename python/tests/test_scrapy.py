"""redbloom.scrapy.RedbloomDupeFilter: built by Scrapy's scheduler, atomic request_seen, the
fingerprinter's record, stats at close; and a real crawl of a local site by 4 crawler
processes sharing one Redis filter."""

import collections
import logging
import os
import re
import subprocess
import sys
import time
import urllib.request

import pytest
from scrapy import Request
from scrapy.core.scheduler import Scheduler
from scrapy.utils.test import get_crawler

import redbloom
from redbloom.scrapy import RedbloomDupeFilter
from conftest import free_port

HERE = os.path.dirname(os.path.abspath(__file__))


def scheduler_for(settings):
    crawler = get_crawler(settings_dict={"DUPEFILTER_CLASS": "redbloom.scrapy.RedbloomDupeFilter",
                                         "REQUEST_FINGERPRINTER_IMPLEMENTATION": "2.7",
                                         **settings})
    scheduler = Scheduler.from_crawler(crawler)
    return crawler, scheduler


def test_the_scheduler_builds_it_and_it_filters_canonical_duplicates(workdir):
    crawler, scheduler = scheduler_for({"JOBDIR": str(workdir / "job")})
    df = scheduler.df
    assert isinstance(df, RedbloomDupeFilter)
    assert df.location == str(workdir / "job" / "requests.rbf")
    df.open()
    assert df.request_seen(Request("http://example.com/a?x=1&y=2")) is False
    assert df.request_seen(Request("http://example.com/a?y=2&x=1")) is True  # canonical URL
    assert df.request_seen(Request("http://example.com/b")) is False
    df.close("finished")
    stats = crawler.stats.get_stats()
    assert stats["redbloom/new_requests"] == 2 and stats["redbloom/dropped_requests"] == 1
    assert 0 < stats["redbloom/expected_wrongly_dropped"] < 1e-3
    # The filter persists in JOBDIR: a resumed crawl knows the requests.
    _, again = scheduler_for({"JOBDIR": str(workdir / "job")})
    again.df.open()
    assert again.df.request_seen(Request("http://example.com/b")) is True
    again.df.close("finished")


def test_a_growing_filter_takes_more_requests_than_its_capacity(workdir):
    _, scheduler = scheduler_for({"JOBDIR": str(workdir / "grow"), "REDBLOOM_CAPACITY": 100,
                                  "REDBLOOM_GROWTH": 2})
    df = scheduler.df
    df.open()
    seen = [df.request_seen(Request("http://example.com/p%d" % i)) for i in range(3000)]
    assert sum(seen) <= 3  # false positives at 1e-4, well under one expected
    assert all(df.request_seen(Request("http://example.com/p%d" % i)) for i in range(3000))
    assert len(df.filter.info()["stream"]["links"]) >= 5  # 100, 200, ... up to 3000
    df.close("finished")


def test_a_changed_fingerprinter_is_reported(workdir, caplog):
    record = workdir / "job" / "requests.rbf.scrapy.json"
    _, scheduler = scheduler_for({"JOBDIR": str(workdir / "job")})
    scheduler.df.open()
    scheduler.df.close("finished")
    assert "RequestFingerprinter" in record.read_text()
    record.write_text('{"request_fingerprinter": "myproject.OldFingerprinter"}')
    _, scheduler = scheduler_for({"JOBDIR": str(workdir / "job")})
    with caplog.at_level(logging.WARNING):
        scheduler.df.open()
    scheduler.df.close("finished")
    assert "myproject.OldFingerprinter" in caplog.text and "looks new" in caplog.text


def test_redis_location_from_settings(redis_server):
    crawler, scheduler = scheduler_for({"REDIS_URL": redis_server.url,
                                        "REDBLOOM_KEY": "crawl-%(spider)s",
                                        "REDBLOOM_CAPACITY": 5000})
    df = scheduler.df
    df.open()
    assert df.request_seen(Request("http://example.com/r")) is False
    assert df.request_seen(Request("http://example.com/r")) is True
    assert df.filter.capacity == 5000
    df.close("finished")
    client = redis_server.client()
    assert client.get("crawl-scrapy:scrapy-fingerprinter").startswith(b"scrapy.")


def test_no_location_set_falls_back_to_memory_with_a_warning(workdir, caplog):
    with caplog.at_level(logging.WARNING, logger="redbloom.scrapy"):
        _, scheduler = scheduler_for({})
    assert scheduler.df.location == "memory:"
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1
    assert "kept in memory" in warnings[0] and "Set REDBLOOM_URL" in warnings[0]
    caplog.clear()
    # Built from settings alone (scrapy-redis's scheduler): the same warning, without JOBDIR.
    from scrapy.settings import Settings
    with caplog.at_level(logging.WARNING, logger="redbloom.scrapy"):
        assert RedbloomDupeFilter.from_settings(Settings()).location == "memory:"
    assert "REDBLOOM_URL and REDIS_URL are unset" in caplog.text
    caplog.clear()
    # Memory asked for, or a location given: no warning.
    with caplog.at_level(logging.WARNING, logger="redbloom.scrapy"):
        scheduler_for({"REDBLOOM_URL": "memory:"})
        scheduler_for({"JOBDIR": str(workdir / "job")})
        scheduler_for({"REDIS_URL": "redis://127.0.0.1:1"})
    assert caplog.records == []


def test_the_filter_in_use_is_logged_once(workdir, caplog):
    _, scheduler = scheduler_for({"JOBDIR": str(workdir / "job"), "REDBLOOM_CAPACITY": 5000})
    df = scheduler.df
    with caplog.at_level(logging.INFO, logger="redbloom.scrapy"):
        df.open()
        for i in range(3):
            df.request_seen(Request("http://example.com/%d" % i))
        df.close("finished")
    used = [r.getMessage() for r in caplog.records if "dupefilter uses" in r.getMessage()]
    assert len(used) == 1
    assert str(workdir / "job" / "requests.rbf") in used[0] and "capacity 5000" in used[0]


def test_the_dupefilter_says_what_it_does():
    doc = RedbloomDupeFilter.__doc__
    for setting in ["REDBLOOM_URL", "JOBDIR", "REDIS_URL", "REDBLOOM_CAPACITY",
                    "REDBLOOM_ERROR_RATE", "REDBLOOM_KEY"]:
        assert setting in doc, setting


def make_site(root, pages):
    """Page i links to a few others (and back to the first), so crawls from different start
    pages overlap everywhere."""
    root.mkdir()
    for i in range(pages):
        links = {(i + 1) % pages, (i * 7 + 3) % pages, (i * 13 + 5) % pages, 0}
        body = "".join('<a href="/p%d.html">p%d</a> ' % (j, j) for j in sorted(links))
        (root / ("p%d.html" % i)).write_text("<html><body>%s</body></html>" % body)


def start_site(root, log):
    port = free_port()
    server = subprocess.Popen([sys.executable, "-m", "http.server", str(port), "--bind",
                               "127.0.0.1", "--directory", str(root)],
                              stdout=subprocess.DEVNULL, stderr=log)
    for _ in range(200):
        try:
            urllib.request.urlopen("http://127.0.0.1:%d/p0.html" % port, timeout=1).read()
            return server, port
        except OSError:
            time.sleep(0.05)
    server.kill()
    pytest.fail("the site's http.server did not start")


def crawl(workdir, base, location, starts_per_process):
    processes = []
    for i, starts in enumerate(starts_per_process):
        processes.append(subprocess.Popen(
            [sys.executable, "-m", "scrapy", "runspider", os.path.join(HERE, "crawl_spider.py"),
             "-a", "starts=" + starts, "-a", "base=" + base,
             "-s", "DUPEFILTER_CLASS=redbloom.scrapy.RedbloomDupeFilter",
             "-s", "REDBLOOM_URL=" + location, "-s", "REDBLOOM_CAPACITY=10000",
             "-s", "REQUEST_FINGERPRINTER_IMPLEMENTATION=2.7", "-s", "ROBOTSTXT_OBEY=False",
             "-s", "TELNETCONSOLE_ENABLED=False", "-s", "LOG_LEVEL=ERROR"],
            cwd=workdir, stdout=subprocess.DEVNULL, stderr=open(workdir / ("crawler%d.log" % i), "w")))
    for process in processes:
        assert process.wait(timeout=300) == 0, (workdir / "crawler0.log").read_text()[-2000:]


def fetched(log_path):
    text = log_path.read_text()
    return collections.Counter(re.findall(r'"GET (/p\d+\.html) HTTP', text))


def test_four_crawlers_sharing_a_redis_filter_fetch_every_page_once(workdir, redis_server):
    pages = 120
    make_site(workdir / "site", pages)
    with open(workdir / "access.log", "w") as log:
        server, port = start_site(workdir / "site", log)
        try:
            before = fetched(workdir / "access.log")["/p0.html"]  # the readiness probe
            base = "http://127.0.0.1:%d" % port
            location = redis_server.url + "#site-crawl"
            crawl(workdir, base, location, ["/p0.html", "/p30.html", "/p60.html", "/p90.html"])
            counts = fetched(workdir / "access.log")
            counts["/p0.html"] -= before
            assert set(counts) == {"/p%d.html" % i for i in range(pages)}
            assert [path for path, n in counts.items() if n != 1] == []
            # The same crawl again: the filter knows every request, nothing is fetched.
            crawl(workdir, base, location, ["/p0.html,/p30.html,/p60.html,/p90.html"])
            assert fetched(workdir / "access.log") == counts + collections.Counter(
                {"/p0.html": before})
        finally:
            server.kill()
            server.wait()
    with redbloom.open(redis_server.url + "#site-crawl") as f:
        assert abs(len(f) - pages) <= 2
