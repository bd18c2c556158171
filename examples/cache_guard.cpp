// Cache-penetration guard: before a lookup goes to a slow store, ask a Bloom filter
// of the keys the store holds. A key the filter has never seen cannot be in the store, so
// lookups of random or malicious keys never reach it; only "maybe present" keys go through.
//
//   cache_guard REDIS_URI FILTER
//
// Builds a store of 100,000 user records, loads their keys into a Redis filter (shared by every
// application server), then serves 200,000 lookups, half of keys that do not exist, and prints
// how many reached the store. No existing key may be refused (exit 1 if one is).
#include <cstdio>
#include <map>
#include <optional>
#include <redbloom/redbloom.hpp>
#include <string>
#include <vector>

namespace {

// Stands for the database: counts the lookups that reach it.
class SlowStore {
 public:
  void put(std::string key, std::string value) { rows_.emplace(std::move(key), std::move(value)); }
  std::optional<std::string> get(const std::string& key) {
    ++lookups_;
    const auto it = rows_.find(key);
    return it == rows_.end() ? std::nullopt : std::optional(it->second);
  }
  [[nodiscard]] std::size_t lookups() const { return lookups_; }

 private:
  std::map<std::string, std::string> rows_;
  std::size_t lookups_ = 0;
};

class GuardedStore {
 public:
  GuardedStore(SlowStore& store, redbloom::Filter& filter) : store_(store), filter_(filter) {}
  std::optional<std::string> get(const std::string& key) {
    if (!filter_.contains(key)) {
      ++refused_;
      return std::nullopt;  // certainly absent: the store is not asked
    }
    return store_.get(key);
  }
  [[nodiscard]] std::size_t refused() const { return refused_; }

 private:
  SlowStore& store_;
  redbloom::Filter& filter_;
  std::size_t refused_ = 0;
};

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: %s REDIS_URI FILTER\n", argv[0]);
    return 2;
  }
  try {
    const auto endpoint = redbloom::parse_redis_uri(argv[1]);
    constexpr int kUsers = 100000;
    SlowStore store;
    std::vector<std::string> keys;
    for (int i = 0; i < kUsers; ++i) {
      keys.push_back("user:" + std::to_string(i));
      store.put(keys.back(), "{\"id\": " + std::to_string(i) + "}");
    }
    // Like BF.RESERVE then BF.MADD: sized for the store, loaded in bulk.
    auto filter = redbloom::Filter::create_redis(
        endpoint, argv[2], redbloom::size_filter(kUsers, 0.001, redbloom::Layout::blocked),
        /*overwrite=*/true);
    const std::vector<std::string_view> views(keys.begin(), keys.end());
    filter.load_many(views);

    GuardedStore guarded(store, filter);
    std::size_t found = 0;
    std::size_t wrongly_refused = 0;
    for (int i = 0; i < 2 * kUsers; ++i) {
      const std::string key = "user:" + std::to_string(i);  // i >= kUsers do not exist
      const auto row = guarded.get(key);
      if (row) ++found;
      if (i < kUsers && !row) ++wrongly_refused;
    }
    std::printf("lookups %d, found %zu, refused by the filter %zu, reached the store %zu\n",
                2 * kUsers, found, guarded.refused(), store.lookups());
    if (wrongly_refused != 0) {
      std::fprintf(stderr, "error: %zu existing keys refused\n", wrongly_refused);
      return 1;
    }
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "cache_guard: %s\n", e.what());
    return 3;
  }
}
