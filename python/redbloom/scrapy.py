"""A Scrapy dupefilter on a redbloom filter: persistent, shared by any number of crawlers
(a file on one machine, Redis or a Redis Cluster across machines), one atomic test-and-set
per request.

settings.py:

    DUPEFILTER_CLASS = "redbloom.scrapy.RedbloomDupeFilter"
    REDBLOOM_URL = "redis://127.0.0.1:6379"     # default: JOBDIR/requests.rbf, else REDIS_URL,
                                                # else memory (this crawl only)
    REDBLOOM_KEY = "%(spider)s:dupefilter"      # the filter's name in Redis
    REDBLOOM_CAPACITY = 10_000_000              # requests expected over the filter's life
    REDBLOOM_ERROR_RATE = 1e-4                  # chance that a new request is wrongly dropped
    REDBLOOM_GROWTH = 2                         # optional: grow past the capacity (by links of
                                                # 2x, 4x, ... at tighter rates) instead of
                                                # dropping ever more new requests
    REDBLOOM_ENGINE = "bf"                      # optional: a filter of the Redis server's own
                                                # Bloom engine (RedisBloom, Redis 8,
                                                # valkey-bloom), made with BF.RESERVE from
                                                # REDBLOOM_CAPACITY, REDBLOOM_ERROR_RATE and
                                                # REDBLOOM_GROWTH (its EXPANSION) when missing

The filter holds the 20-byte fingerprints of the crawler's request fingerprinter, so the
fingerprinter is part of the filter's identity: the one that built the filter is recorded
beside it, and a crawl with another one logs a warning (every request would look new).
"""

import json
import logging
import os

from scrapy.dupefilters import BaseDupeFilter

from . import _redbloom

logger = logging.getLogger(__name__)

DEFAULT_KEY = "%(spider)s:dupefilter"
DEFAULT_CAPACITY = 1_000_000
DEFAULT_ERROR_RATE = 1e-4


def _fingerprinter_identity(fingerprinter, settings):
    cls = type(fingerprinter)
    identity = "%s.%s" % (cls.__module__, cls.__qualname__)
    implementation = settings.get("REQUEST_FINGERPRINTER_IMPLEMENTATION") if settings else None
    if implementation:
        identity += " implementation %s" % implementation
    return identity


def _redis_py_client(redis, uri):
    """A redis-py client for one of redbloom's Redis URIs (redis-py's from_url knows neither
    its timeouts nor its TLS settings), or None, with a warning, when redis-py cannot check
    the server the way redbloom does."""
    from urllib.parse import parse_qsl, unquote, urlsplit
    if uri.startswith("unix://"):
        return redis.Redis.from_url(uri.split("?")[0])
    parts = urlsplit(uri)
    cluster = parts.scheme.endswith("+cluster")
    options = {}
    if parts.password is not None:
        options["username"] = unquote(parts.username) or None
        options["password"] = unquote(parts.password)
    elif parts.username:
        options["password"] = unquote(parts.username)  # redis://secret@host: a password alone
    # The first node of a cluster's list is enough: redis-py finds the others.
    first = urlsplit("//" + parts.netloc.rpartition("@")[2].split(",")[0])
    host = first.hostname
    options["port"] = first.port or 6379
    if parts.path.strip("/") and not cluster:
        options["db"] = int(parts.path.strip("/"))
    if parts.scheme.startswith("rediss"):
        options.update(ssl=True, ssl_check_hostname=True)
    for key, value in parse_qsl(parts.query):
        if key == "timeout":
            options["socket_timeout"] = float(value)
        elif key == "connect_timeout":
            options["socket_connect_timeout"] = float(value)
        elif key == "db" and not cluster:
            options["db"] = int(value)
        elif key == "tls_ca":
            options["ssl_ca_certs"] = value
        elif key == "tls_cert":
            options["ssl_certfile"] = value
        elif key == "tls_key":
            options["ssl_keyfile"] = value
        elif key == "tls_insecure_skip_verify" and value in ("yes", "true", "1"):
            options.update(ssl_cert_reqs="none", ssl_check_hostname=False)
        elif key == "tls_server_name":
            logger.warning("redbloom dupefilter: the request fingerprinter is not recorded "
                           "beside the filter: redis-py cannot check the server's certificate "
                           "for tls_server_name=%s", value)
            return None
    if cluster:
        from redis.cluster import RedisCluster
        return RedisCluster(host=host, **options)
    return redis.Redis(host=host, **options)


def _location(settings, jobdir):
    """Where the filter is: REDBLOOM_URL, else JOBDIR/requests.rbf (when `jobdir`), else
    REDIS_URL, else memory, with a warning: that filter is neither shared nor kept."""
    location = settings.get("REDBLOOM_URL")
    if location:
        return location
    if jobdir and settings.get("JOBDIR"):
        os.makedirs(settings.get("JOBDIR"), exist_ok=True)
        return os.path.join(settings.get("JOBDIR"), "requests.rbf")
    if settings.get("REDIS_URL"):
        return settings.get("REDIS_URL")
    logger.warning("redbloom dupefilter: %s are unset, so the requests seen are kept in "
                   "memory: other crawlers do not share them and the next crawl starts from "
                   "nothing. Set REDBLOOM_URL (\"redis://host:6379\" or a file path)%s, or "
                   "REDBLOOM_URL = \"memory:\" to keep them in memory without this warning",
                   "REDBLOOM_URL, JOBDIR and REDIS_URL" if jobdir else "REDBLOOM_URL and REDIS_URL",
                   " or JOBDIR" if jobdir else "")
    return "memory:"


class RedbloomDupeFilter(BaseDupeFilter):
    """Scrapy's DUPEFILTER_CLASS on a redbloom filter: request_seen(request) is one atomic
    test-and-set of the request's fingerprint, so crawlers sharing the filter (a file on one
    machine; Redis, several servers or a Redis Cluster across machines) fetch each request
    once, and a filter in a file or in Redis outlives the crawl.

    The filter is REDBLOOM_URL, else JOBDIR/requests.rbf, else REDIS_URL, else a filter in
    memory (this crawl only, with a warning). It is opened with REDBLOOM_CAPACITY and
    REDBLOOM_ERROR_RATE (and REDBLOOM_GROWTH) and created when missing; in Redis its name is
    REDBLOOM_KEY ("%(spider)s" is the spider's name) unless the URL ends in "#name". Which
    filter a crawl uses is logged once when it opens; the crawl's stats get redbloom/* values
    when it closes.
    """

    def __init__(self, location, key=DEFAULT_KEY, capacity=DEFAULT_CAPACITY,
                 error_rate=DEFAULT_ERROR_RATE, fingerprinter=None, settings=None, stats=None,
                 debug=False, growth=None, engine=None):
        self.location = location
        self.growth = growth
        self.engine = engine
        self.key = key
        self.capacity = capacity
        self.error_rate = error_rate
        self.fingerprinter = fingerprinter
        self.settings = settings
        self.stats = stats
        self.debug = debug
        self.filter = None
        self.new_requests = 0
        self.dropped_requests = 0
        self._start_items = 0
        self._expected_wrong_drops = 0.0
        self._log_dupes = True

    @classmethod
    def from_crawler(cls, crawler):
        settings = crawler.settings
        dupefilter = cls(_location(settings, jobdir=True),
                         key=settings.get("REDBLOOM_KEY", DEFAULT_KEY),
                         capacity=settings.getfloat("REDBLOOM_CAPACITY", DEFAULT_CAPACITY),
                         error_rate=settings.getfloat("REDBLOOM_ERROR_RATE", DEFAULT_ERROR_RATE),
                         fingerprinter=getattr(crawler, "request_fingerprinter", None),
                         settings=settings, stats=crawler.stats,
                         debug=settings.getbool("DUPEFILTER_DEBUG"),
                         growth=settings.getint("REDBLOOM_GROWTH") or None,
                         engine=settings.get("REDBLOOM_ENGINE") or None)
        dupefilter._crawler = crawler  # its spider names the Redis key when the crawl opens
        return dupefilter

    @classmethod
    def from_settings(cls, settings):
        """For schedulers that build dupefilters from settings alone (scrapy-redis)."""
        return cls(_location(settings, jobdir=False),
                   key=settings.get("REDBLOOM_KEY", DEFAULT_KEY),
                   capacity=settings.getfloat("REDBLOOM_CAPACITY", DEFAULT_CAPACITY),
                   error_rate=settings.getfloat("REDBLOOM_ERROR_RATE", DEFAULT_ERROR_RATE),
                   settings=settings, debug=settings.getbool("DUPEFILTER_DEBUG"),
                   growth=settings.getint("REDBLOOM_GROWTH") or None,
                   engine=settings.get("REDBLOOM_ENGINE") or None)

    def _fingerprint(self, request):
        if self.fingerprinter is not None:
            return self.fingerprinter.fingerprint(request)
        from scrapy.utils.request import fingerprint
        return fingerprint(request)

    def _ensure_open(self, spider=None):
        if self.filter is not None:
            return
        name = ""
        in_redis = self.location.startswith(("redis://", "rediss://", "redis+cluster://",
                                             "rediss+cluster://", "unix://"))
        if in_redis and "#" not in self.location:
            name = self.key % {"spider": getattr(spider, "name", "scrapy")}
        self.filter = _redbloom.Filter.open(self.location, name=name, capacity=self.capacity,
                                            error_rate=self.error_rate, growth=self.growth,
                                            create=True, engine=self.engine)
        self._start_items = len(self.filter)
        logger.info("redbloom dupefilter uses %r, about %d requests in it", self.filter,
                    self._start_items)
        self._check_fingerprinter(self.location.partition("#")[2] or name)

    def open(self):
        spider = getattr(getattr(self, "_crawler", None), "spider", None)
        self._ensure_open(spider)

    def request_seen(self, request):
        self._ensure_open()
        if self.filter.add(self._fingerprint(request)):
            self.new_requests += 1
            # The chance this new request would have been dropped, at the filter's fill now
            # (None: the server's Bloom engine keeps the rate and does not say it).
            rate = self.filter.error_rate_at(self._start_items + self.new_requests)
            if rate is not None:
                self._expected_wrong_drops += rate
            return False
        self.dropped_requests += 1
        return True

    def log(self, request, spider):
        if self.debug:
            logger.debug("Filtered duplicate request: %(request)s", {"request": request},
                         extra={"spider": spider})
        elif self._log_dupes:
            logger.debug("Filtered duplicate request: %(request)s - no more duplicates will be "
                         "shown (see DUPEFILTER_DEBUG to show all duplicates)",
                         {"request": request}, extra={"spider": spider})
            self._log_dupes = False
        if self.stats is not None:
            self.stats.inc_value("dupefilter/filtered")

    def close(self, reason):
        if self.filter is None:
            return
        info = self.filter.info()
        if self.stats is not None:
            self.stats.set_value("redbloom/location", info["location"])
            self.stats.set_value("redbloom/fill_ratio", info["fill_ratio"])
            self.stats.set_value("redbloom/estimated_items", int(info["estimated_items"]))
            self.stats.set_value("redbloom/new_requests", self.new_requests)
            self.stats.set_value("redbloom/dropped_requests", self.dropped_requests)
            self.stats.set_value("redbloom/expected_wrongly_dropped",
                                 self._expected_wrong_drops)
        # The server's Bloom engine grows past its capacity, or refuses requests past it.
        if info["server_filter"] is None and info["estimated_items"] > info["capacity"]:
            logger.warning("redbloom dupefilter %s holds ~%d requests, over its capacity %d: "
                           "new requests are wrongly dropped at a rate of %.3g; create a larger "
                           "filter (REDBLOOM_CAPACITY)", info["location"],
                           info["estimated_items"], info["capacity"],
                           info["estimated_error_rate"])
        self.filter.close()
        self.filter = None

    # The fingerprinter's record: a file beside a filter file, a key beside a Redis filter.
    def _check_fingerprinter(self, name):
        if self.fingerprinter is None:
            return
        identity = _fingerprinter_identity(self.fingerprinter, self.settings)
        recorded = self._record_fingerprinter(name, identity)
        if recorded is not None and recorded != identity:
            logger.warning("redbloom dupefilter %s was built with request fingerprinter %r; "
                           "this crawl uses %r: its fingerprints differ, so every request "
                           "looks new to the filter", self.filter.location, recorded, identity)

    def _record_fingerprinter(self, name, identity):
        """Records `identity` unless one is recorded; returns the recorded one (None if none
        can be kept: a memory filter)."""
        if self.location == "memory:":
            return None
        if name:
            return self._record_in_redis(name, identity)
        path = self.location[len("file:"):] if self.location.startswith("file:") else self.location
        record = path + ".scrapy.json"
        try:
            with open(record, "x") as out:
                json.dump({"request_fingerprinter": identity}, out)
            return identity
        except FileExistsError:
            with open(record) as existing:
                return json.load(existing).get("request_fingerprinter")

    def _record_in_redis(self, name, identity):
        try:
            import redis
        except ImportError:
            logger.warning("redbloom dupefilter: python3-redis is not installed, so the request "
                           "fingerprinter is not recorded beside the filter")
            return None
        first = self.location.partition("#")[0].split(",")[0]
        key = name + ":scrapy-fingerprinter"
        client = _redis_py_client(redis, first)
        if client is None:
            return None
        try:
            client.set(key, identity, nx=True)
            recorded = client.get(key)
        finally:
            client.close()
        return recorded.decode() if recorded is not None else None
