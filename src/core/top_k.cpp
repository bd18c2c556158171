#include "core/top_k.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <new>

namespace redbloom::topk {

namespace {

constexpr std::uint32_t kFingerprintSeed = 1919;
constexpr std::size_t kDecayTable = 256;
constexpr std::uint64_t kGolden = 0x9E3779B97F4A7C15ULL;

std::uint32_t fingerprint_of(std::string_view item) noexcept {
  return redisbloom::murmur2_32(item, kFingerprintSeed);
}

void put32(char* out, std::uint32_t value) noexcept {
  for (int i = 0; i < 4; ++i) out[i] = static_cast<char>(value >> (8 * i));
}
void put64(char* out, std::uint64_t value) noexcept {
  for (int i = 0; i < 8; ++i) out[i] = static_cast<char>(value >> (8 * i));
}
std::uint32_t get32(const char* in) noexcept {
  std::uint32_t value = 0;
  for (int i = 0; i < 4; ++i) value |= std::uint32_t{static_cast<std::uint8_t>(in[i])} << (8 * i);
  return value;
}
std::uint64_t get64(const char* in) noexcept {
  std::uint64_t value = 0;
  for (int i = 0; i < 8; ++i) value |= std::uint64_t{static_cast<std::uint8_t>(in[i])} << (8 * i);
  return value;
}

// A heap entry in RedisBloom's layout (fingerprint, item length, item pointer, count), so that
// qsort orders ties exactly as RedisBloom's TOPK.LIST does on the same C library.
struct ListSlot {
  std::uint32_t fingerprint;
  std::uint32_t length;
  const Entry* entry;
  std::uint32_t count;
};
static_assert(sizeof(ListSlot) == kHeapEntryBytes);

int by_count_descending(const void* a, const void* b) {
  const auto x = static_cast<const ListSlot*>(a)->count;
  const auto y = static_cast<const ListSlot*>(b)->count;
  return x < y ? 1 : x > y ? -1 : 0;
}

}  // namespace

std::optional<std::uint64_t> bytes_for(std::uint64_t k, std::uint64_t width,
                                       std::uint64_t depth) noexcept {
  constexpr std::uint64_t kMax = std::numeric_limits<std::uint64_t>::max();
  if (width == 0 || depth == 0 || depth > kMax / width) return std::nullopt;
  const std::uint64_t cells = width * depth;
  if (cells > kMax / kBucketBytes || k > kMax / kHeapEntryBytes) return std::nullopt;
  const std::uint64_t buckets = cells * kBucketBytes;
  const std::uint64_t heap = k * kHeapEntryBytes;
  if (buckets > kMax - heap) return std::nullopt;
  return buckets + heap;
}

TopK::TopK(std::uint32_t k, std::uint32_t width, std::uint32_t depth, double decay,
           ChainAllocator allocator)
    : k_(k),
      width_(width),
      depth_(depth),
      decay_(decay),
      bucket_bytes_(std::size_t{width} * depth * kBucketBytes, allocator),
      heap_(k),
      heap_fingerprints_(k),
      decay_table_(kDecayTable),
      // Any fixed start will do: a primary and its replica make the value from the same command.
      generator_(kGolden ^ (std::uint64_t{k} << 32 | width) ^ (std::uint64_t{depth} << 16)) {
  for (std::size_t i = 0; i < kDecayTable; ++i) {
    decay_table_[i] = std::pow(decay, static_cast<double>(i));
  }
}

TopK::Bucket* TopK::buckets() noexcept {
  return reinterpret_cast<Bucket*>(bucket_bytes_.data());
}
const TopK::Bucket* TopK::buckets() const noexcept {
  return reinterpret_cast<const Bucket*>(bucket_bytes_.data());
}

std::uint64_t TopK::memory_bytes() const noexcept {
  return *bytes_for(k_, width_, depth_);
}

// The last entry first, as RedisBloom searches.
int TopK::heap_index(std::string_view item, std::uint32_t fingerprint) const noexcept {
  const std::uint32_t* fingerprints = heap_fingerprints_.data();
  for (int i = static_cast<int>(k_) - 1; i >= 0; --i) {
    if (fingerprints[i] == fingerprint && heap_[static_cast<std::size_t>(i)].item == item) {
      return i;
    }
  }
  return -1;
}

double TopK::decay_chance(std::uint32_t count) const noexcept {
  if (count < kDecayTable) return decay_table_[count];
  return std::pow(decay_table_[kDecayTable - 1], count / (kDecayTable - 1)) *
         decay_table_[count % (kDecayTable - 1)];
}

// SplitMix64: a uniform double in [0, 1).
double TopK::draw() noexcept {
  generator_ += kGolden;
  std::uint64_t z = generator_;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  z ^= z >> 31;
  return static_cast<double>(z >> 11) * 0x1.0p-53;
}

// RedisBloom's heapifyDown, step for step: which of two equal children moves decides which
// entry a later add replaces.
void TopK::sift_down(std::size_t start) noexcept {
  const std::size_t len = k_;
  std::size_t child = start;
  if (len < 2 || (len - 2) / 2 < child) return;
  child = 2 * child + 1;
  if (child + 1 < len && heap_[child].count > heap_[child + 1].count) ++child;
  if (heap_[child].count > heap_[start].count) return;
  Entry top = std::move(heap_[start]);
  do {
    heap_[start] = std::move(heap_[child]);
    heap_fingerprints_[start] = heap_fingerprints_[child];
    start = child;
    if ((len - 2) / 2 < child) break;
    child = 2 * child + 1;
    if (child + 1 < len && heap_[child].count > heap_[child + 1].count) ++child;
  } while (heap_[child].count < top.count);
  heap_fingerprints_[start] = top.fingerprint;
  heap_[start] = std::move(top);
}

std::optional<std::string> TopK::add(std::string_view item, std::uint32_t increment) {
  const std::uint32_t fingerprint = fingerprint_of(item);
  const std::uint32_t heap_min = heap_[0].count;
  std::uint32_t max_count = 0;
  Bucket* rows = buckets();
  for (std::uint32_t row = 0; row < depth_; ++row) {
    Bucket& b = rows[std::size_t{row} * width_ + redisbloom::murmur2_32(item, row) % width_];
    if (b.count == 0) {
      b.fingerprint = fingerprint;
      b.count = increment;
      max_count = std::max(max_count, b.count);
    } else if (b.fingerprint == fingerprint) {
      b.count += increment;
      max_count = std::max(max_count, b.count);
    } else {
      // Another item's bucket: each unit of the increment takes one off it with chance
      // decay^count; the unit that empties it claims it with what is left.
      for (std::uint32_t left = increment; left > 0; --left) {
        if (draw() < decay_chance(b.count)) {
          if (--b.count == 0) {
            b.fingerprint = fingerprint;
            b.count = left;
            max_count = std::max(max_count, b.count);
            break;
          }
        }
      }
    }
  }
  if (max_count < heap_min) return std::nullopt;
  const int at = heap_index(item, fingerprint);
  if (at >= 0) {
    // Not the larger of the two: the buckets may have decayed since.
    heap_[static_cast<std::size_t>(at)].count = max_count;
    sift_down(static_cast<std::size_t>(at));
    return std::nullopt;
  }
  Entry& least = heap_[0];
  std::optional<std::string> expelled;
  if (least.held) expelled = std::move(least.item);
  least.item.assign(item);
  least.fingerprint = fingerprint;
  least.count = max_count;
  least.held = true;
  heap_fingerprints_[0] = fingerprint;
  sift_down(0);
  return expelled;
}

bool TopK::query(std::string_view item) const noexcept {
  return heap_index(item, fingerprint_of(item)) >= 0;
}

std::uint32_t TopK::count(std::string_view item) const noexcept {
  const std::uint32_t fingerprint = fingerprint_of(item);
  const std::uint32_t heap_min = heap_[0].count;
  const bool listed = heap_index(item, fingerprint) >= 0;
  const Bucket* rows = buckets();
  std::uint32_t result = 0;
  for (std::uint32_t row = 0; row < depth_; ++row) {
    const Bucket& b = rows[std::size_t{row} * width_ + redisbloom::murmur2_32(item, row) % width_];
    if (b.fingerprint == fingerprint && (!listed || b.count >= heap_min)) {
      result = std::max(result, b.count);
    }
  }
  return result;
}

std::vector<Entry> TopK::list() const {
  std::vector<ListSlot> slots(k_);
  for (std::size_t i = 0; i < k_; ++i) {
    const Entry& e = heap_[i];
    slots[i] = {e.fingerprint, static_cast<std::uint32_t>(e.item.size()), &e, e.count};
  }
  std::qsort(slots.data(), slots.size(), sizeof(ListSlot), by_count_descending);
  std::vector<Entry> out;
  for (const ListSlot& slot : slots) {
    if (slot.count == 0) break;
    out.push_back(*slot.entry);
  }
  return out;
}

std::size_t TopK::relocate(std::size_t first, void* (*move)(void*, void*), void* context,
                           bool (*)(void*), std::uint64_t* moved) noexcept {
  if (first == 0) *moved += bucket_bytes_.relocate(move, context) ? 1 : 0;
  return 1;
}

Saved TopK::saved() const {
  Saved s;
  s.k = k_;
  s.width = width_;
  s.depth = depth_;
  s.decay = decay_;
  s.buckets.assign(reinterpret_cast<const char*>(bucket_bytes_.data()), bucket_bytes_.size());
  s.heap.assign(std::size_t{k_} * kHeapEntryBytes, '\0');
  s.items.reserve(k_);
  for (std::size_t i = 0; i < k_; ++i) {
    const Entry& e = heap_[i];
    char* out = s.heap.data() + i * kHeapEntryBytes;
    put32(out, e.fingerprint);
    put32(out + 4, static_cast<std::uint32_t>(e.item.size()));
    // RedisBloom's item pointer, which no reader uses: the first entry's carries the draws'
    // state so that a reload or a replica's full sync draws on from where the value was.
    put64(out + 8, i == 0 ? generator_ : i < loaded_words_.size() ? loaded_words_[i] : 0);
    put32(out + 16, e.count);
    std::string item = e.held ? e.item : std::string();
    item.push_back('\0');
    s.items.push_back(std::move(item));
  }
  return s;
}

std::string TopK::problem(const Saved& s) {
  constexpr std::uint64_t kMax32 = std::numeric_limits<std::uint32_t>::max();
  if (s.k == 0 || s.width == 0 || s.depth == 0) return "k, width and depth must be positive";
  if (s.k > kMax32 || s.width > kMax32 || s.depth > kMax32) return "k, width or depth too large";
  if (!(s.decay > 0 && s.decay <= 1)) return "decay outside (0, 1]";
  if (!bytes_for(s.k, s.width, s.depth)) return "figures overflow";
  if (s.buckets.size() != s.width * s.depth * kBucketBytes) return "bucket array of wrong size";
  if (s.heap.size() != s.k * kHeapEntryBytes) return "heap array of wrong size";
  if (s.items.size() != s.k) return "wrong number of heap items";
  for (const std::string& item : s.items) {
    if (item.empty() || item.back() != '\0') return "a heap item without its terminating NUL";
  }
  return {};
}

TopK TopK::restore(const Saved& s, ChainAllocator allocator) {
  TopK topk(static_cast<std::uint32_t>(s.k), static_cast<std::uint32_t>(s.width),
            static_cast<std::uint32_t>(s.depth), s.decay, allocator);
  std::memcpy(topk.bucket_bytes_.data(), s.buckets.data(), s.buckets.size());
  for (std::size_t i = 0; i < topk.k_; ++i) {
    const char* in = s.heap.data() + i * kHeapEntryBytes;
    Entry& e = topk.heap_[i];
    e.fingerprint = get32(in);
    topk.heap_fingerprints_[i] = e.fingerprint;
    e.count = get32(in + 16);
    e.item.assign(s.items[i], 0, s.items[i].size() - 1);
    e.held = s.items[i].size() > 1;
  }
  topk.generator_ = get64(s.heap.data() + 8);
  topk.loaded_words_.resize(topk.k_);
  for (std::size_t i = 1; i < topk.k_; ++i) {
    topk.loaded_words_[i] = get64(s.heap.data() + i * kHeapEntryBytes + 8);
  }
  // RedisBloom's load fills the table by products, not powers: the same here, so that chances
  // after a reload match its to the last bit.
  for (std::size_t i = 0; i < kDecayTable; ++i) {
    topk.decay_table_[i] = i == 0 ? 1 : topk.decay_table_[i - 1] * s.decay;
  }
  return topk;
}

}  // namespace redbloom::topk
