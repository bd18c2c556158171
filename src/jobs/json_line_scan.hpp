// The keys of a run of JSON Lines records read from simdjson's first stage (the positions of
// the structural characters and of each value's first byte, the UTF-8, closed quotes and no raw
// control characters in strings already checked), without building a document: the rest of
// the grammar checked token by token, and each record's key found on the way. It covers the
// records of everyday logs (integers of at most 18 digits, escapes other than surrogates, the
// key and the names on its path without escapes, nesting up to 63 deep) and says when a run
// holds anything else, which the document parser then takes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "redbloom/record_key.hpp"

namespace redbloom {

struct JsonLineRun {
  const char* base = nullptr;            // the run; readable up to 64 bytes past its end
  const std::size_t* starts = nullptr;   // record r starts at starts[r] and its newline is at
  std::size_t count = 0;                 // starts[r + 1] - 1; starts[count] is the run's end
  const std::uint32_t* index = nullptr;  // stage 1's structural indexes into base, ascending,
  std::uint32_t index_count = 0;         // with index[index_count] readable
};

// A record's key as the JSON gives it: 's' and a string's bytes, 'n' and an integer's digits
// (as written: "-0" stays so), 'b' and true or false. Views into the run.
struct JsonLineKey {
  char type = 0;
  std::string_view text;
};

// Each record's status and, when ok, its key at the path (members, outermost first; the first
// of two members with one name counts). False, with nothing to go by, when a record is outside
// what the scan covers or not one JSON object alone on its line: the caller parses the run.
bool scan_json_lines(const JsonLineRun& run, const std::vector<std::string>& path,
                     RecordKeyStatus* statuses, JsonLineKey* keys);

}  // namespace redbloom
