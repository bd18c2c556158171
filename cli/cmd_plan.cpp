// plan: what a filter for n items at rate p costs, by the formulas in sizing.hpp; --table
// recomputes published sizing tables for click-log and crawler dedup (docs/sizing.md).
#include <cmath>
#include <cstdio>
#include <optional>
#include <string>

#include "commands.hpp"
#include "exit_codes.hpp"
#include "filter_options.hpp"
#include "redbloom/cuckoo.hpp"
#include "redbloom/error.hpp"
#include "redbloom/sizing.hpp"
#include "summary.hpp"

namespace redbloom::cli {
namespace {

struct PlanCommand {
  double capacity = 0;
  double error_rate = 0;
  std::string layout = "classic";
  std::string partition_size = "64MiB";
  std::string kind = "bloom";
  bool table = false;
  bool json = false;
  CLI::Option* capacity_option = nullptr;
};

// A cuckoo filter's table for n items at p, beside the Bloom layouts at the same rate and the
// bound log2(1/p) no filter beats.
void print_cuckoo_plan(const PlanCommand& cmd) {
  CuckooOptions options;
  options.capacity = static_cast<std::uint64_t>(std::ceil(cmd.capacity));
  options.error_rate = cmd.error_rate;
  const CuckooTableSize table = cuckoo_table_size(options);
  const double n = static_cast<double>(options.capacity);
  const double bits = 8.0 * static_cast<double>(table.bytes) / n;
  const FilterParams classic = size_filter(cmd.capacity, cmd.error_rate, Layout::classic);
  const FilterParams blocked = size_filter(cmd.capacity, cmd.error_rate, Layout::blocked);
  const double bound = std::log2(1 / cmd.error_rate);
  if (cmd.json) {
    std::printf(
        "{\"kind\": \"cuckoo\", \"items\": %s, \"target_rate\": %s, \"fingerprint_bits\": %u, "
        "\"buckets\": %llu, \"slots_per_bucket\": %u, \"bytes\": %llu, \"bits_per_item\": %s, "
        "\"rate_at_n\": %s, \"bound_bits_per_item\": %s, \"classic_bits_per_item\": %s, "
        "\"blocked_bits_per_item\": %s}\n",
        json_number(n).c_str(), json_number(cmd.error_rate).c_str(), table.fingerprint_bits,
        static_cast<unsigned long long>(table.buckets), table.slots_per_bucket,
        static_cast<unsigned long long>(table.bytes), json_number(bits).c_str(),
        json_number(table.rate_when_full).c_str(), json_number(bound).c_str(),
        json_number(double(classic.total_bits()) / n).c_str(),
        json_number(double(blocked.total_bits()) / n).c_str());
    return;
  }
  std::printf("kind              cuckoo (removes items)\n");
  std::printf("items (n)         %.0f\n", n);
  std::printf("target rate (p)   %g\n", cmd.error_rate);
  std::printf("fingerprints      %u bits, in %llu buckets of %u\n", table.fingerprint_bits,
              static_cast<unsigned long long>(table.buckets), table.slots_per_bucket);
  std::printf("memory            %s  (%.2f bits per item; no filter needs fewer than %.2f)\n",
              format_bytes(double(table.bytes)).c_str(), bits, bound);
  std::printf("rate at n         %.4g\n", table.rate_when_full);
  std::printf("Bloom instead     classic %.2f bits per item, blocked %.2f (neither can remove)\n",
              double(classic.total_bits()) / n, double(blocked.total_bits()) / n);
}

void print_plan(const PlanCommand& cmd) {
  if (cmd.kind == "cuckoo") {
    check_error_rate(cmd.error_rate);
    print_cuckoo_plan(cmd);
    return;
  }
  const auto layout = parse_layout(cmd.layout);
  if (!layout)
    throw InvalidArgument("unknown layout '" + cmd.layout + "' (use classic or blocked)");
  const std::uint64_t partition_bytes = parse_size(cmd.partition_size);
  check_error_rate(cmd.error_rate);
  const FilterParams p = size_filter(cmd.capacity, cmd.error_rate, *layout, partition_bytes);
  // A rate no filter builds as asked is shown as such (create refuses it without --force-rate).
  const bool unreached = rate_capped(p, cmd.error_rate);
  const FilterParams at_redis_limit =
      size_filter(cmd.capacity, cmd.error_rate, *layout, kRedisMaxStringBits / 8);
  const double n = static_cast<double>(p.capacity);
  const Layout other = p.layout == Layout::classic ? Layout::blocked : Layout::classic;
  std::optional<FilterParams> alt;
  std::string alt_error;
  try {
    alt = size_filter(cmd.capacity, cmd.error_rate, other, partition_bytes);
  } catch (const InvalidArgument& e) {
    alt_error = e.what();
  }
  if (cmd.json) {
    std::string alt_json = "null";
    if (alt) alt_json = "{" + params_json_members(*alt) + "}";
    std::printf(
        "{\"items\": %s, \"target_rate\": %s, %s, \"formula_bits\": %s, "
        "\"bits_per_item\": %s, \"partitions_at_redis_limit\": %llu, "
        "\"other_layout\": %s, \"target_reached\": %s}\n",
        json_number(n).c_str(), json_number(cmd.error_rate).c_str(), params_json_members(p).c_str(),
        p.layout == Layout::classic
            ? std::to_string(classic_bits_for(cmd.capacity, cmd.error_rate)).c_str()
            : "null",
        json_number(double(p.total_bits()) / n).c_str(),
        static_cast<unsigned long long>(at_redis_limit.partitions), alt_json.c_str(),
        unreached ? "false" : "true");
    return;
  }
  std::printf("layout            %s\n", std::string(to_string(p.layout)).c_str());
  std::printf("items (n)         %.0f\n", n);
  std::printf("target rate (p)   %g\n", cmd.error_rate);
  if (p.layout == Layout::classic) {
    std::printf("bits (m)          %llu by the formula; %llu allocated (%.2f bits per item)\n",
                static_cast<unsigned long long>(classic_bits_for(cmd.capacity, cmd.error_rate)),
                static_cast<unsigned long long>(p.total_bits()), double(p.total_bits()) / n);
  } else {
    std::printf("bits (m)          %llu (%.2f bits per item)\n",
                static_cast<unsigned long long>(p.total_bits()), double(p.total_bits()) / n);
  }
  std::printf("hashes (k)        %u\n", p.hashes);
  std::printf("memory            %s  (%llu bytes)\n", format_bytes(double(p.total_bytes())).c_str(),
              static_cast<unsigned long long>(p.total_bytes()));
  std::printf("rate at n         %.4g  (expected false positives per 1e6 absent queries: %.4g)\n",
              p.error_rate, expected_false_positives(p.error_rate, 1e6));
  if (unreached) {
    std::printf(
        "not the target    a filter uses at most %u hashes, too few for %g: it reaches "
        "%.2g (create builds it only with --force-rate; rates down to about %.2g are "
        "reached)\n",
        kMaxHashes, cmd.error_rate, p.error_rate, std::pow(0.5, kMaxHashes));
  }
  std::printf("partitions        %llu of %s (--partition-size %s); %llu at Redis's 512 MiB limit\n",
              static_cast<unsigned long long>(p.partitions),
              format_bytes(double(p.partition_bytes())).c_str(), cmd.partition_size.c_str(),
              static_cast<unsigned long long>(at_redis_limit.partitions));
  const std::string other_label = std::string(to_string(other)) + " instead";
  if (alt) {
    std::printf("%-17s %s, k=%u, %.2f bits per item (%s)\n", other_label.c_str(),
                format_bytes(double(alt->total_bytes())).c_str(), alt->hashes,
                double(alt->total_bits()) / n,
                other == Layout::blocked ? "one cache line per item: faster, a little larger"
                                         : "textbook layout: smallest");
  } else {
    std::printf("%-17s not possible: %s\n", other_label.c_str(), alt_error.c_str());
  }
}

void print_click_log_table(double n) {
  std::printf("n = %.0f\n", n);
  std::printf("%16s %5s %3s %10s %10s %12s\n", "m (bits)", "m/n", "k", "FPR", "FPN", "Mem");
  for (double bits_per_item : {30.0, 50.0}) {
    for (double k : {8.0, 16.0}) {
      const double m = bits_per_item * n;
      const double rate = classic_false_positive_rate(m, k, n);
      std::printf("%16.0f %5.0f %3.0f %10.3g %10.3g %12s\n", m, bits_per_item, k, rate,
                  expected_false_positives(rate, n), format_bytes(m / 8).c_str());
    }
  }
}

void print_tables() {
  std::printf("Click-log dedup, table 1: 1e9 items a day\n");
  print_click_log_table(1e9);
  std::printf("\nClick-log dedup, table 2: 7e6 items (ten minutes of the day)\n");
  print_click_log_table(7e6);
  std::printf(
      "\nFPR = (1 - e^(-kn/m))^k; FPN = FPR * n, the expected false positives over n "
      "absent queries;\nMem = m / 8 bytes in binary units (where such tables print \"GB\" and "
      "\"MB\", they mean GiB and MiB).\n");
  std::printf(
      "\nCrawler dedup: false-positive rate by m/n (rows) and k (columns); k_opt = (m/n) ln 2\n");
  std::printf("%4s %6s", "m/n", "k_opt");
  for (int k = 17; k <= 24; ++k) std::printf(" %9s", ("k=" + std::to_string(k)).c_str());
  std::printf("\n");
  for (int bits_per_item = 22; bits_per_item <= 32; ++bits_per_item) {
    std::printf("%4d %6.1f", bits_per_item, bits_per_item * std::log(2.0));
    for (int k = 17; k <= 24; ++k) {
      std::printf(" %9.3g", classic_false_positive_rate(bits_per_item, k, 1));
    }
    std::printf("\n");
  }
  std::printf("\nWhere published tables differ from the formula: see docs/sizing.md.\n");
}

}  // namespace

void register_plan(CLI::App& app, int& exit_code) {
  auto cmd = std::make_shared<PlanCommand>();
  CLI::App* sub = app.add_subcommand("plan", "Size a filter: bits, hashes, memory, partitions");
  cmd->capacity_option = sub->add_option("-n,--capacity", cmd->capacity, "Items (e.g. 1e9)");
  auto* rate =
      sub->add_option("-p,--error-rate", cmd->error_rate, "False-positive rate (e.g. 1e-9)");
  sub->add_option("--layout", cmd->layout, "classic (default) or blocked");
  sub->add_option("--kind", cmd->kind, "bloom (default) or cuckoo (a filter that removes items)")
      ->check(CLI::IsMember({"bloom", "cuckoo"}));
  sub->add_option("--partition-size", cmd->partition_size, "Largest partition (default 64MiB)");
  auto* table = sub->add_flag("--table", cmd->table,
                              "Recompute published sizing tables for click-log and crawler dedup");
  sub->add_flag("--json", cmd->json, "The plan as one JSON object on stdout");
  cmd->capacity_option->needs(rate);
  rate->needs(cmd->capacity_option);
  table->excludes(cmd->capacity_option);
  sub->callback([cmd, &exit_code] {
    if (cmd->table) {
      print_tables();
    } else if (cmd->capacity_option->count() == 0) {
      throw InvalidArgument("plan needs -n ITEMS -p RATE, or --table");
    } else {
      print_plan(*cmd);
    }
    exit_code = kExitOk;
  });
}

}  // namespace redbloom::cli
