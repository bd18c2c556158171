// info: a filter's parameters, what its fill says about it now, and its exact set if any.
#include <cmath>
#include <cstdio>
#include <ctime>
#include <optional>
#include <string>
#include <vector>

#include "commands.hpp"
#include "exact_options.hpp"
#include "exit_codes.hpp"
#include "filter_options.hpp"
#include "redbloom/exact_set.hpp"
#include "summary.hpp"

namespace redbloom::cli {
namespace {

std::string iso_time(std::uint64_t unix_ns) {
  const std::time_t seconds = static_cast<std::time_t>(unix_ns / 1000000000u);
  std::tm tm{};
  gmtime_r(&seconds, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

// Past the item count it was sized for (unknown for a filter made from explicit bits; a
// windowed or growing filter grows instead).
bool over_capacity(const FilterInfo& info) {
  return info.params.capacity > 0 && !info.stream && !info.cuckoo &&
         info.estimated_items > static_cast<double>(info.params.capacity);
}

std::string age(std::uint64_t from_ns, std::uint64_t to_ns) {
  return to_ns >= from_ns ? format_duration(to_ns - from_ns)
                          : "-" + format_duration(from_ns - to_ns);
}

// Its options, then one line per live link: how old, when it leaves, how full.
void print_stream(const StreamInfo& stream, double set_bits) {
  std::printf("stream            %s\n", describe(stream.options).c_str());
  std::printf("live links        %zu, %s\n", stream.segments.size(),
              format_bytes(double(stream.bytes)).c_str());
  std::printf("rate now          %.4g (target %.4g; every live link counted)\n",
              stream.error_rate_now, stream.options.error_rate);
  std::printf("set bits          %.0f\n", set_bits);
  std::printf("  %-12s %-5s %-9s %-10s %-21s %-11s %s\n", "slice", "link", "age", "leaves in",
              "items / capacity", "memory", "rate now");
  for (const StreamSegment& s : stream.segments) {
    const std::string leaves =
        s.expires_unix_ns == 0 ? "never" : age(stream.now_unix_ns, s.expires_unix_ns);
    char items[48];
    std::snprintf(items, sizeof items, "%llu / %llu", static_cast<unsigned long long>(s.items),
                  static_cast<unsigned long long>(s.capacity));
    std::printf("  %-12lld %-5u %-9s %-10s %-21s %-11s %.3g\n", static_cast<long long>(s.slice),
                s.link, age(s.created_unix_ns, stream.now_unix_ns).c_str(), leaves.c_str(), items,
                format_bytes(double(s.bytes)).c_str(), s.error_rate_now);
  }
}

std::string stream_json(const StreamInfo& stream) {
  std::string links;
  for (const StreamSegment& s : stream.segments) {
    if (!links.empty()) links += ", ";
    links += "{\"slice\": " + std::to_string(s.slice) + ", \"link\": " + std::to_string(s.link) +
             ", \"created_unix_ns\": " + std::to_string(s.created_unix_ns) +
             ", \"expires_unix_ns\": " + std::to_string(s.expires_unix_ns) +
             ", \"items\": " + std::to_string(s.items) +
             ", \"capacity\": " + std::to_string(s.capacity) +
             ", \"bytes\": " + std::to_string(s.bytes) +
             ", \"partitions\": " + std::to_string(s.partitions) +
             ", \"error_rate_now\": " + json_number(s.error_rate_now) + "}";
  }
  const StreamOptions& o = stream.options;
  return "{\"description\": " + json_string(describe(o)) +
         ", \"capacity\": " + std::to_string(o.capacity) +
         ", \"error_rate\": " + json_number(o.error_rate) +
         ", \"window_ns\": " + std::to_string(o.window_ns) +
         ", \"slices\": " + std::to_string(o.slices) + ", \"growth\": " + std::to_string(o.growth) +
         ", \"max_bytes\": " + std::to_string(o.max_bytes) +
         ", \"now_unix_ns\": " + std::to_string(stream.now_unix_ns) +
         ", \"bytes\": " + std::to_string(stream.bytes) +
         ", \"error_rate_now\": " + json_number(stream.error_rate_now) + ", \"links\": [" + links +
         "]}";
}

// `advice`: how this filter gets an exact set (how_to_get_exact_set), shown when it has none.
void print_exact(const std::optional<ExactSetSummary>& exact, const std::string& advice) {
  if (!exact) {
    std::printf("exact set         none (diff --exact needs one; %s)\n", advice.c_str());
    return;
  }
  std::printf("exact set         %s (%s)\n", exact->location.c_str(),
              format_bytes(double(exact->storage_bytes)).c_str());
  std::printf("exact entries     %llu", static_cast<unsigned long long>(exact->entries));
  if (exact->entries > 0) {
    std::printf(" (%.2f bytes each)", double(exact->storage_bytes) / double(exact->entries));
  }
  std::printf("\nfalse match       %.2g per query for an absent item\n",
              exact->false_match_probability);
}

// One line per server: what does the per-item work there (redbloom's module and its version,
// stock commands, a Lua script, a server's own Bloom engine).
void print_engines(const std::vector<std::string>& engines) {
  for (std::size_t i = 0; i < engines.size(); ++i) {
    std::printf("%-18s%s\n", i == 0 ? "engine" : "", engines[i].c_str());
  }
}

std::string engines_json(const std::vector<std::string>& engines) {
  std::string list;
  for (const std::string& engine : engines) {
    if (!list.empty()) list += ", ";
    list += json_string(engine);
  }
  return "[" + list + "]";
}

std::string optional_json(const std::optional<std::uint64_t>& value) {
  return value ? std::to_string(*value) : "null";
}

// A filter of a server's own Bloom engine: what its BF.INFO says.
void print_server_filter(const ServerFilterInfo& server) {
  std::printf("kind              %s: the server keeps its bits (BF.* commands)\n",
              server.kind.c_str());
  std::printf("capacity          %llu items\n", static_cast<unsigned long long>(server.capacity));
  std::printf("size              %s in %llu sub-filter(s)\n",
              format_bytes(double(server.bytes)).c_str(),
              static_cast<unsigned long long>(server.filters));
  if (server.items) {
    std::printf("items inserted    %llu\n", static_cast<unsigned long long>(*server.items));
  }
  if (server.expansion) {
    std::printf("expansion         %llu (grows past its capacity)\n",
                static_cast<unsigned long long>(*server.expansion));
  } else {
    std::printf("expansion         none (refuses items past its capacity)\n");
  }
}

std::string server_filter_json(const ServerFilterInfo& server) {
  return "{\"type\": " + json_string(server.type) + ", \"kind\": " + json_string(server.kind) +
         ", \"capacity\": " + std::to_string(server.capacity) +
         ", \"bytes\": " + std::to_string(server.bytes) +
         ", \"filters\": " + std::to_string(server.filters) +
         ", \"items\": " + optional_json(server.items) +
         ", \"expansion\": " + optional_json(server.expansion) + "}";
}

// A cuckoo filter: its options, then one line per link: its fingerprints, fill and rate.
void print_cuckoo(const CuckooInfo& cuckoo) {
  std::printf("kind              %s\n", describe(cuckoo.options).c_str());
  std::printf("items stored      %llu (fingerprints; an item added twice is stored once)\n",
              static_cast<unsigned long long>(cuckoo.items));
  std::printf("memory            %s in %zu link(s), %.2f bits per stored item\n",
              format_bytes(double(cuckoo.bytes)).c_str(), cuckoo.links.size(),
              cuckoo.items > 0 ? 8.0 * double(cuckoo.bytes) / double(cuckoo.items) : 0.0);
  std::printf("rate now          %.4g (target %.4g; every link counted)\n", cuckoo.error_rate_now,
              cuckoo.options.error_rate);
  std::printf("  %-5s %-12s %-25s %-11s %s\n", "link", "fingerprint", "items / capacity", "memory",
              "rate now");
  for (const CuckooLinkInfo& link : cuckoo.links) {
    char items[56];
    std::snprintf(items, sizeof items, "%llu / %llu", static_cast<unsigned long long>(link.items),
                  static_cast<unsigned long long>(link.capacity));
    std::printf("  %-5u %-12s %-25s %-11s %.3g\n", link.link,
                (std::to_string(link.fingerprint_bits) + " bits").c_str(), items,
                format_bytes(double(link.bytes)).c_str(), link.error_rate_now);
  }
}

std::string cuckoo_json(const CuckooInfo& cuckoo) {
  std::string links;
  for (const CuckooLinkInfo& l : cuckoo.links) {
    if (!links.empty()) links += ", ";
    links += "{\"link\": " + std::to_string(l.link) +
             ", \"fingerprint_bits\": " + std::to_string(l.fingerprint_bits) +
             ", \"items\": " + std::to_string(l.items) +
             ", \"capacity\": " + std::to_string(l.capacity) +
             ", \"bytes\": " + std::to_string(l.bytes) +
             ", \"partitions\": " + std::to_string(l.partitions) +
             ", \"error_rate_now\": " + json_number(l.error_rate_now) + "}";
  }
  const CuckooOptions& o = cuckoo.options;
  return "{\"description\": " + json_string(describe(o)) +
         ", \"capacity\": " + std::to_string(o.capacity) +
         ", \"error_rate\": " + json_number(o.error_rate) +
         ", \"growth\": " + std::to_string(o.growth) +
         ", \"max_bytes\": " + std::to_string(o.max_bytes) +
         ", \"partitions\": " + std::to_string(o.partitions) +
         ", \"items\": " + std::to_string(cuckoo.items) +
         ", \"bytes\": " + std::to_string(cuckoo.bytes) +
         ", \"error_rate_now\": " + json_number(cuckoo.error_rate_now) + ", \"links\": [" + links +
         "]}";
}

void print_text(const std::string& where, const FilterInfo& info,
                const std::optional<ExactSetSummary>& exact, const std::string& exact_advice) {
  const FilterParams& p = info.params;
  std::printf("filter            %s\n", where.c_str());
  std::printf("stored in         %s (%s)\n", info.location.c_str(),
              format_bytes(double(info.storage_bytes)).c_str());
  print_engines(info.engines);
  if (info.server_filter) {
    print_server_filter(*info.server_filter);
    return;
  }
  if (info.cuckoo) {
    std::printf("created           %s\n", iso_time(info.created_unix_ns).c_str());
    print_cuckoo(*info.cuckoo);
    print_exact(exact, exact_advice);
    return;
  }
  if (info.stream) {
    std::printf("created           %s\n", iso_time(info.created_unix_ns).c_str());
    print_stream(*info.stream, double(info.set_bits));
    print_exact(exact, exact_advice);
    return;
  }
  std::printf("layout            %s\n", std::string(to_string(p.layout)).c_str());
  std::printf("hash scheme       %u (XXH3-128)\n", p.hash_scheme);
  std::printf("bits (m)          %llu in %llu partition(s) of %s\n",
              static_cast<unsigned long long>(p.total_bits()),
              static_cast<unsigned long long>(p.partitions),
              format_bytes(double(p.partition_bytes())).c_str());
  std::printf("hashes (k)        %u\n", p.hashes);
  std::printf("memory            %s\n", format_bytes(double(p.total_bytes())).c_str());
  if (p.capacity > 0) {
    std::printf("capacity          %llu items, expected rate %.4g when full\n",
                static_cast<unsigned long long>(p.capacity), p.error_rate);
  } else {
    std::printf("capacity          not recorded (created from explicit bits and hashes)\n");
  }
  std::printf("created           %s\n", iso_time(info.created_unix_ns).c_str());
  std::printf("set bits          %llu (fill %.2f%%)\n",
              static_cast<unsigned long long>(info.set_bits), 100 * info.fill_ratio);
  std::printf("estimated items   %.0f\n", info.estimated_items);
  std::printf("estimated rate    %.4g (now)\n", info.estimated_error_rate);
  if (over_capacity(info)) {
    std::printf(
        "OVER CAPACITY     about %.0f items in a filter sized for %llu: its rate is now "
        "%.3g, not %.3g; new items are ever more often taken for ones already seen "
        "(make a larger filter: redbloom plan)\n",
        info.estimated_items, static_cast<unsigned long long>(p.capacity),
        info.estimated_error_rate, p.error_rate);
  }
  print_exact(exact, exact_advice);
}

void print_json(const std::string& where, const FilterInfo& info,
                const std::optional<ExactSetSummary>& exact) {
  if (info.server_filter) {
    std::printf(
        "{\"filter\": %s, \"location\": %s, \"storage_bytes\": %llu, \"engines\": %s, "
        "\"server_filter\": %s, \"exact\": null}\n",
        json_string(where).c_str(), json_string(info.location).c_str(),
        static_cast<unsigned long long>(info.storage_bytes), engines_json(info.engines).c_str(),
        server_filter_json(*info.server_filter).c_str());
    return;
  }
  std::string exact_json = "null";
  if (exact) {
    exact_json = "{\"location\": " + json_string(exact->location) +
                 ", \"entries\": " + std::to_string(exact->entries) +
                 ", \"storage_bytes\": " + std::to_string(exact->storage_bytes) +
                 ", \"false_match_probability\": " + json_number(exact->false_match_probability) +
                 "}";
  }
  std::printf(
      "{\"filter\": %s, \"location\": %s, \"storage_bytes\": %llu, %s, "
      "\"created_unix_ns\": %llu, \"set_bits\": %llu, \"fill_ratio\": %s, "
      "\"estimated_items\": %s, \"estimated_error_rate\": %s, \"over_capacity\": %s, "
      "\"stream\": %s, \"cuckoo\": %s, \"engines\": %s, \"server_filter\": null, "
      "\"exact\": %s}\n",
      json_string(where).c_str(), json_string(info.location).c_str(),
      static_cast<unsigned long long>(info.storage_bytes), params_json_members(info.params).c_str(),
      static_cast<unsigned long long>(info.created_unix_ns),
      static_cast<unsigned long long>(info.set_bits), json_number(info.fill_ratio).c_str(),
      json_number(info.estimated_items).c_str(), json_number(info.estimated_error_rate).c_str(),
      over_capacity(info) ? "true" : "false",
      info.stream ? stream_json(*info.stream).c_str() : "null",
      info.cuckoo ? cuckoo_json(*info.cuckoo).c_str() : "null", engines_json(info.engines).c_str(),
      exact_json.c_str());
}

}  // namespace

void register_info(CLI::App& app, int& exit_code) {
  struct InfoCommand {
    FilterLocation location;
    bool json = false;
  };
  auto cmd = std::make_shared<InfoCommand>();
  CLI::App* sub = app.add_subcommand("info", "Show a filter's parameters, fill and estimates");
  add_location_options(*sub, cmd->location);
  add_creator_wait_option(*sub, cmd->location);
  sub->add_flag("--json", cmd->json, "One JSON object on stdout");
  sub->callback([cmd, &exit_code] {
    const Filter filter = open_for_reading(cmd->location);
    const FilterInfo info = filter.info();
    // A server's own Bloom filter has no exact set: one needs redbloom's bits.
    const auto exact =
        info.server_filter ? std::nullopt : exact_set_summary(cmd->location.resolve());
    if (cmd->json) {
      print_json(cmd->location.describe(), info, exact);
    } else {
      const Location where = cmd->location.resolve();
      // A windowed filter forgets and an exact set would not: create refuses one (exact_options).
      const std::string advice =
          info.stream && info.stream->options.window_ns != 0
              ? "a windowed filter cannot have one: it forgets items and the set would not"
              : how_to_get_exact_set((info.cuckoo ? info.cuckoo->items == 0 : info.set_bits == 0)
                                         ? FilterContents::empty
                                         : FilterContents::holds_items,
                                     where.in_redis(), where.in_redis() ? where.name : where.path);
      print_text(cmd->location.describe(), info, exact, advice);
    }
    exit_code = kExitOk;
  });
}

}  // namespace redbloom::cli
