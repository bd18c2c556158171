// Hot paths over an in-process bitmap (heap memory or a mapped file): probe, prefetch,
// test and set. Internal to the library.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "redbloom/hash.hpp"
#include "redbloom/params.hpp"

namespace redbloom::kernels {

struct Bitmap {
  std::uint64_t* words;  // 64-byte aligned, total_bits / 64 words, Redis bit order
  FilterParams params;
  std::uint64_t blocks_per_partition;  // blocked layout: partition_bits / kBlockBits
  // Blocked layout: for each start word s, all ones in the words the last probe round of an
  // item probes (layout.hpp). Per filter, so a one-item call does not rebuild it.
  alignas(32) std::uint64_t last_round_words[8][8];
  // The same selection as a bit per word (bit w = word w), for AVX-512 mask registers.
  std::uint8_t last_round_lanes[8];
  // A 1 in every word: the AVX-512 one-item kernel rotates it into the probe bits. A load from
  // here is one instruction; a constant the compiler can see it rebuilds with two.
  alignas(64) std::uint64_t ones[8];
  // The last round's words once more, for the AVX-512 batch path's byte-per-word probes: for
  // start word s, probed_bytes[s] has bit 9w (byte w of word w of a line) for each word w the
  // round probes, and byte w of unprobed[s] is 64 for each word it skips.
  alignas(64) std::uint64_t probed_bytes[8];
  alignas(64) std::uint64_t unprobed[8];
  // One item (`bitmap` is this Bitmap): true iff the item was new (test_and_set_one) / is
  // present (test_one). Chosen at make_bitmap for the layout, k and CPU, so that a call is
  // one indirect jump into straight-line code.
  bool (*test_and_set_one)(const void* bitmap, std::string_view item);
  bool (*test_one)(const void* bitmap, std::string_view item);
};

// `private_memory`: the words are this process's anonymous memory, where writing a word back
// unchanged costs nothing, so a one-item classic insert may store every word it probes. Else
// (a file mapping, where a written page is dirty and msync writes it back) a word is written
// only if a bit of it changes, so pages that only see duplicates stay clean.
[[nodiscard]] Bitmap make_bitmap(std::uint64_t* words, const FilterParams& params,
                                 bool private_memory) noexcept;

void test_and_set(const Bitmap& bitmap, std::span<const std::string_view> items,
                  std::uint8_t* newly_added);
void set(const Bitmap& bitmap, std::span<const std::string_view> items);

// Splitting one add batch over threads, in two steps. First the threads hash equal slices of
// the batch (hash_items). Then thread t adds the items it owns (take_share): those whose
// partition lies in the t-th of T equal runs of the partitions. No two threads write one
// line, and each sees its lines change in batch order, so the second of two equal items is
// still not new. A filter with one partition has one owner.
void hash_items(std::span<const std::string_view> items, ItemHash* hashes);
// The positions, in batch order, of the items thread t of `threads` owns.
void take_share(const Bitmap& bitmap, std::span<const ItemHash> hashes, unsigned t,
                unsigned threads, std::vector<std::uint32_t>& owned);
// The adds above for the items at `owned`, already hashed; newly_added[j] is for owned[j].
void test_and_set(const Bitmap& bitmap, std::span<const ItemHash> hashes,
                  std::span<const std::uint32_t> owned, std::uint8_t* newly_added);
void set(const Bitmap& bitmap, std::span<const ItemHash> hashes,
         std::span<const std::uint32_t> owned);
void test(const Bitmap& bitmap, std::span<const std::string_view> items, std::uint8_t* present);
// The lookup for the items at `owned`, already hashed; present[j] is for owned[j].
void test(const Bitmap& bitmap, std::span<const ItemHash> hashes,
          std::span<const std::uint32_t> owned, std::uint8_t* present);
// present[j] = 1 iff the item at owned[j] is in any of `bitmaps`, which must all have the same
// parameters (a windowed filter's slices): its block and probes are computed once, and its
// lines in all of them are requested together.
void test_any(std::span<const Bitmap* const> bitmaps, std::span<const ItemHash> hashes,
              std::span<const std::uint32_t> owned, std::uint8_t* present);
// A windowed add in one pass over bitmaps of the same parameters: out[j], for the item at
// owned[j], has bit 0 set if the item is in one of `older`, and bit 1 if some bit of it was
// clear in `current`, where it is then set (in order, so the second of two equal items is not
// new to it).
void test_any_and_set(std::span<const Bitmap* const> older, const Bitmap& current,
                      std::span<const ItemHash> hashes, std::span<const std::uint32_t> owned,
                      std::uint8_t* out);
// The instruction sets the blocked layout's kernels have paths for, each level including the
// ones before it: AVX2; AVX-512F/DQ (one-item calls and batches with k <= 8); and with
// AVX-512BW/VBMI/BITALG as well (Ice Lake, Zen 4), batches that plan probes as bytes. The best
// the CPU has is chosen at run time; every path sets identical bits.
enum class Simd : std::uint8_t { scalar, avx2, avx512, avx512_bits };
// The best level this CPU has.
Simd simd_available() noexcept;
// Limits the kernels to `highest` (and what the CPU has), for the batch calls and the one-item
// paths of bitmaps made after it, so that tests can compare every path; returns the previous
// limit.
Simd use_simd(Simd highest) noexcept;

std::uint64_t popcount(std::uint64_t* words, std::uint64_t count);
// The set bits of any run of bytes (no alignment asked).
std::uint64_t count_ones(std::span<const std::uint8_t> bytes);

}  // namespace redbloom::kernels
