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
};

void test_and_set(const Bitmap& bitmap, std::span<const ItemHash> items, std::uint8_t* newly_added);
void set(const Bitmap& bitmap, std::span<const ItemHash> items);
void test(const Bitmap& bitmap, std::span<const ItemHash> items, std::uint8_t* present);
std::uint64_t popcount(std::uint64_t* words, std::uint64_t count);

}  // namespace redbloom::kernels
