// The message of the redbloom::Error a call throws, for tests that check what errors say.
#pragma once

#include <string>

#include "redbloom/error.hpp"

namespace redbloom::testing {

// e.what() of the Error `fn` throws, or "(no error)".
template <class Fn>
std::string error_of(Fn&& fn) {
  try {
    fn();
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

}  // namespace redbloom::testing
