// One blocking connection with pipelining (over transport.hpp: TCP, unix socket or TLS, with
// hiredis's reply parser), and the RESP encoder the hot paths use.
// Internal to the library: public headers never include hiredis.
//
// Every failure throws StorageError naming the server and the operation. An I/O failure or a
// timeout leaves the socket in an unknown state (replies may still be on their way), so the
// connection is dropped and the next command reconnects; the replies that were pending are lost
// and the caller reports what it knows was committed.
#pragma once

#include <hiredis/hiredis.h>

#include <cstdint>
#include <initializer_list>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "redbloom/redis_endpoint.hpp"
#include "transport.hpp"

namespace redbloom::redis {

struct ReplyDeleter {
  void operator()(redisReply* reply) const noexcept { freeReplyObject(reply); }
};
using Reply = std::unique_ptr<redisReply, ReplyDeleter>;

// Builds RESP arrays of bulk strings ("*3\r\n$3\r\nGET\r\n...") straight into one buffer:
// formatting 28,000 BITFIELD arguments through hiredis's printf-style API costs more than the
// hashing of the 1,000 items behind them.
class CommandBuffer {
 public:
  void begin(std::size_t arguments) {
    ++commands_;
    text_ += '*';
    append_decimal(arguments);
    text_ += "\r\n";
  }
  void arg(std::string_view value) {
    text_ += '$';
    append_decimal(value.size());
    text_ += "\r\n";
    text_.append(value);
    text_ += "\r\n";
  }
  void arg(std::uint64_t value) {
    char digits[20];
    const std::size_t n = to_decimal(value, digits);
    text_ += '$';
    append_decimal(n);
    text_ += "\r\n";
    text_.append(digits, n);
    text_ += "\r\n";
  }
  void command(std::span<const std::string_view> args) {
    begin(args.size());
    for (std::string_view a : args) arg(a);
  }
  void command(std::initializer_list<std::string_view> args) {
    command(std::span<const std::string_view>(args.begin(), args.size()));
  }
  // `count` whole commands already encoded (by another CommandBuffer).
  void append_raw(std::string_view commands, std::size_t count) {
    text_.append(commands);
    commands_ += count;
  }
  [[nodiscard]] std::string_view text() const noexcept { return text_; }
  [[nodiscard]] std::size_t commands() const noexcept { return commands_; }
  [[nodiscard]] bool empty() const noexcept { return text_.empty(); }
  void clear() noexcept {
    text_.clear();
    commands_ = 0;
  }

 private:
  static std::size_t to_decimal(std::uint64_t value, char* out) noexcept {
    char reversed[20];
    std::size_t n = 0;
    do {
      reversed[n++] = static_cast<char>('0' + value % 10);
      value /= 10;
    } while (value != 0);
    for (std::size_t i = 0; i < n; ++i) out[i] = reversed[n - 1 - i];
    return n;
  }
  void append_decimal(std::uint64_t value) {
    char digits[20];
    text_.append(digits, to_decimal(value, digits));
  }
  std::string text_;
  std::size_t commands_ = 0;
};

// Connections this process made, and its round trips: writes to a connection with no reply
// outstanding (a pipeline is one). For tests that check what opening a filter costs.
[[nodiscard]] std::uint64_t connections_made() noexcept;
[[nodiscard]] std::uint64_t round_trips_made() noexcept;

class Connection {
 public:
  explicit Connection(RedisEndpoint endpoint);
  ~Connection();
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  [[nodiscard]] const RedisEndpoint& endpoint() const noexcept { return endpoint_; }

  // Queues commands (sent when the first reply is read). `commands` holds whole RESP commands.
  void append(const CommandBuffer& commands);
  void append(std::span<const std::string_view> args);
  void append(std::initializer_list<std::string_view> args) {
    append(std::span<const std::string_view>(args.begin(), args.size()));
  }
  // Writes the queued commands to the socket now, so the server starts on them while the
  // caller prepares the next ones (read() writes what is still queued, too).
  void send(std::string_view operation);
  // The next reply, in order. Error replies are returned (check with is_error); I/O failures
  // and timeouts throw. `operation` names the command in messages.
  [[nodiscard]] Reply read(std::string_view operation);
  // append + read, and an error reply throws too.
  Reply run(std::initializer_list<std::string_view> args);

  // Closes the socket, discarding any pending replies; the next command reconnects. Used when
  // an exception leaves a pipeline half read.
  void reset() noexcept { drop(); }

  // "redis 127.0.0.1:6379: <operation>: <what>".
  [[nodiscard]] std::string message(std::string_view operation, std::string_view what) const;
  [[noreturn]] void fail(std::string_view operation, std::string_view what) const;
  // Throws StorageError if the reply is an error reply or not of `type`.
  void expect(const redisReply& reply, int type, std::string_view operation) const;

 private:
  void connect();
  void drop() noexcept;
  // Writes the queued commands; false (and why in `why`) on failure.
  bool write_unsent(std::string& why) noexcept;
  // The message for a transport failure while `operation` waited for a reply.
  [[nodiscard]] std::string lost(const TransportError& error) const;

  struct ReaderDeleter {
    void operator()(redisReader* reader) const noexcept { redisReaderFree(reader); }
  };

  RedisEndpoint endpoint_;
  std::unique_ptr<Transport> transport_;
  std::unique_ptr<redisReader, ReaderDeleter> reader_;
  std::string unsent_;  // appended commands not yet written to the socket
  std::size_t unsent_commands_ = 0;
  std::size_t awaited_ = 0;  // replies of written commands not read yet
  std::unique_ptr<char[]> input_;
  std::size_t replies_ = 0;  // replies read since the connection was made
};

[[nodiscard]] inline bool is_error(const redisReply& reply) noexcept {
  return reply.type == REDIS_REPLY_ERROR;
}
[[nodiscard]] inline std::string_view text_of(const redisReply& reply) noexcept {
  return reply.str == nullptr ? std::string_view{} : std::string_view(reply.str, reply.len);
}

// The replies of one pipeline unit, in the order of its commands.
using Replies = std::span<const redisReply* const>;

// Pipeline units (commands or groups of commands) in flight at once.
inline constexpr std::size_t kPipelineWindow = 8;

// Sends `units` pipeline units, at most kPipelineWindow in flight. make(i, buffer) writes unit i's
// commands into the buffer and returns how many it wrote; on_unit(i, replies) sees unit i's
// replies together, units in order. An exception (an I/O error, or one thrown by on_unit)
// drops the connection, since replies may still be pending on it.
template <class Make, class OnUnit>
void pipeline(Connection& connection, std::size_t units, std::string_view operation, Make&& make,
              OnUnit&& on_unit) {
  std::vector<std::size_t> replies_of(std::min(units, kPipelineWindow));
  CommandBuffer buffer;
  std::vector<Reply> owned;
  std::vector<const redisReply*> replies;
  std::size_t sent = 0;
  try {
    for (std::size_t done = 0; done < units; ++done) {
      while (sent < units && sent - done < kPipelineWindow) {
        buffer.clear();
        replies_of[sent % kPipelineWindow] = make(sent, buffer);
        if (!buffer.empty()) {
          connection.append(buffer);
          connection.send(operation);
        }
        ++sent;
      }
      owned.clear();
      replies.clear();
      for (std::size_t r = 0; r < replies_of[done % kPipelineWindow]; ++r) {
        owned.push_back(connection.read(operation));
        replies.push_back(owned.back().get());
      }
      on_unit(done, Replies(replies));
    }
  } catch (...) {
    connection.reset();
    throw;
  }
}

}  // namespace redbloom::redis
