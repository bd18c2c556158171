// Orphan detection with the KnownSet API: cache the S3 listing in a Redis filter
// with its exact companion, then find the URLs a vector database references that S3 no longer
// holds.
//
//   orphans REDIS_URI NAME
//
// Prints the orphans' count and the stats; exit 1 if the answer is not exactly right.
#include <cstdio>
#include <ranges>
#include <redbloom/redbloom.hpp>
#include <string>
#include <vector>

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: %s REDIS_URI NAME\n", argv[0]);
    return 2;
  }
  try {
    const auto endpoint = redbloom::parse_redis_uri(argv[1]);
    auto url = [](int i) { return "s3://bucket/docs/file" + std::to_string(i) + ".pdf"; };

    // The S3 listing: 300,000 objects, as a lazily generated range.
    auto known = redbloom::KnownSet::create_redis(
        endpoint, argv[2], redbloom::size_filter(300000, 0.01, redbloom::Layout::classic),
        /*exact=*/true, /*overwrite=*/true);
    known.add(std::views::iota(0, 300000) | std::views::transform(url), [](std::uint64_t done) {
      if (done % 100000 == 0) std::fprintf(stderr, "cached %llu\n", (unsigned long long)done);
    });

    // The vector database references 200,000 URLs, 50,000 of them deleted from S3.
    std::vector<std::string> referenced;
    for (int i = 250000; i < 450000; ++i) referenced.push_back(url(i));
    const std::vector<std::string> orphans =
        known.find_missing(referenced, redbloom::KnownSet::Mode::exact);

    const auto stats = known.stats();
    std::printf(
        "orphans %zu (expected 150000); checked %llu, verified %llu, false positives "
        "caught %llu; exact set %llu entries, %.1f bytes/item in Redis\n",
        orphans.size(), (unsigned long long)stats.checked, (unsigned long long)stats.verified,
        (unsigned long long)stats.false_positives, (unsigned long long)stats.exact_entries,
        double(stats.exact_bytes) / double(stats.exact_entries));
    const bool right =
        orphans.size() == 150000 && orphans.front() == url(300000) && orphans.back() == url(449999);
    return right ? 0 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "orphans: %s\n", e.what());
    return 3;
  }
}
