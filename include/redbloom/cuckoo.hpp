// Cuckoo filters (docs/cuckoo.md): membership in about a Bloom filter's memory at low error
// rates, and an item can be removed again.
//
//   redbloom::CuckooOptions pages;
//   pages.capacity = 1'000'000;
//   pages.error_rate = 0.001;
//   auto filter = redbloom::Filter::open(location, redbloom::OpenOptions::create_cuckoo(pages));
//   filter.add("https://example.com/a");     // test-and-set, as a Bloom filter's
//   filter.remove("https://example.com/a");  // the page changed: crawl it again
//
// Each partition is a chain of cuckoo tables (links): an add that finds its item in no link
// stores it in the newest link with room, and a full chain grows a link `growth` times larger
// at a tightened rate. A remove clears one copy of the item's fingerprint. Removing an item that
// was never added (or, in a filter that has grown, rarely one that was) can clear another
// item's fingerprint (a false negative for that one): remove through a KnownSet with its exact
// set (known_set.hpp, docs/cuckoo.md) where that must never happen.
#pragma once

#include <cstdint>
#include <string>

namespace redbloom {

// Links a partition may grow to, whatever max_bytes allows.
inline constexpr std::uint32_t kMaxCuckooLinks = 16;

struct CuckooOptions {
  // Items the first link holds (over all partitions).
  std::uint64_t capacity = 0;
  // The false-positive rate of the whole filter, over all its links.
  double error_rate = 0.01;
  // Link i+1 holds `growth` x link i's items; 0: one table that refuses adds when full.
  std::uint32_t growth = 0;
  // The links of all partitions together may not exceed this (0: kMaxCuckooLinks links). An
  // add that needs a link past it fails with CapacityExceeded, after the items before it.
  std::uint64_t max_bytes = 0;
  // Independent chains an item is spread over by its hash (a Redis filter's keys and
  // servers); 1 for a local filter, unless copied from Redis.
  std::uint32_t partitions = 1;

  friend bool operator==(const CuckooOptions&, const CuckooOptions&) = default;
};

// One link's table (of each partition), as the options size it.
struct CuckooTableSize {
  std::uint32_t fingerprint_bits = 0;
  std::uint32_t slots_per_bucket = 0;
  std::uint64_t buckets = 0;
  std::uint64_t bytes = 0;      // of each partition's table
  std::uint64_t capacity = 0;   // items of the link over all partitions
  double rate_when_full = 0;    // its false-positive rate holding `capacity`
  std::uint32_t max_links = 0;  // links a partition may grow to
};
// InvalidArgument for options no cuckoo filter can have, or a link past max_links.
[[nodiscard]] CuckooTableSize cuckoo_table_size(const CuckooOptions& options,
                                                std::uint32_t link = 0);

// "cuckoo, 20000 items at p=0.001 (14-bit fingerprints, growth 2, at most 16 links)".
// InvalidArgument, naming the problem, for options no cuckoo filter can have.
[[nodiscard]] std::string describe(const CuckooOptions& options);

}  // namespace redbloom
