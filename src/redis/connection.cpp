#include "connection.hpp"

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <mutex>

#include "redbloom/error.hpp"

namespace redbloom::redis {
namespace {

// Bytes read from the socket at a time: one TLS record is at most 16 KiB, and a larger read
// lets a big plain reply (a partition of a few MiB) arrive in fewer calls.
constexpr std::size_t kInputSize = 64 * 1024;

std::atomic<std::uint64_t> connections{0};
std::atomic<std::uint64_t> round_trips{0};
std::atomic<InsecureTlsWarning> g_insecure_tls_warning{nullptr};

void warn_unverified(const RedisEndpoint& endpoint) {
  static std::once_flag once;
  std::call_once(once, [&] {
    const std::string message =
        "TLS certificate verification is OFF for " + endpoint.describe() +
        " (tls_insecure_skip_verify): anyone on the network path can read and change this "
        "traffic; give the server's CA as tls_ca=PATH instead";
    if (const InsecureTlsWarning write = g_insecure_tls_warning.load()) {
      write(message);
    } else {
      std::fprintf(stderr, "redbloom: WARNING: %s\n", message.c_str());
    }
  });
}

}  // namespace

std::uint64_t connections_made() noexcept {
  return connections.load(std::memory_order_relaxed);
}

std::uint64_t round_trips_made() noexcept {
  return round_trips.load(std::memory_order_relaxed);
}

Connection::Connection(RedisEndpoint endpoint) : endpoint_(std::move(endpoint)) {
  connect();
}

Connection::~Connection() {
  drop();
}

void Connection::drop() noexcept {
  transport_.reset();
  reader_.reset();
  unsent_.clear();
  unsent_commands_ = 0;
  awaited_ = 0;
}

std::string Connection::message(std::string_view operation, std::string_view what) const {
  return "redis " + endpoint_.describe() + ": " + std::string(operation) + ": " + std::string(what);
}

void Connection::fail(std::string_view operation, std::string_view what) const {
  throw StorageError(message(operation, what));
}

void Connection::connect() {
  drop();
  if (endpoint_.tls && endpoint_.tls_insecure_skip_verify) warn_unverified(endpoint_);
  try {
    transport_ = std::make_unique<Transport>(endpoint_);
  } catch (const TransportError& e) {
    fail("connect", e.what());
  }
  reader_.reset(redisReaderCreate());
  if (reader_ == nullptr) {
    drop();
    fail("connect", "out of memory");
  }
  if (input_ == nullptr) input_ = std::make_unique<char[]>(kInputSize);
  replies_ = 0;
  connections.fetch_add(1, std::memory_order_relaxed);
  try {
    // A password left out of the URI comes from the environment, so it need not be on a
    // command line; a user named without one still logs in (a nopass user), never silently
    // runs as the default user.
    std::string password = endpoint_.password;
    if (const char* env = std::getenv("REDBLOOM_REDIS_PASSWORD");
        password.empty() && env != nullptr) {
      password = env;
    }
    if (!endpoint_.user.empty()) {
      run({"AUTH", endpoint_.user, password});
    } else if (!password.empty()) {
      run({"AUTH", password});
    }
    if (endpoint_.db != 0) run({"SELECT", std::to_string(endpoint_.db)});
  } catch (...) {
    // A refused AUTH or SELECT is an error reply, which leaves the socket open; the throwing
    // constructor never runs the destructor, so close it here.
    drop();
    throw;
  }
}

void Connection::append(const CommandBuffer& commands) {
  if (transport_ == nullptr) connect();
  unsent_.append(commands.text());
  unsent_commands_ += commands.commands();
}

void Connection::append(std::span<const std::string_view> args) {
  CommandBuffer buffer;
  buffer.command(args);
  append(buffer);
}

bool Connection::write_unsent(std::string& why) noexcept {
  try {
    if (awaited_ == 0) round_trips.fetch_add(1, std::memory_order_relaxed);
    awaited_ += unsent_commands_;
    unsent_commands_ = 0;
    transport_->write_all(unsent_);
    unsent_.clear();
    return true;
  } catch (const TransportError& e) {
    why = e.what();
    if (why.empty()) why = "connection closed by the server";
  } catch (const std::exception& e) {
    why = e.what();
  }
  return false;
}

void Connection::send(std::string_view operation) {
  if (transport_ == nullptr) fail(operation, "connection lost earlier; nothing pending");
  if (unsent_.empty()) return;
  std::string why;
  if (!write_unsent(why)) {
    drop();
    fail(operation, "connection lost while sending (" + why + ")");
  }
}

std::string Connection::lost(const TransportError& error) const {
  const std::string what = error.what();
  // A server that takes TLS only closes a plain connection at once.
  const std::string hint = replies_ == 0 && !endpoint_.tls
                               ? "; if the server takes TLS connections only, use rediss://"
                               : "";
  switch (error.kind()) {
    case TransportError::Kind::timeout:
      return what + " (the server is stalled or overloaded; the command may or may not have run)";
    case TransportError::Kind::closed:
      return "connection closed by the server (" + (what.empty() ? "no reply" : what) + hint + ")";
    case TransportError::Kind::failed:
      break;
  }
  return what.starts_with("TLS") ? what : "connection lost (" + what + hint + ")";
}

Reply Connection::read(std::string_view operation) {
  if (transport_ == nullptr) fail(operation, "connection lost earlier; nothing pending");
  // A failed write is reported once the replies that did arrive are read: the commands
  // before it ran, and their answers are the caller's to see.
  std::string write_error;
  if (!unsent_.empty() && !write_unsent(write_error)) unsent_.clear();
  while (true) {
    void* raw = nullptr;
    if (redisReaderGetReply(reader_.get(), &raw) != REDIS_OK) {
      std::string why = "the server's reply is not RESP (";
      why += reader_->errstr;
      why += ')';
      if (replies_ == 0 && !endpoint_.tls) {
        why += "; if the server takes TLS connections only, use rediss://";
      }
      drop();
      fail(operation, why);
    }
    if (raw != nullptr) {
      ++replies_;
      if (awaited_ > 0) --awaited_;
      return Reply(static_cast<redisReply*>(raw));
    }
    std::size_t got = 0;
    try {
      got = transport_->read_some(input_.get(), kInputSize);
    } catch (const TransportError& e) {
      // A TLS error read now (a server's alert) says more than the failed write did.
      const bool tls_error = std::string_view(e.what()).starts_with("TLS");
      const std::string why = write_error.empty() || tls_error
                                  ? lost(e)
                                  : "connection lost while sending (" + write_error + ")";
      drop();
      fail(operation, why);
    }
    if (redisReaderFeed(reader_.get(), input_.get(), got) != REDIS_OK) {
      drop();
      fail(operation, "out of memory");
    }
  }
}

Reply Connection::run(std::initializer_list<std::string_view> args) {
  append(args);
  const std::string_view operation = args.size() > 0 ? *args.begin() : std::string_view{"?"};
  Reply reply = read(operation);
  if (is_error(*reply)) fail(operation, text_of(*reply));
  return reply;
}

void Connection::expect(const redisReply& reply, int type, std::string_view operation) const {
  if (is_error(reply)) fail(operation, text_of(reply));
  if (reply.type != type) fail(operation, "unexpected reply type " + std::to_string(reply.type));
}

}  // namespace redbloom::redis

namespace redbloom {

void set_insecure_tls_warning(InsecureTlsWarning write) {
  redis::g_insecure_tls_warning.store(write);
}

}  // namespace redbloom
