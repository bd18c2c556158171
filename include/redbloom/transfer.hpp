// Copying a filter between stores (file <-> Redis, Redis <-> Redis). Every store keeps a
// partition's bytes in Redis bit order, so a copy is the same bytes moved, partition by
// partition, in bounded chunks.
#pragma once

#include <cstdint>
#include <functional>

#include "redbloom/store.hpp"

namespace redbloom {

// Called after each chunk with the bytes copied so far and the total.
using CopyProgress = std::function<void(std::uint64_t done, std::uint64_t total)>;

// Overwrites every bit of `to` with `from`'s. Both must have equal parameters (InvalidArgument
// otherwise). Afterwards the two stores' bit counts are compared: a difference (a writer
// changed either filter during the copy) throws StorageError.
void copy_bits(const Store& from, Store& to, const CopyProgress& progress = {});

}  // namespace redbloom
