#include "core/chain_format.hpp"

#include <bit>
#include <cmath>
#include <cstdio>
#include <cstring>

#include "redbloom/error.hpp"
#include "redbloom/hash.hpp"

namespace redbloom::chain_format {

namespace {

constexpr std::string_view kMagic{"rbchain\x01", 8};

class Writer {
 public:
  explicit Writer(std::string& out) : out_(out) {}
  template <class T>
  void put(T value) {
    static_assert(std::endian::native == std::endian::little, "the format is little-endian");
    char bytes[sizeof(T)];
    std::memcpy(bytes, &value, sizeof(T));
    out_.append(bytes, sizeof(T));
  }

 private:
  std::string& out_;
};

class Reader {
 public:
  explicit Reader(std::string_view in) : in_(in) {}
  template <class T>
  T get(const char* field) {
    if (in_.size() - at_ < sizeof(T) || at_ > in_.size()) {
      throw FormatError(std::string("filter header ends before its field '") + field + "'");
    }
    T value;
    std::memcpy(&value, in_.data() + at_, sizeof(T));
    at_ += sizeof(T);
    return value;
  }
  [[nodiscard]] bool at_end() const noexcept { return at_ == in_.size(); }

 private:
  std::string_view in_;
  std::size_t at_ = 0;
};

Layout read_layout(Reader& r) {
  const auto layout = r.get<std::uint32_t>("layout");
  if (layout != static_cast<std::uint32_t>(Layout::classic) &&
      layout != static_cast<std::uint32_t>(Layout::blocked)) {
    throw FormatError("filter header names unknown layout " + std::to_string(layout));
  }
  return static_cast<Layout>(layout);
}

std::string link_mismatch(std::uint32_t link, const char* field, const std::string& stored,
                          const std::string& made) {
  return "filter header: link " + std::to_string(link) + " has " + field + " " + stored +
         " where its options make " + made;
}

std::string shown(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%.17g", value);
  return text;
}

// Every link of a chain is what its options make at its place (FilterChain::link_params), and
// every link but the newest was full when the next was added. A header that pairs the options
// of one valid filter with the links of another (or any field outside that range) would load
// as a filter whose rate, size or growth are not the ones it reports.
void check_link_matches_options(const FilterChain& chain, std::uint32_t link, std::uint32_t links,
                                const FilterParams& stored, double stored_target,
                                std::uint64_t items) {
  double target = 0;
  FilterParams made;
  try {
    made = chain.next_link_params(&target);
  } catch (const InvalidArgument& e) {
    throw FormatError("filter header: link " + std::to_string(link) + ": " + e.what());
  }
  const auto check = [&](bool same, const char* field, const std::string& was,
                         const std::string& should) {
    if (!same) throw FormatError(link_mismatch(link, field, was, should));
  };
  check(stored.layout == made.layout, "layout", std::string(to_string(stored.layout)),
        std::string(to_string(made.layout)));
  check(stored.capacity == made.capacity, "capacity", std::to_string(stored.capacity),
        std::to_string(made.capacity));
  check(stored.hashes == made.hashes, "hashes", std::to_string(stored.hashes),
        std::to_string(made.hashes));
  check(stored.partitions == made.partitions, "partitions", std::to_string(stored.partitions),
        std::to_string(made.partitions));
  check(stored.partition_bits == made.partition_bits, "partition bits",
        std::to_string(stored.partition_bits), std::to_string(made.partition_bits));
  check(stored_target == target, "target error rate", shown(stored_target), shown(target));
  // The expected rate is computed from the sizes with libm, which may round its last digits
  // differently on another machine: equal to a relative millionth.
  check(std::fabs(stored.error_rate - made.error_rate) <= 1e-6 * made.error_rate,
        "expected error rate", shown(stored.error_rate), shown(made.error_rate));
  if (link + 1 < links && items != stored.capacity) {
    throw FormatError("filter header: link " + std::to_string(link) + " holds " +
                      std::to_string(items) + " of its " + std::to_string(stored.capacity) +
                      " items, yet a newer link was added (only a full link is followed by one)");
  }
}

}  // namespace

std::string encode_header(const FilterChain& chain) {
  std::string out(kMagic);
  Writer w(out);
  const ChainOptions& o = chain.options();
  w.put(static_cast<std::uint32_t>(o.layout));
  w.put(o.expansion);
  w.put(static_cast<std::uint8_t>(o.scaling ? 1 : 0));
  w.put(o.error_rate);
  w.put(o.capacity);
  w.put(static_cast<std::uint32_t>(chain.links().size()));
  for (const FilterChain::Link& link : chain.links()) {
    w.put(static_cast<std::uint32_t>(link.params.layout));
    w.put(link.params.hashes);
    w.put(link.params.partitions);
    w.put(link.params.partition_bits);
    w.put(link.params.capacity);
    w.put(link.params.error_rate);
    w.put(link.target_error);
    w.put(link.items);
    w.put(link.params.hash_scheme);
  }
  return out;
}

std::unique_ptr<FilterChain> decode_header(std::string_view header, ChainAllocator allocator,
                                           std::uint64_t max_bytes) {
  if (header.substr(0, kMagic.size()) != kMagic) {
    throw FormatError("not a redbloom filter header (wrong magic or format version)");
  }
  Reader r(header.substr(kMagic.size()));
  ChainOptions options;
  options.layout = read_layout(r);
  options.expansion = r.get<std::uint32_t>("expansion");
  const auto scaling = r.get<std::uint8_t>("scaling");
  if (scaling > 1) throw FormatError("filter header has a bad scaling flag");
  options.scaling = scaling == 1;
  options.error_rate = r.get<double>("error_rate");
  options.capacity = r.get<std::uint64_t>("capacity");
  options.max_bytes = max_bytes;
  const auto links = r.get<std::uint32_t>("links");
  if (links < 1 || links > kMaxLinks || (!options.scaling && links != 1)) {
    throw FormatError("filter header has " + std::to_string(links) + " links");
  }
  std::unique_ptr<FilterChain> chain;
  try {
    chain = std::make_unique<FilterChain>(options, allocator, nullptr);
  } catch (const InvalidArgument& e) {
    throw FormatError(std::string("filter header: ") + e.what());
  }
  for (std::uint32_t i = 0; i < links; ++i) {
    FilterParams params;
    params.layout = read_layout(r);
    params.hashes = r.get<std::uint32_t>("hashes");
    params.partitions = r.get<std::uint64_t>("partitions");
    params.partition_bits = r.get<std::uint64_t>("partition_bits");
    params.capacity = r.get<std::uint64_t>("link capacity");
    params.error_rate = r.get<double>("link error rate");
    const auto target = r.get<double>("link target error");
    const auto items = r.get<std::uint64_t>("link items");
    params.hash_scheme = r.get<std::uint32_t>("hash scheme");
    if (!is_known_hash_scheme(params.hash_scheme)) {
      throw FormatError("filter header names unknown hash scheme " +
                        std::to_string(params.hash_scheme));
    }
    if (params.capacity < 1 || items > params.capacity || !(target > 0 && target < 1) ||
        !std::isfinite(params.error_rate)) {
      throw FormatError("filter header has a bad link " + std::to_string(i));
    }
    check_link_matches_options(*chain, i, links, params, target, items);
    // validate() refuses impossible sizes and counts; the chain refuses sizes over its limit.
    chain->add_link_with_params(params, target, items);
  }
  if (!r.at_end()) throw FormatError("filter header has trailing bytes");
  return chain;
}

}  // namespace redbloom::chain_format
