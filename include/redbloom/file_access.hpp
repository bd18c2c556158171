// How a process uses a filter file: what Filter::open and the file stores share, in a header
// of its own so that the stores need not see the Filter class.
#pragma once

namespace redbloom {

enum class FileAccess {
  read_only,
  // A shared writer: each batch takes the writers' lock (two fcntl calls), which a batch of
  // ~1000 items makes negligible and a loop of single add() calls pays each time.
  read_write,
  // The sole writer while open: takes the writers' lock at open (waiting for other writers) and
  // holds it until closed, so writes need no per-call lock. Readers are not affected.
  exclusive_write,
};

}  // namespace redbloom
