#include "redis_bench_support.hpp"

#include <sys/resource.h>

#include <cctype>
#include <charconv>
#include <cstdio>
#include <stdexcept>

#include "core/layout.hpp"

namespace redbloom_bench {

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// ---------------------------------------------------------------------------------------------
// Items.

Items::Items(const std::vector<std::uint64_t>& ids) {
  std::vector<std::size_t> ends;
  ends.reserve(ids.size());
  text_.reserve(ids.size() * 32);
  for (std::uint64_t id : ids) {
    text_ += "s3://bucket/dir/file";
    text_ += std::to_string(id);
    text_ += ".pdf";
    ends.push_back(text_.size());
  }
  views_.reserve(ids.size());
  std::size_t begin = 0;
  for (std::size_t end : ends) {
    views_.emplace_back(text_.data() + begin, end - begin);
    begin = end;
  }
}

Items Items::range(std::uint64_t first, std::uint64_t count) {
  std::vector<std::uint64_t> ids(count);
  for (std::uint64_t i = 0; i < count; ++i) ids[i] = first + i;
  return Items(ids);
}

// ---------------------------------------------------------------------------------------------
// RESP and the connection.

void Resp::arg(std::uint64_t value) {
  char digits[24];
  const auto end = std::to_chars(digits, digits + sizeof digits, value).ptr;
  arg(std::string_view(digits, static_cast<std::size_t>(end - digits)));
}

void Resp::number(std::uint64_t value) {
  char digits[24];
  const auto end = std::to_chars(digits, digits + sizeof digits, value).ptr;
  put(digits, static_cast<std::size_t>(end - digits));
  put("\r\n", 2);
}

namespace {

timeval to_timeval(std::chrono::milliseconds ms) {
  timeval tv{};
  tv.tv_sec = static_cast<decltype(tv.tv_sec)>(ms.count() / 1000);
  tv.tv_usec = static_cast<decltype(tv.tv_usec)>((ms.count() % 1000) * 1000);
  return tv;
}

}  // namespace

RawConnection::RawConnection(const redbloom::RedisEndpoint& endpoint)
    : where_(endpoint.describe()) {
  const timeval connect = to_timeval(endpoint.connect_timeout);
  context_ = endpoint.unix_path.empty()
                 ? redisConnectWithTimeout(endpoint.host.c_str(), endpoint.port, connect)
                 : redisConnectUnixWithTimeout(endpoint.unix_path.c_str(), connect);
  if (context_ == nullptr || context_->err != 0) {
    const std::string what = context_ != nullptr ? context_->errstr : "out of memory";
    if (context_ != nullptr) redisFree(context_);
    throw std::runtime_error("cannot connect to redis " + where_ + ": " + what);
  }
  redisSetTimeout(context_, to_timeval(endpoint.command_timeout));
  if (!endpoint.password.empty()) {
    if (endpoint.user.empty()) {
      run({"AUTH", endpoint.password});
    } else {
      run({"AUTH", endpoint.user, endpoint.password});
    }
  }
  if (endpoint.db != 0) run({"SELECT", std::to_string(endpoint.db)});
}

RawConnection::~RawConnection() {
  redisFree(context_);
}

Reply RawConnection::run(std::initializer_list<std::string_view> args) {
  std::vector<const char*> argv;
  std::vector<std::size_t> lengths;
  for (std::string_view a : args) {
    argv.push_back(a.data());
    lengths.push_back(a.size());
  }
  Reply reply(static_cast<redisReply*>(
      redisCommandArgv(context_, static_cast<int>(argv.size()), argv.data(), lengths.data())));
  if (!reply) fail(*args.begin(), context_->errstr);
  if (reply->type == REDIS_REPLY_ERROR) fail(*args.begin(), std::string(reply->str, reply->len));
  return reply;
}

void RawConnection::append(const Resp& commands) {
  if (redisAppendFormattedCommand(context_, commands.text().data(), commands.text().size()) !=
      REDIS_OK) {
    fail("append", context_->errstr);
  }
}

Reply RawConnection::read(std::string_view operation) {
  void* raw = nullptr;
  if (redisGetReply(context_, &raw) != REDIS_OK) fail(operation, context_->errstr);
  Reply reply(static_cast<redisReply*>(raw));
  if (reply->type == REDIS_REPLY_ERROR) fail(operation, std::string(reply->str, reply->len));
  return reply;
}

std::int64_t RawConnection::read_integer(std::string_view operation) {
  Reply reply = read(operation);
  if (reply->type != REDIS_REPLY_INTEGER) fail(operation, "not an integer reply");
  return reply->integer;
}

void RawConnection::fail(std::string_view operation, const std::string& what) const {
  throw std::runtime_error("redis " + where_ + ": " + std::string(operation) + ": " + what);
}

std::uint64_t memory_usage(RawConnection& raw, const std::string& key) {
  Reply reply = raw.run({"MEMORY", "USAGE", key, "SAMPLES", "0"});
  return reply->type == REDIS_REPLY_INTEGER ? static_cast<std::uint64_t>(reply->integer) : 0;
}

std::string server_version(RawConnection& raw) {
  const Reply server = raw.run({"INFO", "server"});
  const std::string info(server->str, server->len);
  const auto at = info.find("redis_version:");
  return at == std::string::npos ? "?" : info.substr(at + 14, info.find("\r\n", at) - at - 14);
}

// ---------------------------------------------------------------------------------------------
// The hand-written filter and the bits.

void push_seed_probes(Resp& resp, const redbloom::FilterParams& params,
                      const std::vector<std::string>& keys, std::string_view item, bool set) {
  const redbloom::ItemHash h = redbloom::hash_item(item);
  const std::string& key = keys[redbloom::layout::partition_of(h, params.partitions)];
  redbloom::layout::classic_probes(h, params.partition_bits, params.hashes, [&](std::uint64_t bit) {
    resp.begin(set ? 4 : 3);
    resp.arg(set ? std::string_view{"SETBIT"} : std::string_view{"GETBIT"});
    resp.arg(key);
    resp.arg(bit);
    if (set) resp.arg(std::string_view{"1"});
  });
}

std::string read_seed_partition(RawConnection& raw, const std::string& key,
                                const redbloom::FilterParams& params) {
  Reply value = raw.run({"GET", key});
  std::string partition =
      value->type == REDIS_REPLY_STRING ? std::string(value->str, value->len) : std::string();
  partition.resize(params.partition_bytes(), '\0');
  return partition;
}

std::vector<std::string> read_partitions(const redbloom::Store& store,
                                         const redbloom::FilterParams& params) {
  std::vector<std::string> bits;
  for (std::uint64_t p = 0; p < params.partitions; ++p) {
    std::string partition(params.partition_bytes(), '\0');
    store.read_bytes(p, 0, {reinterpret_cast<std::uint8_t*>(partition.data()), partition.size()});
    bits.push_back(std::move(partition));
  }
  return bits;
}

redbloom::ItemHash digest_of(const std::vector<std::string>& partitions) {
  std::string all;
  for (const std::string& bits : partitions) all += bits;
  return redbloom::hash_item(all);
}

// ---------------------------------------------------------------------------------------------
// Medians and the table.

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  const std::size_t n = values.size();
  return n % 2 == 1 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
}

std::string rate(double per_second) {
  char buf[32];
  if (per_second >= 1e6) {
    std::snprintf(buf, sizeof buf, "%.2fM", per_second / 1e6);
  } else {
    std::snprintf(buf, sizeof buf, "%.0fk", per_second / 1e3);
  }
  return buf;
}

std::string fixed(double value, int digits) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.*f", digits, value);
  return buf;
}

double parse_count(const std::string& text) {
  std::size_t used = 0;
  const double value = std::stod(text, &used);
  if (used != text.size() || !(value >= 0)) throw std::invalid_argument(text);
  return value;
}

std::optional<int> parse_options(
    int argc, char** argv, Options& options,
    const std::function<bool(const std::string& key, const std::string& value)>& extra,
    int (*usage)(const char* message), const char* help) {
  try {
    for (int i = 1; i < argc; ++i) {
      const std::string arg = argv[i];
      const std::size_t eq = arg.find('=');
      const std::string key = arg.substr(0, eq);
      const std::string value = eq == std::string::npos ? "" : arg.substr(eq + 1);
      if (key == "--uri") {
        options.uri = value;
      } else if (key == "--n") {
        options.n = static_cast<std::uint64_t>(parse_count(value));
      } else if (key == "--p") {
        options.p = std::stod(value);
      } else if (key == "--reps") {
        options.reps = static_cast<int>(parse_count(value));
      } else if (key == "--only") {
        options.only = value;
      } else if (key == "--shuffle-seed") {
        options.shuffle_seed = static_cast<std::uint64_t>(parse_count(value));
      } else if (key == "--help" || key == "-h") {
        usage(help);
        return 0;
      } else if (!extra(key, value)) {
        return usage(("unknown argument " + arg).c_str());
      }
    }
  } catch (const std::exception&) {
    return usage("bad number in the arguments");
  }
  return std::nullopt;
}

ServerCounters read_counters(RawConnection& stats) {
  const Reply reply = stats.run({"INFO", "cpu", "commandstats"});
  const std::string_view text(reply->str, reply->len);
  ServerCounters counters;
  for (std::size_t pos = 0; pos < text.size();) {
    std::size_t end = text.find("\r\n", pos);
    if (end == std::string_view::npos) end = text.size();
    const std::string_view line = text.substr(pos, end - pos);
    pos = end + 2;
    const std::size_t colon = line.find(':');
    if (colon == std::string_view::npos) continue;
    if (line.starts_with("used_cpu_user:") || line.starts_with("used_cpu_sys:")) {
      counters.cpu_seconds += std::stod(std::string(line.substr(colon + 1)));
    } else if (line.starts_with("cmdstat_")) {
      // cmdstat_bitfield:calls=12,usec=...
      const std::size_t calls = line.find("calls=", colon);
      if (calls == std::string_view::npos) continue;
      std::uint64_t value = 0;
      std::from_chars(line.data() + calls + 6, line.data() + line.size(), value);
      counters.calls[std::string(line.substr(8, colon - 8))] = value;
    }
  }
  return counters;
}

double client_cpu_seconds() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  const auto seconds = [](const timeval& tv) { return double(tv.tv_sec) + 1e-6 * tv.tv_usec; };
  return seconds(usage.ru_utime) + seconds(usage.ru_stime);
}

Phase phase_between(const ServerCounters& before, const ServerCounters& after, double client_cpu,
                    double seconds, std::uint64_t items) {
  Phase phase;
  phase.items = items;
  phase.seconds = seconds;
  phase.server_cpu = after.cpu_seconds - before.cpu_seconds;
  phase.client_cpu = client_cpu;
  for (const auto& [name, calls] : after.calls) {
    const auto it = before.calls.find(name);
    const std::uint64_t delta = calls - (it == before.calls.end() ? 0 : it->second);
    if (delta != 0 && name != "info") phase.commands[name] = delta;
  }
  return phase;
}

std::string join_commands(const std::map<std::string, std::uint64_t>& commands) {
  std::string out;
  for (const auto& [name, calls] : commands) {
    if (!out.empty()) out += ", ";
    std::string upper = name;
    for (char& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    out += upper + " ×" + std::to_string(calls);
  }
  return out.empty() ? "(none)" : out;
}

}  // namespace redbloom_bench
