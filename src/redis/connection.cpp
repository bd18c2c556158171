#include "connection.hpp"

#include <pthread.h>
#include <sys/time.h>

#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <ctime>

#include "redbloom/error.hpp"

namespace redbloom::redis {
namespace {

timeval to_timeval(std::chrono::milliseconds ms) {
  timeval tv{};
  tv.tv_sec = static_cast<time_t>(ms.count() / 1000);
  tv.tv_usec = static_cast<suseconds_t>((ms.count() % 1000) * 1000);
  return tv;
}

// hiredis sends with write(2), which raises SIGPIPE when the server has gone (a killed server
// whose socket this client still writes to); its default action kills the whole process. A
// library must not change the process's signal dispositions, so, as libpq does, the signal is
// blocked in this thread around the writes, and a SIGPIPE they raised is consumed before it is
// unblocked. The write itself fails with EPIPE, which is reported as a lost connection.
class SigpipeBlock {
 public:
  SigpipeBlock() {
    sigemptyset(&pipe_);
    sigaddset(&pipe_, SIGPIPE);
    sigset_t pending;
    sigemptyset(&pending);
    sigpending(&pending);
    // One that was already pending is someone else's, and stays.
    was_pending_ = sigismember(&pending, SIGPIPE) == 1;
    blocked_ = pthread_sigmask(SIG_BLOCK, &pipe_, &previous_) == 0;
  }
  ~SigpipeBlock() {
    if (!blocked_) return;
    const int saved_errno = errno;
    if (!was_pending_) {
      sigset_t pending;
      sigemptyset(&pending);
      sigpending(&pending);
      if (sigismember(&pending, SIGPIPE) == 1) {
        const timespec no_wait{};
        while (sigtimedwait(&pipe_, nullptr, &no_wait) < 0 && errno == EINTR) {
        }
      }
    }
    pthread_sigmask(SIG_SETMASK, &previous_, nullptr);
    errno = saved_errno;
  }
  SigpipeBlock(const SigpipeBlock&) = delete;
  SigpipeBlock& operator=(const SigpipeBlock&) = delete;

 private:
  sigset_t pipe_;
  sigset_t previous_;
  bool was_pending_ = false;
  bool blocked_ = false;
};

std::string seconds_text(std::chrono::milliseconds ms) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g s", static_cast<double>(ms.count()) / 1000);
  return buf;
}

}  // namespace

Connection::Connection(RedisEndpoint endpoint) : endpoint_(std::move(endpoint)) {
  connect();
}

Connection::~Connection() {
  drop();
}

void Connection::drop() noexcept {
  if (context_ != nullptr) redisFree(context_);
  context_ = nullptr;
  unsent_ = false;
}

std::string Connection::message(std::string_view operation, std::string_view what) const {
  return "redis " + endpoint_.describe() + ": " + std::string(operation) + ": " + std::string(what);
}

void Connection::fail(std::string_view operation, std::string_view what) const {
  throw StorageError(message(operation, what));
}

void Connection::connect() {
  drop();
  const timeval connect_tv = to_timeval(endpoint_.connect_timeout);
  redisContext* context =
      endpoint_.unix_path.empty()
          ? redisConnectWithTimeout(endpoint_.host.c_str(), endpoint_.port, connect_tv)
          : redisConnectUnixWithTimeout(endpoint_.unix_path.c_str(), connect_tv);
  if (context == nullptr) fail("connect", "out of memory");
  if (context->err != 0) {
    std::string why = context->errstr;
    redisFree(context);
    if (why.find("Resource temporarily unavailable") != std::string::npos ||
        why.find("timed out") != std::string::npos) {
      why = "timed out after " + seconds_text(endpoint_.connect_timeout);
    }
    fail("connect", why);
  }
  context_ = context;
  if (redisSetTimeout(context_, to_timeval(endpoint_.command_timeout)) != REDIS_OK) {
    drop();
    fail("connect", "cannot set the socket timeout");
  }
  // TCP only: on a unix socket the TCP keepalive options fail, and hiredis then marks the
  // context as failed, so every later command would fail with "Operation not supported".
  if (endpoint_.unix_path.empty() && redisEnableKeepAlive(context_) != REDIS_OK) {
    const std::string why = context_->errstr;
    drop();
    fail("connect", "cannot enable TCP keepalive: " + why);
  }
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
  if (context_ == nullptr) connect();
  const std::string_view text = commands.text();
  if (redisAppendFormattedCommand(context_, text.data(), text.size()) != REDIS_OK) {
    fail("send", "out of memory");
  }
  unsent_ = true;
}

void Connection::append(std::span<const std::string_view> args) {
  CommandBuffer buffer;
  buffer.command(args);
  append(buffer);
}

bool Connection::write_unsent() noexcept {
  SigpipeBlock guard;
  int done = 0;
  while (done == 0) {
    if (redisBufferWrite(context_, &done) != REDIS_OK) return false;
  }
  unsent_ = false;
  return true;
}

void Connection::send(std::string_view operation) {
  if (context_ == nullptr) fail(operation, "connection lost earlier; nothing pending");
  if (!write_unsent()) {
    const std::string why = context_->errstr;
    drop();
    fail(operation, "connection lost while sending (" + why + ")");
  }
}

Reply Connection::read(std::string_view operation) {
  if (context_ == nullptr) fail(operation, "connection lost earlier; nothing pending");
  // hiredis would write these inside redisGetReply, unguarded. A write error stays in the
  // context, and redisGetReply reports it once the replies that did arrive are read.
  if (unsent_) (void)write_unsent();
  void* raw = nullptr;
  if (redisGetReply(context_, &raw) != REDIS_OK || raw == nullptr) {
    std::string why = context_->errstr;
    const int err = context_->err;
    drop();
    if (err == REDIS_ERR_IO && (why.find("Resource temporarily unavailable") != std::string::npos ||
                                why.find("timed out") != std::string::npos)) {
      why = "timed out after " + seconds_text(endpoint_.command_timeout) +
            " (the server is stalled or overloaded; the command may or may not have run)";
    } else if (err == REDIS_ERR_EOF || why.empty()) {
      why = "connection closed by the server (" + (why.empty() ? "no reply" : why) + ")";
    } else {
      why = "connection lost (" + why + ")";
    }
    fail(operation, why);
  }
  return Reply(static_cast<redisReply*>(raw));
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
