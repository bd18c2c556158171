#include "core/cuckoo_filter.hpp"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <new>

namespace redbloom::cuckoo {

namespace {

// RedisBloom's getNextN2: the next power of two, 0 staying 0.
std::uint64_t next_power_of_two(std::uint64_t n) noexcept {
  --n;
  n |= n >> 1;
  n |= n >> 2;
  n |= n >> 4;
  n |= n >> 8;
  n |= n >> 16;
  n |= n >> 32;
  return n + 1;
}

bool is_power_of_two(std::uint64_t n) noexcept {
  return n != 0 && (n & (n - 1)) == 0;
}

std::uint64_t alternate(std::uint8_t fp, std::uint64_t index) noexcept {
  return index ^ (static_cast<std::uint64_t>(fp) * 0x5bd1e995ULL);
}

// expansion^power, saturated past what any sub-filter can hold.
std::uint64_t growth_of(std::uint16_t expansion, std::size_t power) noexcept {
  std::uint64_t growth = 1;
  for (std::size_t i = 0; i < power; ++i) {
    if (growth > kMaxBuckets) return kMaxBuckets + 1;
    growth *= expansion;
  }
  return growth;
}

std::uint8_t* find_empty(std::uint8_t* bucket, std::uint16_t size) noexcept {
  for (std::uint16_t i = 0; i < size; ++i) {
    if (bucket[i] == 0) return bucket + i;
  }
  return nullptr;
}

template <class T>
void put(std::string& out, T value) {
  char bytes[sizeof(T)];
  std::memcpy(bytes, &value, sizeof(T));
  out.append(bytes, sizeof(T));
}

template <class T>
T take(std::string_view in, std::size_t at) noexcept {
  T value;
  std::memcpy(&value, in.data() + at, sizeof(T));
  return value;
}

// RedisBloom's CFSize: its CuckooFilter (40 bytes) and SubCF (16 bytes) structs.
constexpr std::uint64_t kFilterStructBytes = 40;
constexpr std::uint64_t kSubFilterStructBytes = 16;

}  // namespace

std::uint64_t item_hash(std::string_view item) noexcept {
  return redisbloom::murmur64a(item, 0);
}

Filter::Lookup Filter::lookup(std::uint64_t hash) noexcept {
  const auto fp = static_cast<std::uint8_t>(hash % 255 + 1);
  return {hash, alternate(fp, hash), fp};
}

// RedisBloom computes a slot's offset in 32 bits (SubCF_GetIndex returns uint32_t): kept, so
// that a sub-filter of over 4 GiB places fingerprints where RedisBloom does.
static std::uint64_t bucket_at(const SubFilter& filter, std::uint16_t bucket_size,
                               std::uint64_t hash) noexcept {
  return static_cast<std::uint32_t>((hash % filter.buckets) * bucket_size);
}

Filter::Filter(std::uint64_t items, std::uint64_t deletes, std::uint64_t buckets,
               std::uint16_t bucket_size, std::uint16_t max_iterations, std::uint16_t expansion,
               std::vector<SubFilter> filters, ChainAllocator allocator) noexcept
    : items_(items),
      deletes_(deletes),
      buckets_(buckets),
      bucket_size_(bucket_size),
      max_iterations_(max_iterations),
      expansion_(expansion),
      filters_(std::move(filters)),
      allocator_(allocator) {}

Filter::Filter(const Filter& other)
    : items_(other.items_),
      deletes_(other.deletes_),
      buckets_(other.buckets_),
      bucket_size_(other.bucket_size_),
      max_iterations_(other.max_iterations_),
      expansion_(other.expansion_),
      filters_(other.filters_),
      allocator_(other.allocator_) {}

std::unique_ptr<Filter> Filter::make(std::uint64_t capacity, std::uint16_t bucket_size,
                                     std::uint16_t max_iterations, std::uint16_t expansion,
                                     ChainAllocator allocator, std::uint64_t max_bytes,
                                     MakeError& error) {
  error = MakeError::none;
  if (capacity < std::uint64_t{bucket_size} * 2) {
    error = MakeError::too_small;
    return nullptr;
  }
  std::uint64_t buckets = next_power_of_two(capacity / bucket_size);
  if (buckets == 0) buckets = 1;
  auto filter = std::make_unique<Filter>(0, 0, buckets, bucket_size, max_iterations,
                                         static_cast<std::uint16_t>(next_power_of_two(expansion)),
                                         std::vector<SubFilter>{}, allocator);
  if (const Insert grown = filter->grow(max_bytes); grown != Insert::inserted) {
    error = grown == Insert::over_limit ? MakeError::over_limit : MakeError::too_large;
    return nullptr;
  }
  return filter;
}

Insert Filter::grow(std::uint64_t max_bytes) {
  if (filters_.size() >= kMaxFilters) return Insert::cannot_grow;
  const std::uint64_t growth = growth_of(expansion_, filters_.size());
  if (growth > kMaxBuckets / buckets_) return Insert::cannot_grow;
  const std::uint64_t buckets = buckets_ * growth;
  const std::uint64_t size = buckets * bucket_size_;
  if (max_bytes != 0 && (size > max_bytes || bytes() > max_bytes - size)) {
    return Insert::over_limit;
  }
  try {
    filters_.reserve(filters_.size() + 1);
    filters_.push_back({buckets, redisbloom::Bits(static_cast<std::size_t>(size), allocator_)});
  } catch (const std::bad_alloc&) {
    return Insert::cannot_grow;
  }
  return Insert::inserted;
}

bool Filter::contains(std::uint64_t hash) const noexcept {
  const Lookup at = lookup(hash);
  for (const SubFilter& filter : filters_) {
    const std::uint8_t* data = filter.data.data();
    const std::uint8_t* b1 = data + bucket_at(filter, bucket_size_, at.h1);
    const std::uint8_t* b2 = data + bucket_at(filter, bucket_size_, at.h2);
    for (std::uint16_t i = 0; i < bucket_size_; ++i) {
      if (b1[i] == at.fp) return true;
    }
    for (std::uint16_t i = 0; i < bucket_size_; ++i) {
      if (b2[i] == at.fp) return true;
    }
  }
  return false;
}

void Filter::prefetch(std::uint64_t hash) const noexcept {
  constexpr std::size_t kMostFetched = 4;
  const Lookup at = lookup(hash);
  const std::size_t fetched = std::min(filters_.size(), kMostFetched);
  for (std::size_t f = 0; f < fetched; ++f) {
    const SubFilter& filter = filters_[f];
    __builtin_prefetch(filter.data.data() + bucket_at(filter, bucket_size_, at.h1));
    __builtin_prefetch(filter.data.data() + bucket_at(filter, bucket_size_, at.h2));
  }
}

void Filter::contains_many(std::span<const std::uint64_t> hashes,
                           std::uint8_t* present) const noexcept {
  constexpr std::size_t kAhead = 8;
  for (std::size_t i = 0; i < std::min(kAhead, hashes.size()); ++i) prefetch(hashes[i]);
  for (std::size_t i = 0; i < hashes.size(); ++i) {
    if (i + kAhead < hashes.size()) prefetch(hashes[i + kAhead]);
    present[i] = contains(hashes[i]) ? 1 : 0;
  }
}

std::uint64_t Filter::count(std::uint64_t hash) const noexcept {
  const Lookup at = lookup(hash);
  std::uint64_t found = 0;
  for (const SubFilter& filter : filters_) {
    const std::uint8_t* data = filter.data.data();
    // Both buckets are counted, the same one twice when the indexes meet, as RedisBloom does.
    for (const std::uint64_t h : {at.h1, at.h2}) {
      const std::uint8_t* bucket = data + bucket_at(filter, bucket_size_, h);
      for (std::uint16_t i = 0; i < bucket_size_; ++i) found += bucket[i] == at.fp ? 1 : 0;
    }
  }
  return found;
}

bool Filter::remove(std::uint64_t hash) noexcept {
  const Lookup at = lookup(hash);
  for (std::size_t f = filters_.size(); f-- > 0;) {
    SubFilter& filter = filters_[f];
    bool removed = false;
    for (const std::uint64_t h : {at.h1, at.h2}) {
      std::uint8_t* bucket = filter.data.data() + bucket_at(filter, bucket_size_, h);
      for (std::uint16_t i = 0; i < bucket_size_ && !removed; ++i) {
        if (bucket[i] == at.fp) {
          bucket[i] = 0;
          removed = true;
        }
      }
      if (removed) break;
    }
    if (!removed) continue;
    --items_;
    ++deletes_;
    if (filters_.size() > 1 && static_cast<double>(deletes_) > static_cast<double>(items_) * 0.10) {
      compact(false);
    }
    return true;
  }
  return false;
}

Insert Filter::insert(std::uint64_t hash, std::uint64_t max_bytes) {
  return insert_fingerprint(lookup(hash), max_bytes);
}

Insert Filter::insert_unique(std::uint64_t hash, std::uint64_t max_bytes) {
  if (contains(hash)) return Insert::exists;
  return insert_fingerprint(lookup(hash), max_bytes);
}

Insert Filter::insert_fingerprint(const Lookup& at, std::uint64_t max_bytes) {
  for (;;) {
    for (std::size_t f = filters_.size(); f-- > 0;) {
      SubFilter& filter = filters_[f];
      std::uint8_t* slot =
          find_empty(filter.data.data() + bucket_at(filter, bucket_size_, at.h1), bucket_size_);
      if (slot == nullptr) {
        slot =
            find_empty(filter.data.data() + bucket_at(filter, bucket_size_, at.h2), bucket_size_);
      }
      if (slot != nullptr) {
        *slot = at.fp;
        ++items_;
        return Insert::inserted;
      }
    }
    if (kick_in(filters_.back(), at)) {
      ++items_;
      return Insert::inserted;
    }
    if (expansion_ == 0) return Insert::no_space;
    if (const Insert grown = grow(max_bytes); grown != Insert::inserted) return grown;
  }
}

// RedisBloom's eviction walk in the newest sub-filter: swap the fingerprint into the victim
// slot (0, 1, ... round the bucket), carry the evicted one to its other bucket; after
// `max_iterations` without an empty slot, walk back and undo every swap.
bool Filter::kick_in(SubFilter& filter, const Lookup& at) noexcept {
  const std::uint64_t buckets = filter.buckets;
  std::uint8_t* data = filter.data.data();
  std::uint8_t fp = at.fp;
  std::uint32_t victim = 0;
  std::uint64_t index = at.h1 % buckets;
  for (std::uint32_t step = 0; step < max_iterations_; ++step) {
    std::swap(data[index * bucket_size_ + victim], fp);
    index = alternate(fp, index) % buckets;
    if (std::uint8_t* empty = find_empty(data + index * bucket_size_, bucket_size_)) {
      *empty = fp;
      return true;
    }
    victim = (victim + 1) % bucket_size_;
  }
  for (std::uint32_t step = 0; step < max_iterations_; ++step) {
    victim = (victim + bucket_size_ - 1) % bucket_size_;
    index = alternate(fp, index) % buckets;
    std::swap(data[index * bucket_size_ + victim], fp);
  }
  return false;
}

// Moves each fingerprint of sub-filter `index` into an older one with room (a fingerprint's
// bucket index in a smaller power-of-two sub-filter follows from its index here); frees the
// sub-filter when emptied and newest. False when one could not move.
bool Filter::compact_one(std::size_t index) noexcept {
  SubFilter& filter = filters_[index];
  bool all_moved = true;
  for (std::uint64_t b = 0; b < filter.buckets; ++b) {
    std::uint8_t* bucket = filter.data.data() + b * bucket_size_;
    for (std::uint16_t s = 0; s < bucket_size_; ++s) {
      const std::uint8_t fp = bucket[s];
      if (fp == 0) continue;
      bool moved = false;
      for (std::size_t older = 0; older < index && !moved; ++older) {
        SubFilter& to = filters_[older];
        std::uint8_t* slot =
            find_empty(to.data.data() + bucket_at(to, bucket_size_, b), bucket_size_);
        if (slot == nullptr) {
          slot = find_empty(to.data.data() + bucket_at(to, bucket_size_, alternate(fp, b)),
                            bucket_size_);
        }
        if (slot != nullptr) {
          *slot = fp;
          bucket[s] = 0;
          moved = true;
        }
      }
      all_moved = all_moved && moved;
    }
  }
  if (all_moved && index == filters_.size() - 1) filters_.pop_back();
  return all_moved;
}

void Filter::compact(bool go_on) noexcept {
  for (std::size_t f = filters_.size(); f-- > 1;) {
    if (!compact_one(f) && !go_on) break;
  }
  deletes_ = 0;
}

std::uint64_t Filter::bytes() const noexcept {
  std::uint64_t total = 0;
  for (const SubFilter& filter : filters_) total += filter.data.size();
  return total;
}

std::uint64_t Filter::memory_usage() const noexcept {
  return kFilterStructBytes + kSubFilterStructBytes * filters_.size() + bytes();
}

std::string Filter::debug_line() const {
  char line[256];
  std::snprintf(line, sizeof line,
                "bktsize:%u buckets:%llu items:%llu deletes:%llu filters:%u max_iterations:%u "
                "expansion:%u",
                unsigned{bucket_size_}, static_cast<unsigned long long>(buckets_),
                static_cast<unsigned long long>(items_), static_cast<unsigned long long>(deletes_),
                static_cast<unsigned>(filters_.size()), unsigned{max_iterations_},
                unsigned{expansion_});
  return line;
}

std::string Filter::encode_header() const {
  std::string out;
  out.reserve(kHeaderBytes);
  put<std::uint64_t>(out, items_);
  put<std::uint64_t>(out, buckets_);
  put<std::uint64_t>(out, deletes_);
  put<std::uint64_t>(out, filters_.size());
  put<std::uint16_t>(out, bucket_size_);
  put<std::uint16_t>(out, max_iterations_);
  put<std::uint16_t>(out, expansion_);
  return out;
}

std::unique_ptr<Filter> Filter::decode_header(std::string_view header, std::uint64_t max_bytes,
                                              ChainAllocator allocator, std::string& problem) {
  if (header.size() != kHeaderBytes) {
    problem = "header of a wrong size";
    return nullptr;
  }
  const auto count = take<std::uint64_t>(header, 24);
  auto filter =
      std::make_unique<Filter>(take<std::uint64_t>(header, 0), take<std::uint64_t>(header, 16),
                               take<std::uint64_t>(header, 8), take<std::uint16_t>(header, 32),
                               take<std::uint16_t>(header, 34), take<std::uint16_t>(header, 36),
                               std::vector<SubFilter>{}, allocator);
  if (count == 0 || count > kMaxFilters) {
    problem = "sub-filter count out of range";
    return nullptr;
  }
  // Every size is checked before one byte is allocated.
  std::vector<std::uint64_t> sizes;
  std::uint64_t total = 0;
  // growth_of(expansion, i) one step at a time: a count of 65535 with an expansion of 1 (sizes
  // that never reach the limit) would otherwise cost count^2 / 2 multiplications.
  std::uint64_t growth = 1;
  for (std::uint64_t i = 0; i < count; ++i) {
    if (i > 0) growth = growth > kMaxBuckets ? kMaxBuckets + 1 : growth * filter->expansion_;
    if (filter->buckets_ == 0 || growth > kMaxBuckets / filter->buckets_) {
      problem = "sub-filter too large";
      return nullptr;
    }
    const std::uint64_t size = filter->buckets_ * growth * filter->bucket_size_;
    total += size;
    if (max_bytes != 0 && total > max_bytes) {
      problem = "over the memory limit per filter";
      return nullptr;
    }
    sizes.push_back(size);
  }
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    filter->filters_.push_back({sizes[i] / std::max<std::uint64_t>(filter->bucket_size_, 1),
                                redisbloom::Bits(static_cast<std::size_t>(sizes[i]), allocator)});
  }
  problem = filter->problem();
  if (!problem.empty()) return nullptr;
  return filter;
}

std::string Filter::problem() const {
  if (bucket_size_ == 0 || bucket_size_ > kMaxBucketSize) return "bucket size out of range";
  if (buckets_ == 0 || buckets_ > kMaxBuckets || !is_power_of_two(buckets_)) {
    return "bucket count not a power of two in range";
  }
  if (filters_.empty() || filters_.size() > kMaxFilters) return "sub-filter count out of range";
  if (max_iterations_ == 0) return "no iterations";
  if (expansion_ == 0 && filters_.size() > 1) return "sub-filters without expansion";
  for (const SubFilter& filter : filters_) {
    if (filter.buckets == 0 || filter.buckets > kMaxBuckets ||
        filter.data.size() != filter.buckets * bucket_size_) {
      return "sub-filter size does not match its buckets";
    }
  }
  return {};
}

std::span<const std::uint8_t> Filter::chunk(long long iterator, long long* next) const noexcept {
  *next = 0;
  if (iterator < 1) return {};
  auto offset = static_cast<std::uint64_t>(iterator - 1);
  for (const SubFilter& filter : filters_) {
    const std::uint64_t size = filter.data.size();
    if (offset >= size) {
      offset -= size;
      continue;
    }
    // As RedisBloom: a sub-filter within the limit goes whole, from its start.
    if (size <= kMaxChunkBytes) {
      *next = iterator + static_cast<long long>(size);
      return {filter.data.data(), static_cast<std::size_t>(size)};
    }
    const std::uint64_t length = std::min(size - offset, kMaxChunkBytes);
    *next = iterator + static_cast<long long>(length);
    return {filter.data.data() + offset, static_cast<std::size_t>(length)};
  }
  return {};
}

bool Filter::load_chunk(long long iterator, std::string_view data) noexcept {
  if (data.empty() || iterator <= 0 || static_cast<std::uint64_t>(iterator - 1) < data.size()) {
    return false;
  }
  if (filters_.empty()) return false;
  auto offset = static_cast<std::uint64_t>(iterator - 1) - data.size();
  // As RedisBloom: past the last sub-filter the offset stays reduced by it and is tried there.
  SubFilter* target = &filters_.back();
  for (SubFilter& filter : filters_) {
    if (offset < filter.data.size()) {
      target = &filter;
      break;
    }
    offset -= filter.data.size();
  }
  if (offset > target->data.size() || data.size() > target->data.size() - offset) return false;
  std::memcpy(target->data.data() + offset, data.data(), data.size());
  return true;
}

std::size_t Filter::relocate(std::size_t first, void* (*move)(void*, void*), void* context,
                             bool (*stop)(void*), std::uint64_t* moved) noexcept {
  std::size_t i = first;
  for (; i < filters_.size(); ++i) {
    if (stop != nullptr && i > first && stop(context)) break;
    *moved += filters_[i].data.relocate(move, context) ? 1 : 0;
  }
  return i;
}

}  // namespace redbloom::cuckoo
