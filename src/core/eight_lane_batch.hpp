// The blocked layout's batch over items eight at a time with AVX-512 (k <= 8): XXH3 hashed in
// eight 64-bit lanes (items of 4 to 240 bytes), the lines computed in vectors, and the probes
// planned per group. Internal to the kernels (bitmap_kernels.cpp dispatches to it).
#pragma once

#include <cstdint>
#include <span>
#include <string_view>

#include "core/kernel_parts.hpp"

namespace redbloom::kernels::parts {

// Whether `bitmap` can take the eight-lane batch at all (the CPU has AVX-512F/DQ, k <= 8):
// its block and partition counts fit in 32 bits, and std::string_view is laid out as the
// batch reads it.
[[nodiscard]] bool eight_lane_batch_fits(const Bitmap& bitmap) noexcept;

// The batch kernel for `op` over `items`, with AVX-512 VBMI and BITALG if `level` allows.
template <Op op>
void eight_lane_batch(const Bitmap& bitmap, std::span<const std::string_view> items,
                      std::uint8_t* out, Simd level);

// Whether eight_lane_hash can run (the CPU has AVX-512F/DQ besides): std::string_view is laid
// out as it reads it.
[[nodiscard]] bool eight_lane_hash_fits() noexcept;

// hash_item of each of `items` into `hashes`, eight at a time in vectors (the batch's hashing
// without its probes): the paths that hash a batch before routing or testing it in several
// bitmaps.
void eight_lane_hash(std::span<const std::string_view> items, ItemHash* hashes);

extern template void eight_lane_batch<Op::test_and_set>(const Bitmap&,
                                                        std::span<const std::string_view>,
                                                        std::uint8_t*, Simd);
extern template void eight_lane_batch<Op::set>(const Bitmap&, std::span<const std::string_view>,
                                               std::uint8_t*, Simd);
extern template void eight_lane_batch<Op::test>(const Bitmap&, std::span<const std::string_view>,
                                                std::uint8_t*, Simd);

}  // namespace redbloom::kernels::parts
