// The kernel paths a test runs: every instruction-set level this CPU has, scalar included.
#pragma once

#include <string>
#include <vector>

#include "core/bitmap_kernels.hpp"

namespace redbloom::testing {

inline std::vector<kernels::Simd> simd_levels() {
  std::vector<kernels::Simd> levels;
  for (auto level : {kernels::Simd::scalar, kernels::Simd::avx2, kernels::Simd::avx512,
                     kernels::Simd::avx512_bits}) {
    if (level <= kernels::simd_available()) levels.push_back(level);
  }
  return levels;
}

inline std::string to_string(kernels::Simd level) {
  switch (level) {
    case kernels::Simd::scalar:
      return "scalar";
    case kernels::Simd::avx2:
      return "avx2";
    case kernels::Simd::avx512:
      return "avx512";
    case kernels::Simd::avx512_bits:
      return "avx512-bits";
  }
  return "?";
}

}  // namespace redbloom::testing
