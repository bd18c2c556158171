// Errors thrown by redbloom. Every failure is an exception that says what failed and where;
// nothing is swallowed and no operation reports success it did not achieve.
#pragma once

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
