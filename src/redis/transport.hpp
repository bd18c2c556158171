// The bytes to and from one Redis server: a blocking TCP or unix socket, and TLS over it for
// rediss:// (OpenSSL; Debian's hiredis has no TLS of its own). Connection (connection.hpp)
// speaks RESP over it.
//
// Every failure throws TransportError saying what failed in the user's words (a refused
// connection, a timeout, a certificate that does not verify and why); the caller adds the
// server and the operation.
#pragma once

#include <cstddef>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>

#include "redbloom/redis_endpoint.hpp"

struct ssl_st;

namespace redbloom::redis {

class TransportError : public std::runtime_error {
 public:
  enum class Kind { failed, timeout, closed };
  TransportError(Kind kind, const std::string& what) : std::runtime_error(what), kind_(kind) {}
  [[nodiscard]] Kind kind() const noexcept { return kind_; }

 private:
  Kind kind_;
};

class TlsContext;

class Transport {
 public:
  // Connects (and, for TLS, completes the handshake) within endpoint.connect_timeout; later
  // reads and writes time out after endpoint.command_timeout.
  explicit Transport(const RedisEndpoint& endpoint);
  ~Transport();
  Transport(const Transport&) = delete;
  Transport& operator=(const Transport&) = delete;

  // Writes all of `data`. SIGPIPE never reaches the process: a server that has gone is a
  // TransportError (closed).
  void write_all(std::string_view data);
  // Reads at least one byte into `buffer`; a server that closed the connection throws
  // TransportError (closed).
  [[nodiscard]] std::size_t read_some(char* buffer, std::size_t size);
  [[nodiscard]] bool is_tls() const noexcept { return ssl_ != nullptr; }

 private:
  void open_socket(const RedisEndpoint& endpoint);
  void handshake(const RedisEndpoint& endpoint);
  void close() noexcept;
  // The reason of a TLS alert the server sent before closing, read after a failed write;
  // "" if there is none.
  [[nodiscard]] std::string pending_alert() noexcept;

  int fd_ = -1;
  ssl_st* ssl_ = nullptr;
  std::shared_ptr<TlsContext> tls_;
  std::string seconds_;  // command_timeout, for messages
};

}  // namespace redbloom::redis
