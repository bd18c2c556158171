// The fingerprint an exact set keeps of an item: XXH3-64 with a seed of its own. Internal:
// the file and Redis sets compute it, the tests check it.
#pragma once

#include <cstdint>
#include <string_view>

namespace redbloom {

[[nodiscard]] std::uint64_t exact_fingerprint(std::string_view item) noexcept;

}  // namespace redbloom
