// Hot paths over an in-process bitmap (heap memory or a mapped file): probe, prefetch,
// test and set. Internal to the library.
#pragma once

#include <cstdint>
#include <span>

#include "redbloom/hash.hpp"
#include "redbloom/params.hpp"

namespace redbloom::kernels {

struct Bitmap {
  std::uint64_t* words;  // 64-byte aligned, total_bits / 64 words, Redis bit order
  FilterParams params;
  // Blocked layout: for each start word s, all ones in the words the last probe round of an
  // item probes (layout.hpp). Per filter, so a one-item call does not rebuild it.
  alignas(32) std::uint64_t last_round_words[8][8];
};

[[nodiscard]] Bitmap make_bitmap(std::uint64_t* words, const FilterParams& params) noexcept;

void test_and_set(const Bitmap& bitmap, std::span<const std::string_view> items,
                  std::uint8_t* newly_added);
void set(const Bitmap& bitmap, std::span<const std::string_view> items);
// One item: true iff it was new (test_and_set_one) / is present (test_one).
bool test_and_set_one(const Bitmap& bitmap, std::string_view item);
bool test_one(const Bitmap& bitmap, std::string_view item);
void test(const Bitmap& bitmap, std::span<const std::string_view> items, std::uint8_t* present);
// The blocked layout has an AVX2 path, chosen at run time when the CPU has AVX2; both paths
// set identical bits. use_simd(false) forces the scalar path (tests compare the two) and
// returns the previous setting.
bool simd_available() noexcept;
bool use_simd(bool enabled) noexcept;

std::uint64_t popcount(std::uint64_t* words, std::uint64_t count);

}  // namespace redbloom::kernels
