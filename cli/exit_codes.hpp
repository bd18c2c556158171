#pragma once

namespace redbloom::cli {

// Documented in the README; scripts rely on them.
inline constexpr int kExitOk = 0;
inline constexpr int kExitNoMatch = 1;  // exists: no line selected (as grep)
inline constexpr int kExitUsage = 2;    // bad options, bad input, filter missing or mismatched
inline constexpr int kExitStorage = 3;  // the filter's storage failed or is corrupt

}  // namespace redbloom::cli
