// A filter file is memory-mapped. If it shrinks while in use (truncated, or replaced in place
// by a shorter file: `cp other.rbf f.rbf`), the next access past its new end raises SIGBUS,
// which kills a process silently. A program that would rather say so installs this handler.
#pragma once

namespace redbloom {

// Installs a SIGBUS handler: a fault inside a mapped filter file prints "redbloom: the filter
// file PATH changed size while in use (truncated, or replaced by a shorter file?): ..." on
// stderr and exits with `exit_status`; any other SIGBUS keeps its default action. Call once,
// early; it replaces any SIGBUS handler the program had.
void report_shrinking_filter_files(int exit_status);

// The path of the mapped filter file that holds `address`, or nullptr. Async-signal-safe: for
// programs with a SIGBUS handler of their own.
[[nodiscard]] const char* mapped_filter_file_at(const void* address) noexcept;

}  // namespace redbloom
