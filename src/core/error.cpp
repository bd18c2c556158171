#include "redbloom/error.hpp"

#include <cerrno>
#include <cstring>

namespace redbloom {

std::string errno_message(const std::string& what) {
  const int err = errno;
  return what + ": " + std::strerror(err);
}

}  // namespace redbloom
