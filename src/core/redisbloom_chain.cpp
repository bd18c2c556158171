#include "core/redisbloom_chain.hpp"

#include <bit>
#include <cmath>
#include <cstring>
#include <new>

#include "core/murmur2_inline.hpp"
#include "redbloom/error.hpp"

namespace redbloom::redisbloom {

namespace {

static_assert(std::endian::native == std::endian::little,
              "RedisBloom's hashes and dumps read little-endian words");

// RedisBloom's own rounded ln 2 (not std::numbers::ln2): the probe count depends on it.
constexpr double kLn2 = 0.693147180559945;
constexpr double kLn2Squared = 0.480453013918201;

template <class T>
T read_word(const char* at) noexcept {
  T value;
  std::memcpy(&value, at, sizeof(T));
  return value;
}

double bits_per_entry(double error) noexcept {
  const double bpe = -(std::log(error) / kLn2Squared);
  return bpe < 0 ? -bpe : bpe;
}

// Past kMaxHashes (or NaN) the answer is kMaxHashes + 1, which no sound link has.
std::uint32_t probes_for(double bits_per_entry) noexcept {
  const double probes = std::ceil(kLn2 * bits_per_entry);
  if (!(probes <= kMaxHashes)) return kMaxHashes + 1;
  return static_cast<std::uint32_t>(static_cast<int>(probes));
}

constexpr std::size_t kHeaderBytes = 8 + 4 + 4 + 4;
constexpr std::size_t kLinkBytes = 8 + 8 + 8 + 8 + 8 + 4 + 8 + 1;

class Writer {
 public:
  explicit Writer(std::string& out) : out_(out) {}
  template <class T>
  void put(T value) {
    char bytes[sizeof(T)];
    std::memcpy(bytes, &value, sizeof(T));
    out_.append(bytes, sizeof(T));
  }

 private:
  std::string& out_;
};

}  // namespace

Bits::Bits(std::size_t size, ChainAllocator allocator) : size_(size), allocator_(allocator) {
  if (size == 0) return;
  data_ = static_cast<std::uint8_t*>(allocator_.allocate(size));
  if (data_ == nullptr) throw std::bad_alloc();
  std::memset(data_, 0, size);
}

Bits::Bits(const std::uint8_t* from, std::size_t size, ChainAllocator allocator)
    : size_(size), allocator_(allocator) {
  if (size == 0) return;
  data_ = static_cast<std::uint8_t*>(allocator_.allocate(size));
  if (data_ == nullptr) throw std::bad_alloc();
  std::memcpy(data_, from, size);
}

std::uint32_t murmur2_32(std::string_view data, std::uint32_t seed) noexcept {
  return detail::murmur2_32_inline(data, seed);
}

std::uint64_t murmur64a(std::string_view data, std::uint64_t seed) noexcept {
  constexpr std::uint64_t m = 0xc6a4a7935bd1e995ULL;
  const auto length =
      static_cast<std::uint64_t>(static_cast<std::int64_t>(static_cast<int>(data.size())));
  std::uint64_t h = seed ^ (length * m);
  const char* p = data.data();
  std::size_t left = data.size();
  for (; left >= 8; left -= 8, p += 8) {
    std::uint64_t k = read_word<std::uint64_t>(p);
    k *= m;
    k ^= k >> 47;
    k *= m;
    h ^= k;
    h *= m;
  }
  if (left != 0 && data.size() >= 8) {
    // The last `left` bytes as one little-endian word: the tail's 8 bytes, read in one load
    // ending at the item's end, shifted down.
    h ^= read_word<std::uint64_t>(p + left - 8) >> (64 - 8 * left);
    h *= m;
    left = 0;
  }
  const auto byte = [&](std::size_t i) {
    return static_cast<std::uint64_t>(static_cast<unsigned char>(p[i])) << (8 * i);
  };
  // Unrolled by the switch (a loop or a memcpy of a variable length costs a call or branches).
  switch (left) {
    case 7:
      h ^= byte(6);
      [[fallthrough]];
    case 6:
      h ^= byte(5);
      [[fallthrough]];
    case 5:
      h ^= byte(4);
      [[fallthrough]];
    case 4:
      h ^= byte(3);
      [[fallthrough]];
    case 3:
      h ^= byte(2);
      [[fallthrough]];
    case 2:
      h ^= byte(1);
      [[fallthrough]];
    case 1:
      h ^= byte(0);
      h *= m;
      break;
    default:
      break;
  }
  h ^= h >> 47;
  h *= m;
  h ^= h >> 47;
  return h;
}

namespace {

// Both MurmurHash64A passes of an item of up to kFusedBlocks words, sharing their work: a
// word's mixing does not depend on the seed, so each word is mixed once for both.
constexpr std::size_t kFusedBlocks = 8;

HashPair murmur64a_twice(std::string_view data, std::uint64_t seed) noexcept {
  constexpr std::uint64_t m = 0xc6a4a7935bd1e995ULL;
  const auto length =
      static_cast<std::uint64_t>(static_cast<std::int64_t>(static_cast<int>(data.size())));
  const std::size_t blocks = data.size() / 8;
  const std::size_t left = data.size() % 8;
  std::uint64_t k[kFusedBlocks];
  std::uint64_t h = seed ^ (length * m);
  for (std::size_t i = 0; i < blocks; ++i) {
    std::uint64_t w = read_word<std::uint64_t>(data.data() + 8 * i);
    w *= m;
    w ^= w >> 47;
    w *= m;
    k[i] = w;
    h ^= w;
    h *= m;
  }
  std::uint64_t tail = 0;
  if (left != 0) {
    // The last `left` bytes as one little-endian word (data holds at least 8 bytes here).
    tail = read_word<std::uint64_t>(data.data() + data.size() - 8) >> (64 - 8 * left);
    h ^= tail;
    h *= m;
  }
  const auto finish = [](std::uint64_t x) {
    x ^= x >> 47;
    x *= m;
    x ^= x >> 47;
    return x;
  };
  const std::uint64_t a = finish(h);
  h = a ^ (length * m);
  for (std::size_t i = 0; i < blocks; ++i) {
    h ^= k[i];
    h *= m;
  }
  if (left != 0) {
    h ^= tail;
    h *= m;
  }
  return {a, finish(h)};
}

}  // namespace

HashPair item_hash(std::string_view item, std::uint32_t options) noexcept {
  if ((options & kForce64) != 0) {
    if (item.size() >= 8 && item.size() < 8 * (kFusedBlocks + 1)) {
      return murmur64a_twice(item, 0xc6a4a7935bd1e995ULL);
    }
    const std::uint64_t a = murmur64a(item, 0xc6a4a7935bd1e995ULL);
    return {a, murmur64a(item, a)};
  }
  const std::uint32_t a = murmur2_32(item, 0x9747b28c);
  return {a, murmur2_32(item, a)};
}

// RedisBloom places probe i at ((a + i·b) mod 2^64) mod the link's bits (2^n2 when n2 is set;
// the word width does not change a power-of-two remainder). The walk below gives the same
// positions with two divisions per item instead of one per probe: it keeps the remainder
// r = v mod m of v = a + i·b, adds b mod m at each step and, when v wraps past 2^64, takes
// 2^64 mod m off again.
namespace {

template <class Visit>
void walk(std::uint64_t bits, std::uint8_t n2, std::uint32_t hashes, HashPair hash,
          Visit&& visit) noexcept {
  if (n2 > 0) {
    const std::uint64_t mask = (std::uint64_t{1} << n2) - 1;
    for (std::uint32_t i = 0; i < hashes; ++i) {
      if (!visit((hash.a + i * hash.b) & mask)) return;
    }
    return;
  }
  const std::uint64_t m = bits;
  const std::uint64_t step = hash.b % m;
  const std::uint64_t wrap = (std::uint64_t{0} - m) % m;  // 2^64 mod m
  std::uint64_t v = hash.a;
  std::uint64_t r = hash.a % m;
  for (std::uint32_t i = 0;;) {
    if (!visit(r)) return;
    if (++i == hashes) return;
    const std::uint64_t next = v + hash.b;
    const bool wrapped = next < v;
    v = next;
    r += step;  // both below m <= 2^62: no overflow
    if (r >= m) r -= m;
    if (wrapped) r = r >= wrap ? r - wrap : r + (m - wrap);
  }
}

}  // namespace

Modulus::Modulus(const Link& link) noexcept
    : bits(link.n2 > 0 ? std::uint64_t{1} << link.n2 : link.bits),
      inverse(bits > 1 ? ~static_cast<unsigned __int128>(0) / bits + 1 : 0),
      wrap(bits > 0 ? (std::uint64_t{0} - bits) % bits : 0),
      power_of_two(link.n2 > 0) {}

void Link::positions(HashPair hash, const Modulus& modulus, std::uint64_t* out) const noexcept {
  if (modulus.power_of_two) {
    for (std::uint32_t i = 0; i < hashes; ++i) out[i] = (hash.a + i * hash.b) & (modulus.bits - 1);
    return;
  }
  // The walk of `walk`, with the remainders taken by multiplications.
  const std::uint64_t m = modulus.bits;
  const std::uint64_t step = modulus.of(hash.b);
  std::uint64_t v = hash.a;
  std::uint64_t r = modulus.of(hash.a);
  for (std::uint32_t i = 0; i < hashes; ++i) {
    out[i] = r;
    const std::uint64_t next = v + hash.b;
    const bool wrapped = next < v;
    v = next;
    r += step;
    if (r >= m) r -= m;
    if (wrapped) r = r >= modulus.wrap ? r - modulus.wrap : r + (m - modulus.wrap);
  }
}

bool Link::contains(HashPair hash, const Modulus& modulus) const noexcept {
  const auto test = [&](std::uint64_t bit) { return (data[bit >> 3] & (1u << (bit & 7))) != 0; };
  if (modulus.power_of_two) {
    for (std::uint32_t i = 0; i < hashes; ++i) {
      if (!test((hash.a + i * hash.b) & (modulus.bits - 1))) return false;
    }
    return true;
  }
  const std::uint64_t m = modulus.bits;
  std::uint64_t r = modulus.of(hash.a);
  if (!test(r)) return false;
  const std::uint64_t step = modulus.of(hash.b);
  std::uint64_t v = hash.a;
  for (std::uint32_t i = 1; i < hashes; ++i) {
    const std::uint64_t next = v + hash.b;
    const bool wrapped = next < v;
    v = next;
    r += step;
    if (r >= m) r -= m;
    if (wrapped) r = r >= modulus.wrap ? r - modulus.wrap : r + (m - modulus.wrap);
    if (!test(r)) return false;
  }
  return true;
}

bool Link::contains(HashPair hash) const noexcept {
  bool all = true;
  walk(bits, n2, hashes, hash, [&](std::uint64_t bit) {
    all = (data[bit >> 3] & (1u << (bit & 7))) != 0;
    return all;
  });
  return all;
}

bool Link::set(HashPair hash) noexcept {
  bool changed = false;
  walk(bits, n2, hashes, hash, [&](std::uint64_t bit) {
    const auto mask = static_cast<std::uint8_t>(1u << (bit & 7));
    changed |= (data[bit >> 3] & mask) == 0;
    data[bit >> 3] |= mask;
    return true;
  });
  return changed;
}

void Link::positions(HashPair hash, std::uint64_t* out) const noexcept {
  walk(bits, n2, hashes, hash, [&](std::uint64_t bit) {
    *out++ = bit;
    return true;
  });
}

bool Link::all_set(const std::uint64_t* positions) const noexcept {
  for (std::uint32_t i = 0; i < hashes; ++i) {
    if ((data[positions[i] >> 3] & (1u << (positions[i] & 7))) == 0) return false;
  }
  return true;
}

bool Link::set_at(const std::uint64_t* positions) noexcept {
  bool changed = false;
  for (std::uint32_t i = 0; i < hashes; ++i) {
    const auto mask = static_cast<std::uint8_t>(1u << (positions[i] & 7));
    changed |= (data[positions[i] >> 3] & mask) == 0;
    data[positions[i] >> 3] |= mask;
  }
  return changed;
}

namespace {

// A link's figures as RedisBloom's bloom_init sets them (its bits not allocated); false when
// RedisBloom refuses them.
bool shape_link(std::uint64_t capacity, double error, std::uint32_t options, Link& link) {
  if (capacity < 1 || !(error > 0) || error >= 1.0) return false;
  link = Link{};
  link.error = error;
  link.capacity = capacity;
  link.bits_per_entry = bits_per_entry(error);
  std::uint64_t bits = 0;
  if ((options & kEntsIsBits) != 0) {
    if (capacity > 64) return false;
    link.n2 = static_cast<std::uint8_t>(capacity);
    bits = capacity == 64 ? 0 : std::uint64_t{1} << capacity;
    link.capacity = static_cast<std::uint64_t>(static_cast<double>(bits) / link.bits_per_entry);
  } else if ((options & kNoRound) != 0) {
    const double exact = static_cast<double>(capacity) * link.bits_per_entry;
    if (!(exact < 18446744073709551616.0)) return false;
    bits = static_cast<std::uint64_t>(exact);
    if (bits == 0) bits = 1;
    link.n2 = 0;
  } else {
    const double exact = static_cast<double>(capacity) * link.bits_per_entry;
    const double log2 = std::logb(exact);
    if (log2 > 62 || std::isinf(log2)) return false;
    link.n2 = static_cast<std::uint8_t>(log2 + 1);
    bits = std::uint64_t{1} << link.n2;
    // The rounding up leaves room for more items; RedisBloom counts them in the capacity.
    const auto spare_bits = static_cast<std::uint64_t>(static_cast<double>(bits) - exact);
    link.capacity +=
        static_cast<std::uint64_t>(static_cast<double>(spare_bits) / link.bits_per_entry);
  }
  if (bits == 0 || bits > (std::uint64_t{1} << 62)) return false;
  const std::uint64_t bytes = bits % 64 != 0 ? (bits / 64 + 1) * 8 : bits / 8;
  link.bits = bytes * 8;
  link.hashes = probes_for(link.bits_per_entry);
  return link.hashes <= kMaxHashes;
}

}  // namespace

bool size_link(std::uint64_t capacity, double error, std::uint32_t options,
               ChainAllocator allocator, Link& link, std::uint64_t max_bytes, bool* over_limit) {
  if (!shape_link(capacity, error, options, link)) return false;
  const std::uint64_t bytes = link.bits / 8;
  if (max_bytes != 0 && bytes > max_bytes) {
    if (over_limit != nullptr) *over_limit = true;
    return false;
  }
  link.data = Bits(bytes, allocator);
  return true;
}

std::string link_problem(const Link& link) {
  if (!(link.error > 0) || link.error >= 1.0) return "error rate out of (0, 1)";
  if (link.n2 > 63) return "bit count exponent over 63";
  if (link.n2 != 0) {
    // 2^n2 bits, rounded up to whole 64-bit words as RedisBloom allocates them.
    const std::uint64_t power = std::uint64_t{1} << link.n2;
    if (link.bits != (power < 64 ? 64 : power)) return "bit count is not 2^n2";
  }
  if (link.bits == 0) return "no bits";
  if (link.bits / 8 != link.data.size() || link.bits % 8 != 0) return "bit count and bytes differ";
  if (!(link.bits_per_entry >= 0) || link.hashes != probes_for(link.bits_per_entry)) {
    return "probe count does not match its bits per entry";
  }
  if (link.hashes == 0 || link.hashes > kMaxHashes) return "probe count out of range";
  // RedisBloom derives the bits per entry from the error rate; the tolerance spares a libm
  // that rounds the logarithm's last bit otherwise.
  const double expected = bits_per_entry(link.error);
  if (!(std::fabs(link.bits_per_entry - expected) <= 1e-9 * expected)) {
    return "bits per entry do not match its error rate";
  }
  if (link.items > link.capacity) return "more items than its capacity";
  return {};
}

Chain Chain::make(std::uint64_t capacity, double error, std::uint32_t options,
                  std::uint32_t expansion, ChainAllocator allocator, std::uint64_t max_bytes) {
  Link first;
  const double target = (options & kNoScaling) != 0 ? error : error * kTightening;
  bool over = false;
  if (!size_link(capacity, target, options, allocator, first, max_bytes, &over)) {
    if (over) {
      throw InvalidArgument(
          "filter would pass the module's memory limit per filter (MAX_FILTER_BYTES)");
    }
    throw InvalidArgument("could not create filter");
  }
  std::vector<Link> links;
  links.push_back(std::move(first));
  return Chain(0, options, expansion, std::move(links), allocator);
}

// An item hashed, with its positions in the newest sub-filter when it has at most kKept
// probes; their cache lines are prefetched while earlier items of a batch are handled.
struct Chain::Prepared {
  static constexpr std::uint32_t kKept = 64;
  HashPair hash{};
  std::size_t link = 0;  // the sub-filter the positions are for
  bool kept = false;
  std::uint64_t at[kKept];
};

void Chain::prepare(std::string_view item, const Modulus* modulus, std::uint32_t prefetch,
                    Prepared& p) const noexcept {
  p.hash = item_hash(item, options_);
  p.kept = false;
  if (links_.empty()) return;
  p.link = links_.size() - 1;
  const Link& newest = links_.back();
  if (newest.hashes > Prepared::kKept) return;
  if (modulus != nullptr) {
    newest.positions(p.hash, *modulus, p.at);
  } else {
    newest.positions(p.hash, p.at);
  }
  for (std::uint32_t i = 0; i < std::min(prefetch, newest.hashes); ++i) {
    __builtin_prefetch(newest.data.data() + (p.at[i] >> 3));
  }
  p.kept = true;
}

bool Chain::contains(const Prepared& p) const noexcept {
  if (links_.empty()) return false;
  const bool fresh = p.kept && p.link == links_.size() - 1;
  if (fresh ? links_.back().all_set(p.at) : links_.back().contains(p.hash)) return true;
  for (auto link = links_.rbegin() + 1; link != links_.rend(); ++link) {
    if (link->contains(p.hash)) return true;
  }
  return false;
}

bool Chain::contains(std::string_view item) const noexcept {
  Prepared p;
  prepare(item, nullptr, 0, p);
  return contains(p);
}

Chain::AddResult Chain::add(const Prepared& p, std::uint64_t max_bytes) {
  if (links_.empty()) return AddResult::refused;
  const bool fresh = p.kept && p.link == links_.size() - 1;
  if (fresh && links_.back().items < links_.back().capacity) {
    // The newest sub-filter has room: setting its bits tells whether it had the item, in one
    // pass without a branch per probe (set bits stay set). The older ones are asked first.
    for (auto link = links_.rbegin() + 1; link != links_.rend(); ++link) {
      if (link->contains(p.hash)) return AddResult::present;
    }
    if (!links_.back().set_at(p.at)) return AddResult::present;
    ++links_.back().items;
    ++items_;
    return AddResult::added;
  }
  if (contains(p)) return AddResult::present;
  if (links_.back().items >= links_.back().capacity) {
    if (!scaling()) return AddResult::full;
    Link next;
    // RedisBloom multiplies in 64-bit words, wrapping; a wrapped capacity of 0 is refused.
    const std::uint64_t room = max_bytes == 0 ? 0 : max_bytes > bytes() ? max_bytes - bytes() : 1;
    bool over = false;
    if (!size_link(links_.back().capacity * expansion_, links_.back().error * kTightening, options_,
                   allocator_, next, room, &over)) {
      return over ? AddResult::too_large : AddResult::refused;
    }
    links_.push_back(std::move(next));
    if (links_.back().set(p.hash)) {
      ++links_.back().items;
      ++items_;
      return AddResult::added;
    }
    return AddResult::present;
  }
  // The newest sub-filter's positions, walked once for its test and its set.
  if (fresh ? links_.back().set_at(p.at) : links_.back().set(p.hash)) {
    ++links_.back().items;
    ++items_;
    return AddResult::added;
  }
  return AddResult::present;
}

Chain::AddResult Chain::add(std::string_view item, std::uint64_t max_bytes) {
  Prepared p;
  prepare(item, nullptr, 0, p);
  return add(p, max_bytes);
}

namespace {
// Items prepared ahead of the one handled: enough to overlap their cache misses, few enough
// that their prefetches stay in flight together.
constexpr std::size_t kAhead = 4;
// A sub-filter larger than this is taken to be out of the caches (an L2 holds 1-2 MiB; the
// L3 is shared with everything else the server and its neighbours run).
constexpr std::size_t kCachedBytes = std::size_t{4} << 20;
}  // namespace

void Chain::contains_many(std::span<const std::string_view> items,
                          std::uint8_t* present) const noexcept {
  if (links_.empty()) {
    std::fill(present, present + items.size(), std::uint8_t{0});
    return;
  }
  const Modulus modulus(links_.back());
  const Link& newest = links_.back();
  const std::size_t n = items.size();
  if (newest.data.size() > kCachedBytes) {
    // Most probes miss the caches: every probe's line of the items ahead is fetched, so that
    // a present item's later probes do not wait on memory one after another.
    Prepared ring[kAhead];
    constexpr std::uint32_t kAll = Prepared::kKept;
    for (std::size_t j = 0; j < std::min(kAhead, n); ++j) {
      prepare(items[j], &modulus, kAll, ring[j]);
    }
    for (std::size_t j = 0; j < n; ++j) {
      Prepared& p = ring[j % kAhead];
      present[j] = contains(p) ? 1 : 0;
      if (j + kAhead < n) prepare(items[j + kAhead], &modulus, kAll, p);
    }
    return;
  }
  // In the caches, each probe is tested as it is placed (an absent item mostly stops within
  // two), and only the lines of the first two probes of the items ahead are fetched early.
  HashPair ring[kAhead];
  const auto ahead = [&](std::string_view item, HashPair& hash) {
    hash = item_hash(item, options_);
    const std::uint64_t first = modulus.of(hash.a);
    __builtin_prefetch(newest.data.data() + (first >> 3));
    if (newest.hashes > 1) {
      const std::uint64_t second = modulus.of(hash.a + hash.b);
      __builtin_prefetch(newest.data.data() + (second >> 3));
    }
  };
  for (std::size_t j = 0; j < std::min(kAhead, n); ++j) ahead(items[j], ring[j]);
  for (std::size_t j = 0; j < n; ++j) {
    const HashPair hash = ring[j % kAhead];
    if (j + kAhead < n) ahead(items[j + kAhead], ring[j % kAhead]);
    bool found = newest.contains(hash, modulus);
    for (auto link = links_.rbegin() + 1; !found && link != links_.rend(); ++link) {
      found = link->contains(hash);
    }
    present[j] = found ? 1 : 0;
  }
}

std::size_t Chain::add_many(std::span<const std::string_view> items, AddResult* results,
                            std::uint64_t max_bytes) {
  if (links_.empty()) {
    if (!items.empty()) results[0] = AddResult::refused;
    return std::min<std::size_t>(items.size(), 1);
  }
  // The newest sub-filter's modulus, taken again when the chain grows.
  Modulus modulus(links_.back());
  std::size_t modulus_link = links_.size();
  Prepared ring[kAhead];
  const std::size_t n = items.size();
  // A new item's bits are all set: every line is fetched ahead.
  constexpr std::uint32_t kAll = Prepared::kKept;
  for (std::size_t j = 0; j < std::min(kAhead, n); ++j) prepare(items[j], &modulus, kAll, ring[j]);
  for (std::size_t j = 0; j < n; ++j) {
    Prepared& p = ring[j % kAhead];
    results[j] = add(p, max_bytes);
    if (results[j] != AddResult::added && results[j] != AddResult::present) return j + 1;
    if (links_.size() != modulus_link) {
      modulus = Modulus(links_.back());
      modulus_link = links_.size();
    }
    if (j + kAhead < n) prepare(items[j + kAhead], &modulus, kAll, p);
  }
  return n;
}

std::uint64_t Chain::capacity() const noexcept {
  std::uint64_t total = 0;
  for (const Link& link : links_) total += link.capacity;
  return total;
}

std::uint64_t Chain::bytes() const noexcept {
  std::uint64_t total = 0;
  for (const Link& link : links_) total += link.data.size();
  return total;
}

std::uint64_t Chain::memory_usage() const noexcept {
  // RedisBloom's SBChain is 32 bytes and each SBLink 64, on 64-bit servers.
  return 32 + 64 * links_.size() + bytes();
}

std::string Chain::encode_header() const {
  std::string out;
  out.reserve(kHeaderBytes + kLinkBytes * links_.size());
  Writer w(out);
  w.put(items_);
  w.put(static_cast<std::uint32_t>(links_.size()));
  w.put(options_);
  w.put(expansion_);
  for (const Link& link : links_) {
    w.put(static_cast<std::uint64_t>(link.data.size()));
    w.put(link.bits);
    w.put(link.items);
    w.put(link.error);
    w.put(link.bits_per_entry);
    w.put(link.hashes);
    w.put(link.capacity);
    w.put(link.n2);
  }
  return out;
}

Chain Chain::decode_header(std::string_view header, std::uint64_t max_bytes,
                           ChainAllocator allocator) {
  if (header.size() < kHeaderBytes) throw FormatError("header shorter than its fixed part");
  const char* p = header.data();
  const auto items = read_word<std::uint64_t>(p);
  const auto count = read_word<std::uint32_t>(p + 8);
  const auto options = read_word<std::uint32_t>(p + 12);
  const auto expansion = read_word<std::uint32_t>(p + 16);
  if (count == 0) throw FormatError("no sub-filters");
  if (header.size() != kHeaderBytes + kLinkBytes * std::uint64_t{count}) {
    throw FormatError("header length does not match its sub-filter count");
  }
  std::uint64_t total = 0;
  p += kHeaderBytes;
  for (std::uint32_t i = 0; i < count; ++i, p += kLinkBytes) {
    const auto bytes = read_word<std::uint64_t>(p);
    if (bytes >= (std::uint64_t{1} << 61) || total + bytes < total) {
      throw FormatError("sub-filter size out of range");
    }
    total += bytes;
  }
  if (max_bytes != 0 && total > max_bytes) {
    throw InvalidArgument("filter bits over the module's memory limit per filter");
  }
  std::vector<Link> links(count);
  p = header.data() + kHeaderBytes;
  for (Link& link : links) {
    const auto bytes = read_word<std::uint64_t>(p);
    link.bits = read_word<std::uint64_t>(p + 8);
    link.items = read_word<std::uint64_t>(p + 16);
    link.error = read_word<double>(p + 24);
    link.bits_per_entry = read_word<double>(p + 32);
    link.hashes = read_word<std::uint32_t>(p + 40);
    link.capacity = read_word<std::uint64_t>(p + 44);
    link.n2 = read_word<std::uint8_t>(p + 52);
    p += kLinkBytes;
    // The sizes are checked before the bits are allocated.
    if (link.bits != bytes * 8) throw FormatError("sub-filter bit count and bytes differ");
    link.data = Bits(bytes, allocator);
  }
  Chain chain(items, options, expansion, std::move(links), allocator);
  if (const std::string problem = chain.problem(); !problem.empty()) throw FormatError(problem);
  return chain;
}

std::string Chain::problem() const {
  if ((options_ & ~kKnownOptions) != 0) return "unknown options";
  if (links_.empty()) return "no sub-filters";
  std::uint64_t total = 0;
  for (const Link& link : links_) {
    if (std::string problem = link_problem(link); !problem.empty()) return problem;
    if (link.items > UINT64_MAX - total) return "item counts overflow";
    total += link.items;
  }
  if (total != items_) return "item count differs from its sub-filters' sum";
  if (!scaling() && links_.size() > 1) return "a non-scaling filter with more than one sub-filter";
  // RedisBloom sizes the first sub-filter from BF.RESERVE's figures and each next one from
  // the one before (capacity × expansion, half the error): every other shape is damage.
  // Sizes are checked on the exact-size filters 2.x makes; power-of-two ones (older
  // versions' data, whose sizing this module does not have on record) only by link_problem
  // and the halving of their error rates.
  const auto same_shape = [](const Link& a, const Link& b) {
    return a.capacity == b.capacity && a.bits == b.bits && a.n2 == b.n2 && a.hashes == b.hashes;
  };
  Link expected;
  const bool exact_sizes = (options_ & kNoRound) != 0 && (options_ & kEntsIsBits) == 0;
  if (exact_sizes && (!shape_link(links_[0].capacity, links_[0].error, options_, expected) ||
                      !same_shape(expected, links_[0]))) {
    return "first sub-filter's size does not match its capacity and error rate";
  }
  for (std::size_t i = 1; i < links_.size(); ++i) {
    const Link& before = links_[i - 1];
    if (links_[i].error != before.error * kTightening) {
      return "sub-filter " + std::to_string(i) + "'s error rate is not half the one before";
    }
    if (!exact_sizes) continue;
    if (before.items < before.capacity) {
      return "sub-filter " + std::to_string(i) + " follows one that is not full";
    }
    if ((!shape_link(before.capacity * expansion_, before.error * kTightening, options_,
                     expected) ||
         !same_shape(expected, links_[i]))) {
      return "sub-filter " + std::to_string(i) + "'s size does not follow from the one before";
    }
  }
  return {};
}

std::size_t Chain::relocate(std::size_t first, void* (*move)(void*, void*), void* context,
                            bool (*stop)(void*), std::uint64_t* moved) noexcept {
  std::size_t i = first;
  for (; i < links_.size(); ++i) {
    if (stop != nullptr && i > first && stop(context)) break;
    *moved += links_[i].data.relocate(move, context) ? 1 : 0;
  }
  return i;
}

Link* Chain::link_at(long long iterator, std::uint64_t* offset) noexcept {
  if (iterator < 1) return nullptr;
  auto position = static_cast<std::uint64_t>(iterator - 1);
  for (Link& link : links_) {
    if (position < link.data.size()) {
      *offset = position;
      return &link;
    }
    position -= link.data.size();
  }
  return nullptr;
}

std::span<const std::uint8_t> Chain::chunk(long long iterator, long long* next) const noexcept {
  std::uint64_t offset = 0;
  const Link* link = const_cast<Chain*>(this)->link_at(iterator, &offset);
  if (link == nullptr) {
    *next = 0;
    return {};
  }
  const std::uint64_t length = std::min(kMaxChunkBytes, link->data.size() - offset);
  *next = iterator + static_cast<long long>(length);
  return {link->data.data() + offset, length};
}

const char* Chain::load_chunk(long long iterator, std::string_view data) noexcept {
  if (iterator <= 0 || static_cast<std::uint64_t>(iterator) < data.size()) {
    return "ERR received bad data";
  }
  std::uint64_t offset = 0;
  Link* link = link_at(iterator - static_cast<long long>(data.size()), &offset);
  if (link == nullptr) return "ERR invalid offset - no link found";
  if (data.size() > link->data.size() - offset) {
    return "ERR invalid chunk - Too big for current filter";
  }
  std::memcpy(link->data.data() + offset, data.data(), data.size());
  return nullptr;
}

}  // namespace redbloom::redisbloom
