// How a link of a filter that grows is sized, for both kinds that grow: the module's chains
// (filter_chain.hpp, BF.* filters) and the links of windowed and growing filters
// (stream_shape.hpp). One routine, so that the two never drift apart in how they meet a rate.
#pragma once

#include <cstdint>

#include "redbloom/params.hpp"

namespace redbloom {

// A link for `capacity` items (rounded down) at `error_rate` in `layout`, in partitions of at
// most `max_partition_bytes`. A rate above kMaxErrorRate is sized as kMaxErrorRate (a link
// sized for 0.5 meets any higher target); a blocked link whose rate is out of a 512-bit
// block's reach (far below 1e-20) is classic.
[[nodiscard]] FilterParams size_link(double capacity, double error_rate, Layout layout,
                                     std::uint64_t max_partition_bytes);

}  // namespace redbloom
