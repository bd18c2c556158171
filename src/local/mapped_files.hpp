// The filter files this process has mapped, for the SIGBUS handler of file_faults.hpp: a fixed
// table written by FileStore's constructor and destructor and read, without locks, from a
// signal handler.
#pragma once

#include <cstddef>
#include <string>

namespace redbloom::mapped_files {

// Records [begin, begin + length) as the mapping of `path`; returns a slot for forget(), or -1
// if the table is full (the mapping then faults without a name).
int remember(const void* begin, std::size_t length, const std::string& path) noexcept;
void forget(int slot) noexcept;

}  // namespace redbloom::mapped_files
