// size_request (filter_request.hpp): the one set of sizing rules the command line and the
// Python package share, and the parsers of sizes, rates and durations.
#include <gtest/gtest.h>

#include <string>

#include "error_of.hpp"
#include "redbloom/error.hpp"
#include "redbloom/filter_request.hpp"
#include "redbloom/sizing.hpp"

namespace redbloom {
namespace {

FilterRequest keywords() {
  FilterRequest r;
  r.spelling = OptionSpelling::keywords;
  return r;
}

std::string refusal(const FilterRequest& r) {
  try {
    (void)size_request(r);
  } catch (const InvalidArgument& e) {
    return e.what();
  }
  return "(accepted)";
}

TEST(FilterRequest, NothingGivenIsNoSizeOrTheDefaultSize) {
  const SizedRequest none = size_request(keywords());
  EXPECT_FALSE(none.params || none.stream || none.given);
  FilterRequest r;
  r.default_size = true;
  const SizedRequest sized = size_request(r);
  ASSERT_TRUE(sized.params);
  EXPECT_FALSE(sized.given);
  EXPECT_EQ(*sized.params, size_filter(kDefaultCapacity, kDefaultErrorRate, Layout::classic));
}

TEST(FilterRequest, CapacityAndRateSizeAPlainFilter) {
  FilterRequest r = keywords();
  r.capacity = 5000;
  r.error_rate = std::string("0.1%");
  r.layout = "blocked";
  const SizedRequest sized = size_request(r);
  ASSERT_TRUE(sized.params);
  EXPECT_TRUE(sized.given);
  EXPECT_EQ(*sized.params, size_filter(5000, 0.001, Layout::blocked));
}

TEST(FilterRequest, ARateWithoutCapacityIsRefusedWithoutADefault) {
  FilterRequest r = keywords();
  r.error_rate = 0.01;
  EXPECT_EQ(refusal(r), "capacity= (the number of items expected) is needed to size a filter");
}

TEST(FilterRequest, BitsAndHashesGoTogetherAndExcludeTheRate) {
  FilterRequest r = keywords();
  r.bits = 1 << 20;
  EXPECT_EQ(refusal(r), "bits= and hashes= go together (a size set by hand)");
  r.hashes = 5;
  r.error_rate = 0.01;
  EXPECT_EQ(refusal(r), "error_rate= sizes a filter; with bits= and hashes= it is implied");
  r.error_rate.reset();
  const SizedRequest sized = size_request(r);
  ASSERT_TRUE(sized.params);
  EXPECT_EQ(sized.params->hashes, 5u);
  r.window = std::string("10m");
  EXPECT_NE(refusal(r).find("bits= sizes a plain filter by hand"), std::string::npos);
}

TEST(FilterRequest, MessagesNameTheOptionsInTheCallersSpelling) {
  FilterRequest cli;
  cli.default_size = true;
  cli.window = std::string("3600");
  EXPECT_EQ(refusal(cli),
            "--window 3600 has no unit: give a number and a unit ms, s, m, h or d (e.g. 3600s, "
            "3600m, 1h, 7d)");
  FilterRequest py = keywords();
  py.capacity = 10;
  py.window = std::string("3600");
  EXPECT_EQ(refusal(py).rfind("window='3600' has no unit", 0), 0u) << refusal(py);
  cli.window = std::string("10m");
  cli.slices = 0;
  EXPECT_EQ(refusal(cli),
            "--slices 0 is out of range: give 1 to 1024 slices per window (default 4)");
  py.window.reset();
  py.max_bytes = 1e6;
  EXPECT_EQ(refusal(py),
            "max_bytes= limits a windowed or growing filter: add window= or growth= (a plain "
            "filter's size is fixed by capacity= and error_rate=)");
}

TEST(FilterRequest, AWindowTakesTextWithAUnitOrSecondsAndARatePerPeriod) {
  FilterRequest r;
  r.default_size = true;
  r.window = std::string("10m");
  r.item_rate = "200/s";
  r.slices = 1;
  const SizedRequest sized = size_request(r);
  ASSERT_TRUE(sized.stream);
  EXPECT_EQ(sized.stream->window_ns, 600'000'000'000u);
  EXPECT_EQ(sized.stream->capacity, 120'000u);
  EXPECT_EQ(sized.stream->slices, 1u);
  FilterRequest seconds = keywords();
  seconds.capacity = 1000;
  seconds.window = 600.0;
  ASSERT_TRUE(size_request(seconds).stream);
  EXPECT_EQ(size_request(seconds).stream->window_ns, 600'000'000'000u);
  seconds.window = 0.0;
  EXPECT_NE(refusal(seconds).find("at least 0.001 seconds"), std::string::npos);
  FilterRequest no_window;
  no_window.growth = 2;
  no_window.slices = 4;
  EXPECT_EQ(refusal(no_window), "--slices belongs to a windowed filter: add --window");
}

TEST(FilterRequest, ARateNoFilterReachesIsRefusedUnlessForced) {
  FilterRequest r;
  r.capacity = 1000;
  r.error_rate = std::string("1e-300");
  EXPECT_NE(refusal(r).find("-p 1e-300 cannot be built"), std::string::npos);
  EXPECT_NE(refusal(r).find("add --force-rate"), std::string::npos);
  r.force_rate = true;
  ASSERT_TRUE(size_request(r).params);
  EXPECT_EQ(size_request(r).params->hashes, kMaxHashes);
}

TEST(FilterRequestParsers, SizesRatesAndItemRates) {
  EXPECT_EQ(parse_size("4096"), 4096u);
  EXPECT_EQ(parse_size("10M"), 10u << 20);
  EXPECT_EQ(parse_size("512MiB"), 512u << 20);
  EXPECT_EQ(parse_size("2GiB"), 2ull << 30);
  EXPECT_EQ(testing::error_of([] { (void)parse_size("10 parsecs"); }),
            "bad size unit in '10 parsecs' (use B, KiB, MiB or GiB)");
  EXPECT_DOUBLE_EQ(parse_error_rate("0.1%"), 0.001);
  EXPECT_DOUBLE_EQ(parse_error_rate("1e-3"), 0.001);
  EXPECT_THROW((void)parse_error_rate("0.9"), InvalidArgument);
  EXPECT_THROW((void)parse_error_rate("1%x"), InvalidArgument);
  EXPECT_DOUBLE_EQ(parse_item_rate("12000/m"), 200);
  EXPECT_THROW((void)parse_item_rate("12000"), InvalidArgument);
}

TEST(FilterRequest, TheServerEngineTakesItsOwnOptionsOnly) {
  FilterRequest r = keywords();
  r.engine = "bf";
  EXPECT_FALSE(size_request(r).engine) << "nothing given: open an existing key only";
  r.capacity = 5000;
  r.error_rate = std::string("0.1%");
  r.growth = 4;
  const SizedRequest sized = size_request(r);
  ASSERT_TRUE(sized.engine);
  EXPECT_FALSE(sized.params || sized.stream);
  EXPECT_EQ(sized.engine->capacity, 5000u);
  EXPECT_DOUBLE_EQ(sized.engine->error_rate, 0.001);
  EXPECT_EQ(sized.engine->expansion, 4u);
  r.growth.reset();
  r.nonscaling = true;
  EXPECT_TRUE(size_request(r).engine->nonscaling);
  r.growth = 2;
  EXPECT_EQ(refusal(r),
            "nonscaling= and growth= contradict each other: a non-scaling BF filter never grows");
  r.growth.reset();
  r.nonscaling = false;
  r.layout = "blocked";
  EXPECT_EQ(refusal(r),
            "layout= cannot apply to a filter of the server's Bloom engine (engine='bf'): the "
            "engine picks its own layout and hashes");
  r.layout.reset();
  r.window = std::string("10m");
  EXPECT_TRUE(refusal(r).find("windows are redbloom's own") != std::string::npos);
  r.window.reset();
  r.capacity = 0;
  EXPECT_TRUE(refusal(r).find("between 1 and 1e15") != std::string::npos);
  r.capacity = 10;
  r.growth = 40000;
  EXPECT_TRUE(refusal(r).find("give 1 to 32768") != std::string::npos);
}

TEST(FilterRequest, EngineNamesAndNonscalingAreChecked) {
  FilterRequest r;
  r.default_size = true;
  r.engine = "bf";
  ASSERT_TRUE(size_request(r).engine);
  EXPECT_EQ(size_request(r).engine->capacity, static_cast<std::uint64_t>(kDefaultCapacity));
  r.engine = "cuckoo";
  EXPECT_EQ(refusal(r),
            "--engine is redbloom (redbloom's own filter) or bf (the Redis server's Bloom "
            "engine), not 'cuckoo'");
  r.engine.reset();
  r.nonscaling = true;
  EXPECT_TRUE(refusal(r).rfind("--nonscaling is for --engine bf", 0) == 0) << refusal(r);
  FilterRequest k = keywords();
  k.nonscaling = true;
  k.capacity = 10;
  EXPECT_TRUE(refusal(k).rfind("nonscaling= is for engine='bf'", 0) == 0) << refusal(k);
}

TEST(FilterRequest, EngineLimitsAreTheLibrarysToo) {
  EngineFilterOptions o;
  o.capacity = 100;
  o.error_rate = 0.01;
  EXPECT_NO_THROW(check_engine_options(o));
  o.expansion = 2;
  o.nonscaling = true;
  EXPECT_THROW(check_engine_options(o), InvalidArgument);
  o.nonscaling = false;
  o.expansion = kMaxEngineExpansion + 1;
  EXPECT_THROW(check_engine_options(o), InvalidArgument);
  o.expansion = 0;
  o.error_rate = 1;
  EXPECT_THROW(check_engine_options(o), InvalidArgument);
  o.error_rate = 0.01;
  o.capacity = 0;
  EXPECT_THROW(check_engine_options(o), InvalidArgument);
}

}  // namespace
}  // namespace redbloom
