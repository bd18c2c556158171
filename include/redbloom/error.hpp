// Errors thrown by redbloom. Every failure is an exception that says what failed and where;
// nothing is swallowed and no operation reports success it did not achieve.
#pragma once

#include <cstddef>
#include <stdexcept>
#include <string>

namespace redbloom {

// Base of every redbloom error.
class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Bad parameters or input from the caller (a user error; the CLI exits 2).
class InvalidArgument : public Error {
 public:
  using Error::Error;
};

// The storage failed or holds something that is not a usable filter (the CLI exits 3).
class StorageError : public Error {
 public:
  using Error::Error;
};

// A stored filter that is truncated, corrupt, foreign or of an unknown version.
class FormatError : public StorageError {
 public:
  using StorageError::StorageError;
};

// A stored filter whose creation has not finished (or never will: its creator died).
class IncompleteFilter : public FormatError {
 public:
  using FormatError::FormatError;
};

// A batch write that failed part-way (a lost connection, a timeout, a server error). Items
// [0, committed()) of the call are in the filter, and their per-item answers, if asked for,
// were written; later items may or may not have been set. Adding them again is safe (setting
// bits is idempotent), though an item whose bits did land will then be reported as present.
class IncompleteWrite : public StorageError {
 public:
  IncompleteWrite(const std::string& what, std::size_t committed)
      : StorageError(what), committed_(committed) {}
  [[nodiscard]] std::size_t committed() const noexcept { return committed_; }

 private:
  std::size_t committed_;
};

// A growing or windowed filter needed a link past its byte limit (StreamOptions::max_bytes),
// its link count or Redis's 512 MiB string: items [0, committed()) were added, the rest not.
class CapacityExceeded : public IncompleteWrite {
 public:
  using IncompleteWrite::IncompleteWrite;
};

// The stored filter exists and differs from what was asked (created with other parameters),
// or exists where a new one was to be created.
class FilterExists : public InvalidArgument {
 public:
  using InvalidArgument::InvalidArgument;
};

// The named filter does not exist.
class NotFound : public InvalidArgument {
 public:
  using InvalidArgument::InvalidArgument;
};

// Formats the current errno as "what: strerror".
[[nodiscard]] std::string errno_message(const std::string& what);

}  // namespace redbloom
