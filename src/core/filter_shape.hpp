// The FilterShape (filter_backend.hpp) of a windowed or growing filter: its options and every
// link a slice may hold. Pure, so the stores of every family build it (core is below them).
#pragma once

#include "core/stream_shape.hpp"
#include "redbloom/filter_backend.hpp"

namespace redbloom {

[[nodiscard]] FilterShape shape_of(const StreamShape& shape);

}  // namespace redbloom
