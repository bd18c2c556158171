// redbloom.so, the Redis module, against RedisBloom and against redbloom's stock-Redis path.
//
// Servers (each a redis-server of its own, all up at once; the cases run one at a time):
//   --blocked=URI     redbloom.so loaded with its defaults (LAYOUT blocked)
//   --classic=URI     redbloom.so loaded with LAYOUT classic
//   --stock=URI       no module
//   --redisbloom=URI  RedisBloom loaded (optional)
//   --rbformat=URI    redbloom.so loaded with DEFAULT_FORMAT redisbloom: BF.RESERVE makes
//                     RedisBloom-format filters (optional)
//   --rbformat-before=URI  as --rbformat, with another build of redbloom.so (an earlier one):
//                     a before/after comparison in the same run (optional)
//   --floor=URI       the no-op floor (bench/noop_module.cpp): BF.MADD / BF.MEXISTS that take
//                     the same arguments and only reply (optional)
// Cases, each on a fresh filter for n items "s3://bucket/dir/file<i>.pdf" (i < n) at error rate
// p, --batch items per command (1000), with each of --in-flight commands in flight (1 and 4):
//   BF.MADD / BF.MEXISTS on a `BF.RESERVE key p n` filter: redbloom.so blocked and classic,
//        redbloom.so's RedisBloom format, RedisBloom, and the no-op floor; hiredis with pipelined
//        raw RESP (redis_bench_support's Resp), a new command sent as each reply arrives.
//   RB.MADD / RB.MEXISTS on the same filter in redbloom.so blocked: each batch packed in one
//        argument (core/packed_items.hpp), the reply one byte per item.
//   redbloom's own filter (plain-string partitions, blocked, size_filter(n, p)) through its
//        public API (Filter::create on "redis://HOST:PORT#name", add_many / contains_many),
//        once on the server with redbloom.so, once on the stock server: the library picks its
//        commands (RB.PARTADD / RB.PARTEXISTS where it finds the module, BITFIELD / GETRANGE
//        otherwise; the table's notes list what each server ran). Its calls take --batch ×
//        in-flight items, and the library pipelines the commands of one call (so "4 in flight"
//        is one call of 4000 items).
// Each case: the n inserts, then n lookups of a 50/50 mix (even positions: present items i,
// i even; odd positions: absent items n + j), in batches of the same size. Per phase: items/s,
// the server's CPU (used_cpu_user + used_cpu_sys of INFO cpu, read on a second connection
// before and after) per item, this client's CPU (getrusage) per item, the commands the server
// ran (INFO commandstats). Checks: no false negatives, no refused insert; the FPR of the absent
// half is shown. Cases run --reps times, in a random order per repetition; tables show medians.
// Then, per filter kind, the memory of a `BF.RESERVE key p n` filter (BF.INFO Size, MEMORY
// USAGE) and of redbloom's own filter for n. With --redis-benchmark=PATH (and
// --latency-only to skip the rest): `redis-benchmark --csv BF.ADD key __rand_int__` with
// --latency-clients connections, --latency-requests commands and random ints below
// --latency-range, against a filter reserved for that range: rps, p50 and p99.
//
//   bench_module --blocked=URI --classic=URI --stock=URI [--redisbloom=URI] [--rbformat=URI]
//                [--floor=URI] [--n=1e6]
//                [--p=0.01] [--reps=3] [--batch=1000] [--in-flight=1,4] [--only=SUBSTRING]
//                [--shuffle-seed=N] [--redis-benchmark=PATH] [--latency-only]
//                [--latency-clients=50] [--latency-requests=200000] [--latency-range=1e6]
// Exits 1 if a check fails (a false negative, a refused insert), 2 on bad arguments.
#include <hiredis/hiredis.h>
#include <sys/resource.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "core/packed_items.hpp"
#include "redbloom/filter.hpp"
#include "redbloom/location.hpp"
#include "redbloom/params.hpp"
#include "redbloom/redis_endpoint.hpp"
#include "redis_bench_support.hpp"

namespace {

using redbloom::Filter;
using redbloom::FilterParams;
using redbloom::Layout;
using redbloom::Location;
using redbloom::RedisEndpoint;
using redbloom_bench::Clock;
using redbloom_bench::fixed;
using redbloom_bench::Items;
using redbloom_bench::median_of;
using redbloom_bench::rate;
using redbloom_bench::RawConnection;
using redbloom_bench::Reply;
using redbloom_bench::Resp;

constexpr std::string_view kFilterKey = "bench:module";
constexpr std::string_view kMemoryKey = "bench:module:memory";
constexpr std::string_view kLatencyKey = "bench:module:latency";
constexpr std::string_view kLibraryName = "bench:module:redbloom";

// The targets (ratios, not results).
constexpr double kRateTarget = 2.0;        // BF.MADD / BF.MEXISTS items/s, × RedisBloom's
constexpr double kCpuTarget = 0.5;         // server CPU per item, × RedisBloom's
constexpr double kModulePathTarget = 5.0;  // redbloom filter via the module, × via BITFIELD
constexpr double kMemoryTarget = 1.0;      // bytes per filter, × RedisBloom's
// redbloom.so's RedisBloom format against RedisBloom: the same work, at least as fast.
constexpr double kFormatRateTarget = 1.2;  // items/s, × RedisBloom's
constexpr double kFormatCpuTarget = 1.0;   // server CPU per item, × RedisBloom's

std::string format_number(double value) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.17g", value);
  return buf;
}

// ---------------------------------------------------------------------------------------------
// The servers.

enum class Server { blocked, classic, stock, redisbloom, redisbloom_format, format_before, floor };

struct ServerSide {
  std::string label;  // "redbloom.so blocked", "RedisBloom 2.4.23"
  RedisEndpoint endpoint;
  std::unique_ptr<RawConnection> stats;  // reads INFO, reserves and drops keys
};

// "RedisBloom 2.4.23" from MODULE LIST (ver 20423), or "RedisBloom" if it is not listed.
std::string redisbloom_label(RawConnection& raw) {
  const Reply modules = raw.run({"MODULE", "LIST"});
  for (std::size_t m = 0; m < modules->elements; ++m) {
    const redisReply* fields = modules->element[m];
    std::string name;
    long long version = -1;
    for (std::size_t f = 0; f + 1 < fields->elements; f += 2) {
      const std::string_view key(fields->element[f]->str, fields->element[f]->len);
      const redisReply* value = fields->element[f + 1];
      if (key == "name" && value->type == REDIS_REPLY_STRING) name.assign(value->str, value->len);
      if (key == "ver" && value->type == REDIS_REPLY_INTEGER) version = value->integer;
    }
    if (name == "bf" && version >= 0) {
      return "RedisBloom " + std::to_string(version / 10000) + "." +
             std::to_string(version / 100 % 100) + "." + std::to_string(version % 100);
    }
  }
  return "RedisBloom";
}

using redbloom_bench::join_commands;
using redbloom_bench::measure;
using redbloom_bench::Phase;

// ---------------------------------------------------------------------------------------------
// The workload and the cases.

struct Workload {
  std::uint64_t n = 1'000'000;
  double p = 0.01;
  std::size_t batch = 1000;
  std::unique_ptr<Items> present;            // ids 0 .. n-1
  std::unique_ptr<Items> absent;             // ids n .. n + n/2 - 1
  std::vector<std::string_view> mix;         // the n lookups
  std::vector<std::uint8_t> mix_is_present;  // 1 where mix holds a present item

  void build() {
    present = std::make_unique<Items>(Items::range(0, n));
    absent = std::make_unique<Items>(Items::range(n, n / 2));
    mix.resize(n);
    mix_is_present.resize(n);
    for (std::uint64_t i = 0; i < n; ++i) {
      mix_is_present[i] = i % 2 == 0 ? 1 : 0;
      mix[i] = i % 2 == 0 ? present->views()[i] : absent->views()[i / 2];
    }
  }
};

enum class Method { bf, packed, library };

struct Case {
  Method method;
  Server server;
  std::size_t in_flight;
  std::string server_label;

  [[nodiscard]] std::string variant() const {
    switch (method) {
      case Method::bf:
        return server_label + " BF.MADD / BF.MEXISTS";
      case Method::packed:
        return server_label + " RB.MADD / RB.MEXISTS (packed)";
      case Method::library:
        return server == Server::stock ? "redbloom filter, stock server (no module)"
                                       : "redbloom filter, server with redbloom.so";
    }
    return "?";
  }
  [[nodiscard]] std::string name() const {
    return variant() + " ×" + std::to_string(in_flight) + " in flight";
  }
};

struct Run {
  Phase insert, lookup;
  std::uint64_t false_negatives = 0;
  std::uint64_t false_positives = 0;
  std::uint64_t absent_lookups = 0;
  std::uint64_t refused = 0;  // inserts answered with an error (or RB.MADD's 2)
  long long links = -1;       // BF.INFO "Number of filters" after the inserts (-1: not asked)
};

// Sends `commands` commands over `connection`, at most `in_flight` unanswered at a time;
// make(c, resp) writes command c, take(c, reply) reads its reply.
template <class Make, class Take>
void pipelined(RawConnection& connection, std::size_t commands, std::size_t in_flight,
               std::string_view operation, Make&& make, Take&& take) {
  Resp resp;
  std::size_t sent = 0;
  for (std::size_t done = 0; done < commands; ++done) {
    for (; sent < commands && sent < done + in_flight; ++sent) {
      resp.clear();
      make(sent, resp);
      connection.append(resp);
    }
    take(done, connection.read(operation));
  }
}

[[noreturn]] void bad_reply(std::string_view what) {
  throw std::runtime_error("unexpected reply to " + std::string(what));
}

// The value after `label` in a flat BF.INFO reply, or -1.
long long info_field(const redisReply& info, std::string_view label) {
  for (std::size_t i = 0; i + 1 < info.elements; i += 2) {
    const redisReply* key = info.element[i];
    const redisReply* value = info.element[i + 1];
    if ((key->type == REDIS_REPLY_STATUS || key->type == REDIS_REPLY_STRING) &&
        std::string_view(key->str, key->len) == label && value->type == REDIS_REPLY_INTEGER) {
      return value->integer;
    }
  }
  return -1;
}

void check_lookups(const Workload& w, const std::vector<std::uint8_t>& present, Run& r) {
  for (std::uint64_t i = 0; i < w.n; ++i) {
    if (w.mix_is_present[i] != 0) {
      r.false_negatives += present[i] == 0 ? 1 : 0;
    } else {
      r.false_positives += present[i] != 0 ? 1 : 0;
      ++r.absent_lookups;
    }
  }
}

// BF.MADD / BF.MEXISTS (packed: RB.MADD / RB.MEXISTS) on a BF.RESERVE'd filter.
Run run_commands(const ServerSide& server, const Workload& w, std::size_t in_flight, bool packed) {
  RawConnection& stats = *server.stats;
  RawConnection connection(server.endpoint);
  stats.run({"UNLINK", kFilterKey});
  stats.run({"BF.RESERVE", kFilterKey, format_number(w.p), std::to_string(w.n)});
  const std::string_view add = packed ? "RB.MADD" : "BF.MADD";
  const std::string_view exists = packed ? "RB.MEXISTS" : "BF.MEXISTS";
  const std::size_t commands = (w.n + w.batch - 1) / w.batch;
  const auto batch_of = [&](std::span<const std::string_view> all, std::size_t c) {
    const std::size_t first = c * w.batch;
    return all.subspan(first, std::min(w.batch, all.size() - first));
  };
  std::string packed_items;
  const auto make = [&](std::string_view command, std::span<const std::string_view> items,
                        Resp& resp) {
    if (packed) {
      packed_items.clear();
      redbloom::packed::append_all(packed_items, items);
      resp.begin(3);
      resp.arg(command);
      resp.arg(kFilterKey);
      resp.arg(packed_items);
    } else {
      resp.begin(2 + items.size());
      resp.arg(command);
      resp.arg(kFilterKey);
      for (std::string_view item : items) resp.arg(item);
    }
  };
  // answer(i, value) for each item of the reply to a batch of `count`: BF.* replies are arrays
  // of integers (an error element for a refused insert: value 2), RB.* one byte per item.
  const auto read = [&](std::string_view command, const redisReply& reply, std::size_t count,
                        auto&& answer) {
    if (packed) {
      if (reply.type != REDIS_REPLY_STRING || reply.len != count) bad_reply(command);
      for (std::size_t i = 0; i < count; ++i) answer(i, static_cast<std::uint8_t>(reply.str[i]));
    } else {
      if (reply.type != REDIS_REPLY_ARRAY || reply.elements != count) bad_reply(command);
      for (std::size_t i = 0; i < count; ++i) {
        const redisReply* e = reply.element[i];
        answer(i, e->type == REDIS_REPLY_INTEGER ? static_cast<std::uint8_t>(e->integer != 0)
                                                 : std::uint8_t{2});
      }
    }
  };

  Run r;
  const auto present = w.present->views();
  const std::span<const std::string_view> mix(w.mix);
  r.insert = measure(stats, w.n, [&] {
    pipelined(
        connection, commands, in_flight, add,
        [&](std::size_t c, Resp& resp) { make(add, batch_of(present, c), resp); },
        [&](std::size_t c, Reply reply) {
          read(add, *reply, batch_of(present, c).size(),
               [&](std::size_t, std::uint8_t answer) { r.refused += answer > 1 ? 1 : 0; });
        });
  });
  std::vector<std::uint8_t> answers(w.n);
  r.lookup = measure(stats, w.n, [&] {
    pipelined(
        connection, commands, in_flight, exists,
        [&](std::size_t c, Resp& resp) { make(exists, batch_of(mix, c), resp); },
        [&](std::size_t c, Reply reply) {
          std::uint8_t* out = answers.data() + c * w.batch;
          read(exists, *reply, batch_of(mix, c).size(),
               [&](std::size_t i, std::uint8_t answer) { out[i] = answer == 1 ? 1 : 0; });
        });
  });
  check_lookups(w, answers, r);
  r.links = info_field(*stats.run({"BF.INFO", kFilterKey}), "Number of filters");
  stats.run({"UNLINK", kFilterKey});
  return r;
}

Location library_location(const ServerSide& server) {
  return Location::redis({server.endpoint}, std::string(kLibraryName));
}

// redbloom's own filter through its public API.
Run run_library(const ServerSide& server, const Workload& w, std::size_t in_flight) {
  const Location location = library_location(server);
  if (Filter::exists(location)) Filter::drop(location);
  const FilterParams params = redbloom::size_filter(double(w.n), w.p, Layout::blocked);
  Filter filter = Filter::create(location, params);
  const std::size_t step = w.batch * in_flight;
  Run r;
  std::vector<std::uint8_t> flags(w.n);
  const auto present = w.present->views();
  const std::span<const std::string_view> mix(w.mix);
  r.insert = measure(*server.stats, w.n, [&] {
    for (std::size_t first = 0; first < w.n; first += step) {
      const std::size_t count = std::min<std::size_t>(step, w.n - first);
      filter.add_many(present.subspan(first, count), std::span(flags).subspan(first, count));
    }
  });
  r.lookup = measure(*server.stats, w.n, [&] {
    for (std::size_t first = 0; first < w.n; first += step) {
      const std::size_t count = std::min<std::size_t>(step, w.n - first);
      filter.contains_many(mix.subspan(first, count), std::span(flags).subspan(first, count));
    }
  });
  check_lookups(w, flags, r);
  Filter::drop(location);
  return r;
}

// ---------------------------------------------------------------------------------------------
// Memory of one filter for n items.

struct MemoryRow {
  std::string label;
  long long info_size = -1;  // BF.INFO Size (-1: none)
  std::uint64_t memory_usage = 0;
  bool redisbloom = false;
};

MemoryRow reserved_memory(const ServerSide& server, const Workload& w) {
  RawConnection& stats = *server.stats;
  stats.run({"UNLINK", kMemoryKey});
  stats.run({"BF.RESERVE", kMemoryKey, format_number(w.p), std::to_string(w.n)});
  MemoryRow row;
  row.label = server.label + " BF.RESERVE key " + format_number(w.p) + " n";
  row.info_size = info_field(*stats.run({"BF.INFO", kMemoryKey}), "Size");
  row.memory_usage = redbloom_bench::memory_usage(stats, std::string(kMemoryKey));
  stats.run({"UNLINK", kMemoryKey});
  return row;
}

MemoryRow library_memory(const ServerSide& server, const Workload& w) {
  const Location location = library_location(server);
  if (Filter::exists(location)) Filter::drop(location);
  MemoryRow row;
  const FilterParams params = redbloom::size_filter(double(w.n), w.p, Layout::blocked);
  {
    Filter filter = Filter::create(location, params);
    row.memory_usage = filter.backend().storage_bytes();
  }
  row.label = "redbloom filter (" + redbloom::describe(params) + "), keys' MEMORY USAGE";
  Filter::drop(location);
  return row;
}

// ---------------------------------------------------------------------------------------------
// redis-benchmark.

struct Latency {
  double rps = 0, p50_ms = 0, p99_ms = 0;
};

struct LatencySettings {
  std::string tool;  // --redis-benchmark
  int clients = 50;
  std::uint64_t requests = 200'000;
  std::uint64_t range = 1'000'000;
};

std::vector<std::string> csv_fields(const std::string& line) {
  std::vector<std::string> fields(1);
  bool quoted = false;
  for (char c : line) {
    if (c == '"') {
      quoted = !quoted;
    } else if (c == ',' && !quoted) {
      fields.emplace_back();
    } else if (c != '\n' && c != '\r') {
      fields.back() += c;
    }
  }
  return fields;
}

Latency run_redis_benchmark(const ServerSide& server, const LatencySettings& s, double p) {
  RawConnection& stats = *server.stats;
  stats.run({"UNLINK", kLatencyKey});
  stats.run({"BF.RESERVE", kLatencyKey, format_number(p), std::to_string(s.range)});
  const std::string command = "'" + s.tool + "' -h " + server.endpoint.host + " -p " +
                              std::to_string(server.endpoint.port) + " -c " +
                              std::to_string(s.clients) + " -n " + std::to_string(s.requests) +
                              " -r " + std::to_string(s.range) + " --csv BF.ADD " +
                              std::string(kLatencyKey) + " __rand_int__";
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) throw std::runtime_error("cannot run " + command);
  std::vector<std::string> lines;
  char buf[4096];
  while (std::fgets(buf, sizeof buf, pipe) != nullptr) lines.emplace_back(buf);
  const int status = pclose(pipe);
  stats.run({"UNLINK", kLatencyKey});
  // "test","rps","avg_latency_ms","min_latency_ms","p50_latency_ms","p95_latency_ms",...
  std::vector<std::string> header, values;
  for (const std::string& line : lines) {
    const auto fields = csv_fields(line);
    if (!fields.empty() && fields[0] == "test") header = fields;
    if (!fields.empty() && fields[0].starts_with("BF.ADD")) values = fields;
  }
  if (status != 0 || header.empty() || values.size() != header.size()) {
    throw std::runtime_error(command + ": no CSV result (exit status " + std::to_string(status) +
                             ")");
  }
  const auto value = [&](std::string_view name) {
    for (std::size_t i = 0; i < header.size(); ++i) {
      if (header[i] == name) return std::stod(values[i]);
    }
    throw std::runtime_error(command + ": no column " + std::string(name));
  };
  return {value("rps"), value("p50_latency_ms"), value("p99_latency_ms")};
}

// ---------------------------------------------------------------------------------------------
// Tables.

// "met (2.410×, target ≥ 2×)" or "**missed** by 24% (1.520×, target ≥ 2×)".
std::string verdict(double ratio, double target, bool higher_is_better) {
  if (std::isnan(ratio)) return "— (not measured)";
  const std::string shown = fixed(ratio, ratio >= 10 ? 1 : 3) + "×, target " +
                            (higher_is_better ? "≥ " : "≤ ") + format_number(target) + "×";
  const bool met = higher_is_better ? ratio >= target : ratio <= target;
  if (met) return "met (" + shown + ")";
  const double percent = 100 * (higher_is_better ? 1 - ratio / target : ratio / target - 1);
  return "**missed** by " +
         fixed(percent, percent < 1    ? 2
                        : percent < 10 ? 1
                                       : 0) +
         "% (" + shown + ")";
}

std::vector<std::size_t> parse_list(const std::string& text) {
  std::vector<std::size_t> values;
  std::size_t begin = 0;
  while (begin <= text.size()) {
    std::size_t end = text.find(',', begin);
    if (end == std::string::npos) end = text.size();
    values.push_back(
        static_cast<std::size_t>(redbloom_bench::parse_count(text.substr(begin, end - begin))));
    if (values.back() == 0) throw std::invalid_argument(text);
    begin = end + 1;
  }
  return values;
}

int usage(const char* message) {
  std::fprintf(stderr,
               "bench_module: %s\nusage: bench_module --blocked=URI --classic=URI --stock=URI "
               "[--redisbloom=URI] [--rbformat=URI] [--rbformat-before=URI] [--floor=URI] "
               "[--n=1e6] [--p=0.01] "
               "[--reps=3] [--batch=1000] "
               "[--in-flight=1,4] [--only=SUBSTRING] [--shuffle-seed=N] "
               "[--redis-benchmark=PATH] [--latency-only] [--latency-clients=50] "
               "[--latency-requests=200000] [--latency-range=1e6]\n",
               message);
  return 2;
}

struct Medians {
  double insert_rate, lookup_rate, insert_cpu, lookup_cpu;
};

}  // namespace

int main(int argc, char** argv) {
  Workload w;
  redbloom_bench::Options options;
  options.n = w.n;
  options.p = w.p;
  std::map<Server, std::string> uris;
  std::vector<std::size_t> in_flight = {1, 4};
  LatencySettings latency;
  bool latency_only = false;
  const auto extra = [&](const std::string& key, const std::string& value) {
    if (key == "--blocked") {
      uris[Server::blocked] = value;
    } else if (key == "--classic") {
      uris[Server::classic] = value;
    } else if (key == "--stock") {
      uris[Server::stock] = value;
    } else if (key == "--redisbloom") {
      uris[Server::redisbloom] = value;
    } else if (key == "--rbformat") {
      uris[Server::redisbloom_format] = value;
    } else if (key == "--rbformat-before") {
      uris[Server::format_before] = value;
    } else if (key == "--floor") {
      uris[Server::floor] = value;
    } else if (key == "--batch") {
      w.batch = static_cast<std::size_t>(redbloom_bench::parse_count(value));
    } else if (key == "--in-flight") {
      in_flight = parse_list(value);
    } else if (key == "--redis-benchmark") {
      latency.tool = value;
    } else if (key == "--latency-only") {
      latency_only = true;
    } else if (key == "--latency-clients") {
      latency.clients = static_cast<int>(redbloom_bench::parse_count(value));
    } else if (key == "--latency-requests") {
      latency.requests = static_cast<std::uint64_t>(redbloom_bench::parse_count(value));
    } else if (key == "--latency-range") {
      latency.range = static_cast<std::uint64_t>(redbloom_bench::parse_count(value));
    } else {
      return false;
    }
    return true;
  };
  if (const auto stop = redbloom_bench::parse_options(argc, argv, options, extra, usage,
                                                      "redbloom.so benchmark")) {
    return *stop;
  }
  w.n = options.n;
  w.p = options.p;
  if (w.n < 2 || options.reps < 1 || w.batch < 1 || latency.clients < 1 || latency.requests < 1 ||
      latency.range < 1) {
    return usage("need --n >= 2, --reps >= 1, --batch >= 1 and positive latency settings");
  }
  for (Server s : {Server::blocked, Server::classic, Server::stock}) {
    if (!uris.contains(s)) return usage("--blocked, --classic and --stock are required");
  }
  if (latency_only && latency.tool.empty()) return usage("--latency-only needs --redis-benchmark");

  try {
    std::map<Server, ServerSide> servers;
    for (const auto& [kind, uri] : uris) {
      ServerSide side;
      side.endpoint = redbloom::parse_redis_uri(uri);
      side.stats = std::make_unique<RawConnection>(side.endpoint);
      switch (kind) {
        case Server::blocked:
          side.label = "redbloom.so blocked";
          break;
        case Server::classic:
          side.label = "redbloom.so classic";
          break;
        case Server::stock:
          side.label = "stock";
          break;
        case Server::redisbloom:
          side.label = redisbloom_label(*side.stats);
          break;
        case Server::redisbloom_format:
          side.label = "redbloom.so RedisBloom format";
          break;
        case Server::format_before:
          side.label = "redbloom.so RedisBloom format, before";
          break;
        case Server::floor:
          side.label = "no-op floor";
          break;
      }
      servers.emplace(kind, std::move(side));
    }
    const bool have_redisbloom = servers.contains(Server::redisbloom);
    const auto selected = [&](const std::string& name) {
      return name.find(options.only) != std::string::npos;
    };
    std::printf(
        "client: %u hardware threads, shared with the servers (client and server "
        "compete for the same cores)\n",
        std::thread::hardware_concurrency());
    for (const auto& [kind, side] : servers) {
      std::printf("server %s: redis %s at %s\n", side.label.c_str(),
                  redbloom_bench::server_version(*side.stats).c_str(),
                  side.endpoint.describe().c_str());
    }

    // -----------------------------------------------------------------------------------------
    if (!latency.tool.empty()) {
      std::vector<Server> kinds;
      for (Server s : {Server::blocked, Server::classic, Server::redisbloom}) {
        if (servers.contains(s) && selected(servers.at(s).label + " BF.ADD")) kinds.push_back(s);
      }
      if (!kinds.empty()) {
        std::printf(
            "\n### redis-benchmark: BF.ADD key __rand_int__, %d clients, %llu requests, "
            "-r %llu, on a `BF.RESERVE key %g %llu` filter (medians of %d, order shuffled per "
            "rep)\n\n",
            latency.clients, static_cast<unsigned long long>(latency.requests),
            static_cast<unsigned long long>(latency.range), w.p,
            static_cast<unsigned long long>(latency.range), options.reps);
        std::fflush(stdout);
        std::vector<std::vector<Latency>> runs(kinds.size());
        redbloom_bench::run_shuffled(
            kinds.size(), options.reps, options.shuffle_seed, [&](int rep, std::size_t k) {
              const Latency l = run_redis_benchmark(servers.at(kinds[k]), latency, w.p);
              std::fprintf(stderr, "rep %d/%d  %-28s %10.0f req/s  p50 %.3f ms  p99 %.3f ms\n",
                           rep + 1, options.reps, servers.at(kinds[k]).label.c_str(), l.rps,
                           l.p50_ms, l.p99_ms);
              runs[k].push_back(l);
            });
        std::printf("| module | requests/s | p50 ms | p99 ms |\n|---|---|---|---|\n");
        for (std::size_t k = 0; k < kinds.size(); ++k) {
          std::printf(
              "| %s | %s | %s | %s |\n", servers.at(kinds[k]).label.c_str(),
              rate(median_of(runs[k], [](const Latency& l) { return l.rps; })).c_str(),
              fixed(median_of(runs[k], [](const Latency& l) { return l.p50_ms; }), 3).c_str(),
              fixed(median_of(runs[k], [](const Latency& l) { return l.p99_ms; }), 3).c_str());
        }
        std::printf(
            "\nredis-benchmark (one process, %d connections) runs on the same cores as "
            "the server.\n",
            latency.clients);
      }
      if (latency_only) return 0;
    }

    // -----------------------------------------------------------------------------------------
    std::vector<Case> cases;
    for (std::size_t depth : in_flight) {
      const auto push = [&](Method method, Server server) {
        if (servers.contains(server)) {
          cases.push_back({method, server, depth, servers.at(server).label});
        }
      };
      push(Method::bf, Server::blocked);
      push(Method::bf, Server::classic);
      push(Method::packed, Server::blocked);
      push(Method::library, Server::blocked);
      push(Method::library, Server::stock);
      push(Method::bf, Server::redisbloom_format);
      push(Method::bf, Server::format_before);
      push(Method::bf, Server::redisbloom);
      push(Method::bf, Server::floor);
    }
    std::erase_if(cases, [&](const Case& c) { return !selected(c.name()); });

    w.build();
    const FilterParams library_params = redbloom::size_filter(double(w.n), w.p, Layout::blocked);
    std::printf(
        "\n## n = %llu items \"s3://bucket/dir/file<i>.pdf\", p = %g, %zu items per command\n\n"
        "Each case: n inserts into a fresh filter, then n lookups of a 50/50 mix of present and "
        "absent items, same batches; reps = %d (medians shown), case order shuffled per rep "
        "(seed %llu). redbloom filter: %s.\n\n",
        static_cast<unsigned long long>(w.n), w.p, w.batch, options.reps,
        static_cast<unsigned long long>(options.shuffle_seed),
        redbloom::describe(library_params).c_str());
    std::fflush(stdout);

    std::vector<std::vector<Run>> results(cases.size());
    redbloom_bench::run_shuffled(
        cases.size(), options.reps, options.shuffle_seed, [&](int rep, std::size_t c) {
          const Case& the_case = cases[c];
          const ServerSide& server = servers.at(the_case.server);
          const Run r =
              the_case.method == Method::library
                  ? run_library(server, w, the_case.in_flight)
                  : run_commands(server, w, the_case.in_flight, the_case.method == Method::packed);
          std::fprintf(stderr,
                       "rep %d/%d  %-66s insert %8s/s %6.3f µs  lookup %8s/s %6.3f µs (server "
                       "CPU per item)\n",
                       rep + 1, options.reps, the_case.name().c_str(),
                       rate(r.insert.items_per_second()).c_str(), r.insert.server_us(),
                       rate(r.lookup.items_per_second()).c_str(), r.lookup.server_us());
          results[c].push_back(r);
        });

    bool failed = false;
    std::vector<std::string> notes;
    std::vector<Medians> medians(cases.size());
    std::printf(
        "| variant | in flight | insert items/s | lookup items/s (50/50) | server CPU µs/item "
        "insert / lookup | client CPU µs/item insert / lookup | FPR of absent lookups |\n"
        "|---|---|---|---|---|---|---|\n");
    for (std::size_t c = 0; c < cases.size(); ++c) {
      const std::vector<Run>& runs = results[c];
      Medians& m = medians[c];
      m.insert_rate = median_of(runs, [](const Run& r) { return r.insert.items_per_second(); });
      m.lookup_rate = median_of(runs, [](const Run& r) { return r.lookup.items_per_second(); });
      m.insert_cpu = median_of(runs, [](const Run& r) { return r.insert.server_us(); });
      m.lookup_cpu = median_of(runs, [](const Run& r) { return r.lookup.server_us(); });
      const double insert_client =
          median_of(runs, [](const Run& r) { return r.insert.client_us(); });
      const double lookup_client =
          median_of(runs, [](const Run& r) { return r.lookup.client_us(); });
      std::uint64_t false_negatives = 0, false_positives = 0, trials = 0, refused = 0;
      long long links = 0;
      for (const Run& r : runs) {
        false_negatives += r.false_negatives;
        false_positives += r.false_positives;
        trials += r.absent_lookups;
        refused += r.refused;
        links = std::max(links, r.links);
      }
      // The floor answers 1 for every item: it has no false positive rate.
      const std::string fpr =
          cases[c].server == Server::floor
              ? std::string("—")
              : fixed(100 * double(false_positives) / double(std::max<std::uint64_t>(trials, 1)),
                      3) +
                    "%";
      std::printf("| %s | %zu | %s | %s | %s / %s | %s / %s | %s |\n", cases[c].variant().c_str(),
                  cases[c].in_flight, rate(m.insert_rate).c_str(), rate(m.lookup_rate).c_str(),
                  fixed(m.insert_cpu, 3).c_str(), fixed(m.lookup_cpu, 3).c_str(),
                  fixed(insert_client, 3).c_str(), fixed(lookup_client, 3).c_str(), fpr.c_str());
      if (false_negatives != 0 || refused != 0) {
        failed = true;
        notes.push_back("FAIL: " + cases[c].name() + ": " + std::to_string(false_negatives) +
                        " false negatives, " + std::to_string(refused) + " refused inserts");
      }
      if (links > 1) {
        notes.push_back("note: " + cases[c].name() + ": the filter grew to " +
                        std::to_string(links) + " links (BF.INFO Number of filters)");
      }
    }
    std::printf(
        "\nitems/s: wall clock of the phase, one client connection. Server CPU: used_cpu_user + "
        "used_cpu_sys of the whole redis-server (INFO cpu) over the phase, per item; client CPU: "
        "this process's (getrusage). FPR: over the n/2 absent lookups of all %d reps.\n",
        options.reps);
    std::printf(
        "\nCommands each server ran in the last rep (INFO commandstats), insert; lookup:\n");
    for (std::size_t c = 0; c < cases.size(); ++c) {
      const Run& last = results[c].back();
      std::printf("- %s: %s; %s\n", cases[c].name().c_str(),
                  join_commands(last.insert.commands).c_str(),
                  join_commands(last.lookup.commands).c_str());
    }

    // Memory.
    std::vector<MemoryRow> memory;
    for (Server s :
         {Server::blocked, Server::classic, Server::redisbloom_format, Server::redisbloom}) {
      if (servers.contains(s)) {
        MemoryRow row = reserved_memory(servers.at(s), w);
        row.redisbloom = s == Server::redisbloom;
        memory.push_back(row);
      }
    }
    memory.push_back(library_memory(servers.at(Server::stock), w));
    std::erase_if(memory, [&](const MemoryRow& row) { return !selected(row.label); });
    const auto redisbloom_memory = std::find_if(
        memory.begin(), memory.end(), [](const MemoryRow& row) { return row.redisbloom; });
    const double reference =
        redisbloom_memory == memory.end() ? NAN : double(redisbloom_memory->memory_usage);
    if (!memory.empty()) {
      std::printf("\n### Memory of one filter for n = %llu at p = %g\n\n",
                  static_cast<unsigned long long>(w.n), w.p);
      std::printf(
          "| filter | BF.INFO Size | MEMORY USAGE | bytes/item | bits/item | × RedisBloom "
          "(MEMORY USAGE) |\n|---|---|---|---|---|---|\n");
      for (const MemoryRow& row : memory) {
        const double bytes = double(row.memory_usage);
        std::printf("| %s | %s | %llu (%s) | %.3f | %.2f | %s |\n", row.label.c_str(),
                    row.info_size < 0 ? "—" : std::to_string(row.info_size).c_str(),
                    static_cast<unsigned long long>(row.memory_usage),
                    redbloom::format_bytes(bytes).c_str(), bytes / double(w.n),
                    8 * bytes / double(w.n),
                    std::isnan(reference) ? "—" : fixed(bytes / reference, 3).c_str());
      }
    }

    // Targets.
    const auto find = [&](Method method, Server server, std::size_t depth) -> const Medians* {
      for (std::size_t c = 0; c < cases.size(); ++c) {
        if (cases[c].method == method && cases[c].server == server && cases[c].in_flight == depth)
          return &medians[c];
      }
      return nullptr;
    };
    std::printf("\n### Targets (n = %llu)\n\n| target | in flight | verdict |\n|---|---|---|\n",
                static_cast<unsigned long long>(w.n));
    for (std::size_t depth : in_flight) {
      const Medians* rb = find(Method::bf, Server::redisbloom, depth);
      for (const auto& [method, server] :
           {std::pair{Method::bf, Server::blocked}, std::pair{Method::bf, Server::classic},
            std::pair{Method::packed, Server::blocked}}) {
        const Medians* ours = find(method, server, depth);
        if (ours == nullptr || !have_redisbloom) continue;
        const std::string who = Case{method, server, depth, servers.at(server).label}.variant() +
                                " vs " + servers.at(Server::redisbloom).label;
        const auto ratio = [&](double Medians::*field) {
          return rb == nullptr ? NAN : ours->*field / rb->*field;
        };
        std::printf("| %s: insert items/s | %zu | %s |\n", who.c_str(), depth,
                    verdict(ratio(&Medians::insert_rate), kRateTarget, true).c_str());
        std::printf("| %s: lookup items/s | %zu | %s |\n", who.c_str(), depth,
                    verdict(ratio(&Medians::lookup_rate), kRateTarget, true).c_str());
        std::printf("| %s: server CPU/item, insert | %zu | %s |\n", who.c_str(), depth,
                    verdict(ratio(&Medians::insert_cpu), kCpuTarget, false).c_str());
        std::printf("| %s: server CPU/item, lookup | %zu | %s |\n", who.c_str(), depth,
                    verdict(ratio(&Medians::lookup_cpu), kCpuTarget, false).c_str());
      }
      for (const Server format : {Server::redisbloom_format, Server::format_before}) {
        const Medians* same_format = find(Method::bf, format, depth);
        if (same_format != nullptr && rb != nullptr) {
          const std::string who = servers.at(format).label + " vs " +
                                  servers.at(Server::redisbloom).label +
                                  " (same filter, same bits)";
          std::printf(
              "| %s: insert items/s | %zu | %s |\n", who.c_str(), depth,
              verdict(same_format->insert_rate / rb->insert_rate, kFormatRateTarget, true).c_str());
          std::printf(
              "| %s: lookup items/s | %zu | %s |\n", who.c_str(), depth,
              verdict(same_format->lookup_rate / rb->lookup_rate, kFormatRateTarget, true).c_str());
          std::printf(
              "| %s: server CPU/item, insert | %zu | %s |\n", who.c_str(), depth,
              verdict(same_format->insert_cpu / rb->insert_cpu, kFormatCpuTarget, false).c_str());
          std::printf(
              "| %s: server CPU/item, lookup | %zu | %s |\n", who.c_str(), depth,
              verdict(same_format->lookup_cpu / rb->lookup_cpu, kFormatCpuTarget, false).c_str());
        }
      }
      // How far each implementation is above what any BF.* command costs the server.
      if (const Medians* floor = find(Method::bf, Server::floor, depth)) {
        for (Server s : {Server::blocked, Server::classic, Server::redisbloom_format,
                         Server::format_before, Server::redisbloom}) {
          const Medians* m = find(Method::bf, s, depth);
          if (m == nullptr) continue;
          std::printf(
              "| %s BF.MADD / BF.MEXISTS: server CPU/item above the no-op floor, insert / lookup "
              "| %zu | +%s / +%s µs (%s× / %s× the floor) |\n",
              servers.at(s).label.c_str(), depth,
              fixed(m->insert_cpu - floor->insert_cpu, 3).c_str(),
              fixed(m->lookup_cpu - floor->lookup_cpu, 3).c_str(),
              fixed(m->insert_cpu / floor->insert_cpu, 2).c_str(),
              fixed(m->lookup_cpu / floor->lookup_cpu, 2).c_str());
        }
      }
      const Medians* via_module = find(Method::library, Server::blocked, depth);
      const Medians* via_stock = find(Method::library, Server::stock, depth);
      if (via_module != nullptr && via_stock != nullptr) {
        std::printf(
            "| redbloom filter via redbloom.so vs via stock Redis: insert items/s | %zu "
            "| %s |\n",
            depth,
            verdict(via_module->insert_rate / via_stock->insert_rate, kModulePathTarget, true)
                .c_str());
        std::printf(
            "| redbloom filter via redbloom.so vs via stock Redis: lookup items/s | %zu "
            "| %s |\n",
            depth,
            verdict(via_module->lookup_rate / via_stock->lookup_rate, kModulePathTarget, true)
                .c_str());
      }
    }
    for (const MemoryRow& row : memory) {
      if (row.redisbloom || std::isnan(reference) || row.info_size < 0) continue;
      std::printf("| %s: MEMORY USAGE vs RedisBloom's | — | %s |\n", row.label.c_str(),
                  verdict(double(row.memory_usage) / reference, kMemoryTarget, false).c_str());
    }

    std::printf("\n");
    for (const std::string& note : notes) std::printf("%s\n", note.c_str());
    if (!failed) std::printf("checks passed: no false negatives, no refused inserts\n");
    return failed ? 1 : 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_module: %s\n", e.what());
    return 1;
  }
}
