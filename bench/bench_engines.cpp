// Per-item adds with answers on one key, one way per run (scripts/bench-engines.sh runs them
// against servers with and without a Bloom engine and prints the medians):
//   --mode=raw      a plain hiredis client: BF.MADD KEY item... of --batch items, --window
//                   commands in flight, each written as soon as it is queued (the fastest a
//                   client of the server's engine does it);
//   --mode=library  redbloom's Filter::add_many on KEY, whichever kind it is: a key of the
//                   server's engine (BF.*), or redbloom's own filter (BITFIELD or the module).
// Prints one line: "items N new M seconds S items_per_second R".
//   bench_engines --uri=redis://127.0.0.1:6379 --key=K --mode=raw|library [--n=1e6]
//                 [--first=0] [--batch=1000] [--window=8] [--command=madd|insert]
#include <hiredis/hiredis.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "redbloom/filter.hpp"
#include "redbloom/location.hpp"
#include "redbloom/redis_endpoint.hpp"
#include "redis_bench_support.hpp"

namespace {

using redbloom_bench::Clock;
using redbloom_bench::Items;

// RESP for one command, written into one buffer (as a fast client does; hiredis's printf-style
// formatting would slow the raw client down, not the server). resize + memcpy: GCC 12 at -O3
// warns falsely on vector::insert into a cleared vector.
class Command {
 public:
  void clear() { size_ = 0; }
  void begin(std::size_t arguments) { header('*', arguments); }
  void arg(std::string_view value) {
    header('$', value.size());
    put(value.data(), value.size());
    put("\r\n", 2);
  }
  [[nodiscard]] const char* data() const { return text_.data(); }
  [[nodiscard]] std::size_t size() const { return size_; }

 private:
  void header(char kind, std::size_t number) {
    char digits[24];
    const int n = std::snprintf(digits, sizeof digits, "%c%zu\r\n", kind, number);
    put(digits, static_cast<std::size_t>(n));
  }
  void put(const char* data, std::size_t size) {
    if (size_ + size > text_.size()) text_.resize(2 * (size_ + size));
    std::memcpy(text_.data() + size_, data, size);
    size_ += size;
  }
  std::vector<char> text_;
  std::size_t size_ = 0;
};

struct Args {
  std::string uri;
  std::string key;
  std::string mode;
  std::uint64_t n = 1000000;
  std::uint64_t first = 0;
  std::size_t batch = 1000;
  std::size_t window = 8;
  bool insert = false;  // --command=insert: BF.INSERT KEY NOCREATE ITEMS item... (the library's)
};

[[noreturn]] void fail(const std::string& what) {
  std::fprintf(stderr, "bench_engines: %s\n", what.c_str());
  std::exit(1);
}

// Writes everything queued on the context, so the server starts on it at once.
void flush(redisContext* context) {
  int done = 0;
  while (done == 0) {
    if (redisBufferWrite(context, &done) != REDIS_OK)
      fail(std::string("write: ") + context->errstr);
  }
}

// BF.MADD over the items, `window` commands in flight; the count of items the server said new.
std::uint64_t raw_madd(const Args& args, std::span<const std::string_view> items) {
  const redbloom::RedisEndpoint endpoint = redbloom::parse_redis_uri(args.uri);
  redisContext* context = redisConnect(endpoint.host.c_str(), endpoint.port);
  if (context == nullptr || context->err != 0) fail("cannot connect to " + endpoint.describe());
  const std::size_t commands = (items.size() + args.batch - 1) / args.batch;
  Command resp;
  std::uint64_t fresh = 0;
  std::size_t sent = 0;
  for (std::size_t done = 0; done < commands; ++done) {
    while (sent < commands && sent - done < args.window) {
      const std::size_t begin = sent * args.batch;
      const std::size_t end = std::min(items.size(), begin + args.batch);
      resp.clear();
      if (args.insert) {
        resp.begin(4 + (end - begin));
        resp.arg(std::string_view("BF.INSERT"));
        resp.arg(std::string_view(args.key));
        resp.arg(std::string_view("NOCREATE"));
        resp.arg(std::string_view("ITEMS"));
      } else {
        resp.begin(2 + (end - begin));
        resp.arg(std::string_view("BF.MADD"));
        resp.arg(std::string_view(args.key));
      }
      for (std::size_t i = begin; i < end; ++i) resp.arg(items[i]);
      if (redisAppendFormattedCommand(context, resp.data(), resp.size()) != REDIS_OK) {
        fail("append");
      }
      flush(context);
      ++sent;
    }
    void* raw = nullptr;
    if (redisGetReply(context, &raw) != REDIS_OK) fail(std::string("read: ") + context->errstr);
    const auto* reply = static_cast<redisReply*>(raw);
    if (reply->type != REDIS_REPLY_ARRAY) fail("BF.MADD: " + std::string(reply->str, reply->len));
    for (std::size_t i = 0; i < reply->elements; ++i) {
      if (reply->element[i]->type != REDIS_REPLY_INTEGER) fail("BF.MADD: an item refused");
      fresh += reply->element[i]->integer == 1 ? 1 : 0;
    }
    freeReplyObject(raw);
  }
  redisFree(context);
  return fresh;
}

std::uint64_t library_add(redbloom::Filter& filter, std::span<const std::string_view> items) {
  std::vector<std::uint8_t> fresh(items.size());
  return filter.add_many(items, fresh);
}

}  // namespace

int main(int argc, char** argv) {
  Args args;
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    const auto value = [&](std::string_view name) -> const char* {
      return arg.starts_with(name) ? argv[i] + name.size() : nullptr;
    };
    if (const char* v = value("--uri=")) {
      args.uri = v;
    } else if (const char* v = value("--key=")) {
      args.key = v;
    } else if (const char* v = value("--mode=")) {
      args.mode = v;
    } else if (const char* v = value("--n=")) {
      args.n = static_cast<std::uint64_t>(std::strtod(v, nullptr));
    } else if (const char* v = value("--first=")) {
      args.first = static_cast<std::uint64_t>(std::strtod(v, nullptr));
    } else if (const char* v = value("--batch=")) {
      args.batch = static_cast<std::size_t>(std::strtoul(v, nullptr, 10));
    } else if (const char* v = value("--command=")) {
      args.insert = std::string_view(v) == "insert";
      if (!args.insert && std::string_view(v) != "madd") fail("--command is madd or insert");
    } else if (const char* v = value("--window=")) {
      args.window = static_cast<std::size_t>(std::strtoul(v, nullptr, 10));
    } else {
      fail("unknown argument " + std::string(arg));
    }
  }
  if (args.uri.empty() || args.key.empty() || (args.mode != "raw" && args.mode != "library") ||
      args.batch == 0 || args.window == 0 || args.n == 0) {
    fail(
        "usage: bench_engines --uri=URI --key=KEY --mode=raw|library [--n=1e6] [--first=0] "
        "[--batch=1000] [--window=8]");
  }
  try {
    const Items items = Items::range(args.first, args.n);
    // Opened (TYPE, BF.INFO) before the clock starts, as a client's connection is.
    std::optional<redbloom::Filter> filter;
    if (args.mode == "library") {
      filter.emplace(redbloom::Filter::open(redbloom::Location::parse(args.uri, args.key)));
    }
    const auto start = Clock::now();
    const std::uint64_t fresh =
        filter ? library_add(*filter, items.views()) : raw_madd(args, items.views());
    const double seconds = redbloom_bench::seconds_since(start);
    std::printf("items %llu new %llu seconds %.4f items_per_second %.0f\n",
                static_cast<unsigned long long>(items.size()),
                static_cast<unsigned long long>(fresh), seconds,
                static_cast<double>(items.size()) / seconds);
  } catch (const std::exception& e) {
    fail(e.what());
  }
  return 0;
}
