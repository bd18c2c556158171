// The pure shape of windowed and growing filters: slices, error budget, link sizing.
#include <gtest/gtest.h>

#include <cmath>
#include <map>

#include "core/filter_chain.hpp"
#include "core/link_sizing.hpp"
#include "core/stream_shape.hpp"
#include "error_of.hpp"
#include "redbloom/error.hpp"
#include "redbloom/sizing.hpp"

namespace redbloom {
namespace {

StreamOptions window_options() {
  StreamOptions options;
  options.capacity = 100000;
  options.error_rate = 0.01;
  options.window_ns = parse_duration_ns("10m");
  return options;
}

TEST(StreamShape, SlicesCoverTheWindowPlusOne) {
  const StreamShape shape(window_options());
  EXPECT_EQ(shape.slices(), kDefaultSlices);
  EXPECT_EQ(shape.live_slices(), kDefaultSlices + 1);
  EXPECT_EQ(shape.slice_ns(), parse_duration_ns("150s"));
  const std::uint64_t t = 1'700'000'000'000'000'000ULL;
  const std::int64_t g = shape.slice_at(t);
  EXPECT_EQ(std::uint64_t(g) * shape.slice_ns() <= t, true);
  EXPECT_GT((std::uint64_t(g) + 1) * shape.slice_ns(), t);
  EXPECT_EQ(shape.oldest_live(g), g - 4);
  // Slice g is live until N slices after it end: at least W after any of its items.
  EXPECT_EQ(shape.retire_ns(g), (std::uint64_t(g) + 5) * shape.slice_ns());
  EXPECT_GE(shape.retire_ns(g) - t, shape.options().window_ns);
  EXPECT_LE(shape.retire_ns(g) - t, shape.options().window_ns + shape.slice_ns());
}

TEST(StreamShape, ErrorBudgetKeepsTheTargetOverEveryLiveLink) {
  for (bool windowed : {true, false}) {
    StreamOptions options = window_options();
    if (!windowed) {
      options.window_ns = 0;
      options.growth = 2;
    }
    const StreamShape shape(options);
    // Every live slice holding all kMaxStreamLinks links at their rates.
    double pass = 1;
    for (std::uint32_t s = 0; s < shape.live_slices(); ++s) {
      for (std::uint32_t l = 0; l < kMaxStreamLinks; ++l) pass *= 1 - shape.link_error_rate(l);
    }
    EXPECT_LE(1 - pass, options.error_rate * (1 + 1e-9)) << windowed;
    // And the links as sized, full: their rates at capacity stay under their budgets.
    for (std::uint32_t l = 0; l < 6; ++l) {
      const FilterParams p = shape.link_params(l);
      EXPECT_EQ(p.partitions, shape.partitions());
      EXPECT_LE(p.error_rate, shape.link_error_rate(l) * (1 + 1e-9)) << l;
      EXPECT_EQ(p.capacity, shape.link_capacity(l));
      EXPECT_EQ(shape.link_capacity(l + 1), shape.link_capacity(l) * 2);
    }
  }
}

TEST(StreamShape, WindowCapacityIsPerWindow) {
  const StreamShape shape(window_options());
  EXPECT_EQ(shape.link_capacity(0), 27500u);  // 100000 items a window, 4 slices, 10% headroom
  StreamOptions growing = window_options();
  growing.window_ns = 0;
  growing.growth = 4;
  EXPECT_EQ(StreamShape(growing).link_capacity(0), 100000u);
  EXPECT_EQ(StreamShape(growing).link_capacity(2), 1600000u);
}

TEST(StreamShape, CompoundRateOfEmptyLinksIsZeroAndGrowsWithItems) {
  const StreamShape shape(window_options());
  const std::pair<std::uint32_t, std::uint64_t> empty[] = {{0, 0}, {0, 0}};
  EXPECT_LT(shape.compound_rate(empty), 1e-9);
  std::vector<std::pair<std::uint32_t, std::uint64_t>> full(5, {0, shape.link_capacity(0)});
  const double rate = shape.compound_rate(full);
  EXPECT_GT(rate, 0.5 * 0.9 * 0.01);
  EXPECT_LE(rate, 0.01);
}

TEST(StreamShape, RefusesBadOptions) {
  StreamOptions options = window_options();
  options.capacity = 0;
  EXPECT_THROW(StreamShape{options}, InvalidArgument);
  options = window_options();
  options.window_ns = 0;  // no window and no growth: a plain filter
  EXPECT_THROW(StreamShape{options}, InvalidArgument);
  options = window_options();
  options.growth = 1;
  EXPECT_THROW(StreamShape{options}, InvalidArgument);
  options = window_options();
  options.window_ns = 3'000'000;  // in 4 slices, not whole milliseconds each
  EXPECT_THROW(StreamShape{options}, InvalidArgument);
  options = window_options();
  options.max_bytes = 1000;
  EXPECT_THROW(StreamShape{options}, InvalidArgument);
  EXPECT_THROW((void)parse_duration_ns("10x"), InvalidArgument);
  EXPECT_THROW((void)parse_duration_ns(""), InvalidArgument);
  EXPECT_THROW((void)parse_duration_ns("0s"), InvalidArgument);
  EXPECT_EQ(parse_duration_ns("1.5h"), 5400'000'000'000ULL);
  EXPECT_EQ(parse_duration_ns("30s"), 30'000'000'000ULL);
  EXPECT_EQ(parse_duration_ns("250ms"), 250'000'000ULL);
  EXPECT_EQ(parse_duration_ns("7d"), 7 * 86400'000'000'000ULL);
  EXPECT_EQ(format_duration(parse_duration_ns("10m")), "10m");
}

// A windowed or growing filter states the error-rate rule as every other filter does.
TEST(StreamShape, ErrorRateRuleIsTheFiltersOne) {
  StreamOptions options = window_options();
  options.error_rate = 0.6;
  EXPECT_EQ(testing::error_of([&] { (void)StreamShape{options}; }),
            "error rate 0.6 is too high: the error rate must be above 0 and at most 0.5 "
            "(0.01 is common); above 0.5 a filter answers 'present' for most items it never saw");
  options.window_ns = 0;
  options.growth = 2;
  options.error_rate = 0;
  EXPECT_EQ(testing::error_of([&] { (void)StreamShape{options}; }),
            "error rate 0 is too low: the error rate must be above 0 and at most 0.5 "
            "(0.01 is common)");
}

// A number without a unit is refused with the forms that work, not read as seconds.
TEST(StreamShape, DurationWithoutUnitIsRefusedWithTheForms) {
  EXPECT_EQ(testing::error_of([] { (void)parse_duration_ns("3600"); }),
            "'3600' has no unit: give a number and a unit ms, s, m, h or d "
            "(e.g. 3600s, 60m, 1h, 7d)");
  EXPECT_EQ(testing::error_of([] { (void)parse_duration_ns("1.5"); }),
            "'1.5' has no unit: give a number and a unit ms, s, m, h or d "
            "(e.g. 3600s, 60m, 1h, 7d)");
  EXPECT_EQ(testing::error_of([] { (void)parse_duration_ns("10x"); }),
            "'10x' is not a duration: give a number and a unit ms, s, m, h or d "
            "(e.g. 3600s, 60m, 1h, 7d), at least 1ms");
}

TEST(StreamShape, LinksPastRedisStringsAreRefusedWithAReason) {
  StreamOptions options = window_options();
  options.window_ns = 0;
  options.growth = 1024;
  const StreamShape shape(options);
  EXPECT_NO_THROW((void)shape.link_params(1));
  try {
    (void)shape.link_params(4);
    FAIL() << "a link of 1e17 items was sized";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("link 4"), std::string::npos) << e.what();
  }
}

TEST(StreamShape, EncodesAndParsesItsOptions) {
  const StreamShape shape(window_options());
  std::map<std::string, std::string, std::less<>> fields;
  for (const auto& [key, value] : shape.encode()) fields[key] = value;
  EXPECT_EQ(StreamShape::parse(fields, "t").options(), shape.options());
  auto changed = fields;
  changed["link0_bits"] = "512";
  EXPECT_THROW((void)StreamShape::parse(changed, "t"), FormatError);
  changed = fields;
  changed.erase("growth");
  EXPECT_THROW((void)StreamShape::parse(changed, "t"), FormatError);
  changed = fields;
  changed["hash_scheme"] = "99";
  EXPECT_THROW((void)StreamShape::parse(changed, "t"), FormatError);
}

}  // namespace
}  // namespace redbloom

namespace redbloom {
namespace {

// The two kinds of filter that grow size their links with one routine (link_sizing.hpp): a
// module chain's link i and a growing filter's link i are what size_link gives for their
// capacity and rate, down to a blocked link too tight for a block being classic in both.
TEST(LinkSizing, ChainsAndStreamLinksAreSizedByOneRoutine) {
  constexpr std::uint64_t kWholeString = kRedisMaxStringBits / 8;
  for (const double p : {0.01, 1e-12, 1e-30}) {
    ChainOptions chain_options;
    chain_options.capacity = 1000;
    chain_options.error_rate = p;
    chain_options.expansion = 2;
    chain_options.layout = Layout::blocked;
    FilterChain chain(chain_options, default_chain_allocator());
    // A stream's first link is sized as asked, so its rate must be in a block's reach.
    StreamOptions growing;
    growing.capacity = 1000;
    growing.error_rate = p < 1e-20 ? 1e-12 : p;
    growing.growth = 2;
    growing.layout = Layout::blocked;
    const StreamShape shape(growing);
    for (std::uint32_t link = 1; link < 6; ++link) {
      SCOPED_TRACE("p=" + std::to_string(p) + " link " + std::to_string(link));
      double target = 0;
      const FilterParams chain_link = chain.next_link_params(&target);
      EXPECT_EQ(chain_link,
                size_link(1000.0 * std::pow(2.0, link), target, Layout::blocked, kWholeString));
      EXPECT_EQ(chain_link.layout, p < 1e-20 ? Layout::classic : Layout::blocked);
      const FilterParams stream_link = shape.link_params(link);
      EXPECT_EQ(stream_link, size_link(double(shape.link_capacity(link)),
                                       shape.link_error_rate(link), Layout::blocked, kWholeString));
      if (growing.error_rate == p) {
        EXPECT_EQ(stream_link.layout, chain_link.layout);
      }
      chain.add_link_with_params(chain_link, target, 0);
    }
  }
}

}  // namespace
}  // namespace redbloom
