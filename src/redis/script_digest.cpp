#include "redis/script_digest.hpp"

#include <openssl/evp.h>

#include <stdexcept>

namespace redbloom::redis {

std::string script_sha1_of(std::string_view text) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  if (EVP_Digest(text.data(), text.size(), digest, &length, EVP_sha1(), nullptr) != 1) {
    throw std::runtime_error("SHA1 of a Lua script failed (OpenSSL)");
  }
  static constexpr char kHex[] = "0123456789abcdef";
  std::string hex;
  hex.reserve(2 * length);
  for (unsigned int i = 0; i < length; ++i) {
    hex += kHex[digest[i] >> 4];
    hex += kHex[digest[i] & 15];
  }
  return hex;
}

}  // namespace redbloom::redis
