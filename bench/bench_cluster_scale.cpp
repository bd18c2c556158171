// Click-event dedup at full scale: a filter for 10^9 click events at m/n = 30, k = 8 (3.75 GB of
// bits, far past one 512 MB Redis string) spread over a Redis Cluster, loaded through the bulk path
// (deltas ORed into each partition with BITOP, the masters in parallel). Prints what it
// measured: the load rate, memory per master against the bits it holds, the false-positive
// rate on absent items against the formula, and false negatives on inserted items.
//
//   bench_cluster_scale --uri=redis+cluster://127.0.0.1:7000,... [--n=1e9] [--batch=1e8]
//                       [--absent=1e8] [--present=1e7] [--bits-per-item=30] [--hashes=8]
//                       [--partitions-per-master=3]
//
// scripts/bench-cluster.sh starts a private 3-master cluster and runs it.
#include <cmath>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "redbloom/filter.hpp"
#include "redbloom/sizing.hpp"
#include "redis/redis_store.hpp"
#include "redis_bench_support.hpp"

namespace {

using redbloom_bench::Clock;
using redbloom_bench::RawConnection;
using redbloom_bench::seconds_since;

// Items "click:<id>" for ids [first, first + count): one buffer and views into it.
class Clicks {
 public:
  Clicks(std::uint64_t first, std::uint64_t count, const char* prefix) {
    text_.reserve(count * 18);
    std::vector<std::size_t> ends;
    ends.reserve(count);
    for (std::uint64_t id = first; id < first + count; ++id) {
      text_ += prefix;
      text_ += std::to_string(id);
      ends.push_back(text_.size());
    }
    views_.reserve(count);
    std::size_t begin = 0;
    for (std::size_t end : ends) {
      views_.emplace_back(text_.data() + begin, end - begin);
      begin = end;
    }
  }
  [[nodiscard]] std::span<const std::string_view> views() const { return views_; }

 private:
  std::string text_;
  std::vector<std::string_view> views_;
};

std::uint64_t info_field(RawConnection& raw, const char* section, const std::string& field) {
  const redbloom_bench::Reply reply = raw.run({"INFO", section});
  const std::string text(reply->str, reply->len);
  const std::size_t at = text.find(field + ":");
  if (at == std::string::npos) return 0;
  return std::stoull(text.substr(at + field.size() + 1));
}

double option(int argc, char** argv, const std::string& name, double fallback) {
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg.starts_with("--" + name + "=")) {
      return redbloom_bench::parse_count(arg.substr(name.size() + 3));
    }
  }
  return fallback;
}

std::string text_option(int argc, char** argv, const std::string& name) {
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg.starts_with("--" + name + "=")) return arg.substr(name.size() + 3);
  }
  return "";
}

}  // namespace

int main(int argc, char** argv) try {
  const std::string uri = text_option(argc, argv, "uri");
  if (uri.empty()) {
    std::fprintf(stderr,
                 "usage: bench_cluster_scale --uri=redis+cluster://host:port,... "
                 "[--n=1e9] [--batch=1e8] [--absent=1e8] [--present=1e7]\n");
    return 2;
  }
  const auto n = static_cast<std::uint64_t>(option(argc, argv, "n", 1e9));
  const auto batch = static_cast<std::uint64_t>(option(argc, argv, "batch", 1e8));
  const auto absent = static_cast<std::uint64_t>(option(argc, argv, "absent", 1e8));
  const auto present = static_cast<std::uint64_t>(option(argc, argv, "present", 1e7));
  const double bits_per_item = option(argc, argv, "bits-per-item", 30);
  const auto hashes = static_cast<std::uint32_t>(option(argc, argv, "hashes", 8));
  const auto per_master =
      static_cast<std::uint64_t>(option(argc, argv, "partitions-per-master", 3));

  const redbloom::RedisEndpoint endpoint = redbloom::parse_redis_uri(uri);
  std::vector<std::unique_ptr<RawConnection>> nodes;
  for (const auto& [host, port] : endpoint.cluster_seeds) {
    redbloom::RedisEndpoint one;
    one.host = host;
    one.port = port;
    nodes.push_back(std::make_unique<RawConnection>(one));
  }
  // Masters by port, from CLUSTER SLOTS (slot ranges → the master's port).
  std::map<int, std::size_t> node_of_port;
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    node_of_port[endpoint.cluster_seeds[i].second] = i;
  }
  std::vector<std::pair<long long, int>> range_owner;  // first slot → master port
  {
    const redbloom_bench::Reply slots = nodes[0]->run({"CLUSTER", "SLOTS"});
    for (std::size_t i = 0; i < slots->elements; ++i) {
      const redisReply& range = *slots->element[i];
      range_owner.emplace_back(range.element[0]->integer,
                               static_cast<int>(range.element[2]->element[1]->integer));
    }
    std::sort(range_owner.begin(), range_owner.end());
  }
  const std::size_t masters = [&] {
    std::map<int, int> ports;
    for (const auto& r : range_owner) ports[r.second] = 1;
    return ports.size();
  }();

  // The click-event job's sizing: m = 30 n bits, k = 8, in masters * per_master partitions so that
  // every master holds the same share (each partition under Redis's 512 MiB).
  const auto bits = static_cast<std::uint64_t>(std::ceil(bits_per_item * static_cast<double>(n)));
  const std::uint64_t partitions = masters * per_master;
  const std::uint64_t max_partition_bytes =
      ((bits / 8 + partitions - 1) / partitions + 63) / 64 * 64;
  const redbloom::FilterParams params =
      redbloom::explicit_filter(bits, hashes, redbloom::Layout::classic, n, max_partition_bytes);
  const double theory = redbloom::classic_false_positive_rate(
      static_cast<double>(params.total_bits()), hashes, static_cast<double>(n));

  std::printf("filter: %s\n", redbloom::describe(params).c_str());
  std::printf("cluster: %zu masters (%s)\n", masters, endpoint.describe().c_str());
  std::vector<std::uint64_t> baseline;
  for (auto& node : nodes) baseline.push_back(info_field(*node, "memory", "used_memory"));

  if (redbloom::RedisStore::exists(endpoint, "clicks"))
    redbloom::RedisStore::drop(endpoint, "clicks");
  const auto create_start = Clock::now();
  redbloom::Filter filter = redbloom::Filter::create_redis(endpoint, "clicks", params);
  const double create_seconds = seconds_since(create_start);
  auto& store = dynamic_cast<redbloom::RedisStore&>(filter.store());

  // The load: batches of `batch` items, each through the bulk path.
  const auto load_start = Clock::now();
  double generate_seconds = 0;
  for (std::uint64_t first = 0; first < n; first += batch) {
    const auto generate_start = Clock::now();
    const Clicks items(first, std::min(batch, n - first), "click:");
    generate_seconds += seconds_since(generate_start);
    filter.load_many(items.views());
    const double elapsed = seconds_since(load_start);
    std::fprintf(stderr, "  loaded %llu of %llu in %.1f s (%.2fM items/s)\n",
                 static_cast<unsigned long long>(std::min(n, first + batch)),
                 static_cast<unsigned long long>(n), elapsed,
                 static_cast<double>(std::min(n, first + batch)) / elapsed / 1e6);
  }
  const double load_seconds = seconds_since(load_start);

  // Memory per master: used_memory growth against the partitions it holds.
  std::vector<std::uint64_t> held(nodes.size(), 0);
  for (std::uint64_t p = 0; p < params.partitions; ++p) {
    const auto slot = static_cast<long long>(store.partition_slot(p));
    int port = -1;
    for (const auto& [start, owner] : range_owner) {
      if (start <= slot) port = owner;
    }
    held[node_of_port.at(port)] += params.partition_bytes();
  }

  // Zero false negatives on inserted items, the false-positive rate on absent ones.
  const auto present_start = Clock::now();
  const Clicks inserted(0, std::min(present, n), "click:");
  const std::size_t found = filter.contains_many(inserted.views());
  const double present_seconds = seconds_since(present_start);
  const auto absent_start = Clock::now();
  std::uint64_t false_positives = 0;
  std::uint64_t false_positives_first_1e7 = 0;
  for (std::uint64_t first = 0; first < absent; first += batch) {
    const Clicks strangers(first, std::min(batch, absent - first), "absent:");
    std::vector<std::uint8_t> hits(strangers.views().size());
    false_positives += filter.contains_many(strangers.views(), hits);
    for (std::size_t i = 0; i < hits.size() && first + i < 10'000'000; ++i) {
      false_positives_first_1e7 += hits[i];
    }
  }
  const double absent_seconds = seconds_since(absent_start);
  const double measured = static_cast<double>(false_positives) / static_cast<double>(absent);
  // A count of rare events is Poisson: its standard deviation is the square root of the mean.
  const double sigma =
      std::sqrt(theory * static_cast<double>(absent)) / static_cast<double>(absent);

  std::printf("\n| measure | value |\n|---|---|\n");
  std::printf("| items loaded | %.3g in batches of %.3g |\n", static_cast<double>(n),
              static_cast<double>(batch));
  std::printf("| filter | m = %.4g bits (%s), k = %u, %llu partitions of %s |\n",
              static_cast<double>(params.total_bits()),
              redbloom::format_bytes(static_cast<double>(params.total_bytes())).c_str(), hashes,
              static_cast<unsigned long long>(params.partitions),
              redbloom::format_bytes(static_cast<double>(params.partition_bytes())).c_str());
  std::printf("| create (allocate every partition) | %.1f s |\n", create_seconds);
  std::printf("| load time | %.1f s (%.1f min), of which generating the item strings %.1f s |\n",
              load_seconds, load_seconds / 60, generate_seconds);
  std::printf("| load rate | %.2fM items/s |\n", static_cast<double>(n) / load_seconds / 1e6);
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    const std::uint64_t used = info_field(*nodes[i], "memory", "used_memory");
    const std::uint64_t grew = used > baseline[i] ? used - baseline[i] : 0;
    std::printf("| memory of master :%d | %s used for %s of bits (%.4f×) |\n",
                endpoint.cluster_seeds[i].second,
                redbloom::format_bytes(static_cast<double>(grew)).c_str(),
                redbloom::format_bytes(static_cast<double>(held[i])).c_str(),
                held[i] == 0 ? 0.0 : static_cast<double>(grew) / static_cast<double>(held[i]));
  }
  std::printf("| false negatives | %llu of %llu inserted items (lookup %.1f s) |\n",
              static_cast<unsigned long long>(inserted.views().size() - found),
              static_cast<unsigned long long>(inserted.views().size()), present_seconds);
  std::printf("| false positives, first 1e7 absent | %llu (%.3g; formula %.3g) |\n",
              static_cast<unsigned long long>(false_positives_first_1e7),
              static_cast<double>(false_positives_first_1e7) /
                  static_cast<double>(std::min<std::uint64_t>(absent, 10'000'000)),
              theory);
  std::printf(
      "| false-positive rate, %.3g absent | %.4g vs formula %.4g: %+.1f%% (±%.1f%% is "
      "one standard deviation) (lookup %.1f s) |\n",
      static_cast<double>(absent), measured, theory, (measured / theory - 1) * 100,
      sigma / theory * 100, absent_seconds);
  const redbloom::RedisRedirectCounts redirects = store.redirections();
  std::printf("| redirections met | %llu MOVED, %llu ASK, %llu waits |\n",
              static_cast<unsigned long long>(redirects.moved),
              static_cast<unsigned long long>(redirects.ask),
              static_cast<unsigned long long>(redirects.waits));
  redbloom::RedisStore::drop(endpoint, "clicks");
  return found == inserted.views().size() ? 0 : 1;
} catch (const std::exception& e) {
  std::fprintf(stderr, "bench_cluster_scale: %s\n", e.what());
  return 1;
}
