// Options every filter command shares: where the filter is and, for commands that may create
// it, how to size it.
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <string>

#include "redbloom/filter.hpp"
#include "redbloom/params.hpp"

namespace redbloom::cli {

struct SizingOptions {
  double capacity = 1e6;
  double error_rate = 0.01;
  std::string layout = "classic";
  double bits = 0;
  std::uint32_t hashes = 0;
  std::string partition_size = "64MiB";
  // Set by add_sizing_options; count() tells whether the user gave the option.
  CLI::Option* capacity_option = nullptr;
  CLI::Option* error_rate_option = nullptr;
  CLI::Option* layout_option = nullptr;
  CLI::Option* bits_option = nullptr;
  CLI::Option* hashes_option = nullptr;
  CLI::Option* partition_option = nullptr;
};

void add_filter_path_option(CLI::App& command, std::string& path);
void add_sizing_options(CLI::App& command, SizingOptions& options);

// The parameters the options ask for. Throws InvalidArgument for bad values.
[[nodiscard]] FilterParams requested_params(const SizingOptions& options);

// Opens the filter for writing. A missing filter is created from the options when
// `create_if_missing`; an existing one must match any sizing option the user gave
// (FilterExists otherwise: "created with other parameters").
[[nodiscard]] Filter open_for_writing(const std::string& path, const SizingOptions& options,
                                      bool create_if_missing);
[[nodiscard]] Filter open_for_reading(const std::string& path);

// "64MiB", "512M", "1GiB", "4096" -> bytes. Throws InvalidArgument.
[[nodiscard]] std::uint64_t parse_size(const std::string& text);

}  // namespace redbloom::cli
