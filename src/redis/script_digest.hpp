// The name Redis gives a Lua script for EVALSHA: the SHA1 of its text, in lowercase hex. Worked
// out by the client, so that a command can name a script before any server has loaded it.
#pragma once

#include <string>
#include <string_view>

namespace redbloom::redis {

// Throws std::runtime_error if OpenSSL cannot compute it.
[[nodiscard]] std::string script_sha1_of(std::string_view text);

}  // namespace redbloom::redis
