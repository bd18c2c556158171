// Crawler request dedup: Scrapy's `request_seen(fingerprint)` on a Redis filter that
// a whole fleet of crawler processes shares, so that no page is fetched twice even when their
// frontiers overlap and they run at the same time.
//
//   crawler_dedup REDIS_URI FILTER WORKER_ID FRONTIER_FILE
//
// Reads request URLs (one per line) from the frontier, and prints "fetch <url>" for each one no
// worker has seen before. Each add() is one atomic BITFIELD on the server: of several workers
// meeting the same URL at once, exactly one is told it is new.
#include <chrono>
#include <cstdio>
#include <fstream>
#include <redbloom/redbloom.hpp>
#include <string>
#include <thread>
#include <vector>

namespace {

// Scrapy's dupefilter interface over a shared filter.
class RequestDupeFilter {
 public:
  RequestDupeFilter(const redbloom::RedisEndpoint& endpoint, const std::string& name)
      : filter_(open_or_create(endpoint, name)) {}

  // True if the request was seen before (by any worker); records it otherwise.
  bool request_seen(std::string_view fingerprint) { return !filter_.add(fingerprint); }

  // The same for a batch (one round trip for all of them): seen[i] for each request.
  void requests_seen(std::span<const std::string_view> fingerprints,
                     std::vector<std::uint8_t>& seen) {
    seen.resize(fingerprints.size());
    filter_.add_many(fingerprints, seen);
    for (auto& flag : seen) flag = !flag;
  }

 private:
  static redbloom::Filter open_or_create(const redbloom::RedisEndpoint& endpoint,
                                         const std::string& name) {
    try {
      return redbloom::Filter::create_redis(
          endpoint, name, redbloom::size_filter(1e6, 1e-6, redbloom::Layout::blocked));
    } catch (const redbloom::FilterExists&) {
      // Another worker created it; wait out its allocation if it is still running.
      for (int attempt = 0;; ++attempt) {
        try {
          return redbloom::Filter::open_redis(endpoint, name);
        } catch (const redbloom::IncompleteFilter&) {
          if (attempt == 500) throw;
          std::this_thread::sleep_for(std::chrono::milliseconds(10));
        }
      }
    }
  }

  redbloom::Filter filter_;
};

}  // namespace

int main(int argc, char** argv) {
  if (argc != 5) {
    std::fprintf(stderr, "usage: %s REDIS_URI FILTER WORKER_ID FRONTIER_FILE\n", argv[0]);
    return 2;
  }
  try {
    RequestDupeFilter dupes(redbloom::parse_redis_uri(argv[1]), argv[2]);
    std::ifstream frontier(argv[4]);
    if (!frontier) throw std::runtime_error(std::string("cannot read ") + argv[4]);
    std::string url;
    std::size_t fetched = 0;
    std::size_t skipped = 0;
    while (std::getline(frontier, url)) {
      if (dupes.request_seen(url)) {
        ++skipped;
        continue;
      }
      std::printf("fetch %s\n", url.c_str());  // a real crawler downloads the page here
      ++fetched;
    }
    std::fprintf(stderr, "worker %s: fetched %zu, skipped %zu already-seen requests\n", argv[3],
                 fetched, skipped);
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "worker %s: %s\n", argv[3], e.what());
    return 3;
  }
}
