// Uses redbloom::core alone (sizing and hashing): links without hiredis.
#include <cstdio>
#include <redbloom/hash.hpp>
#include <redbloom/params.hpp>

int main() {
  const redbloom::FilterParams params = redbloom::size_filter(1e6, 0.01, redbloom::Layout::classic);
  const redbloom::ItemHash h = redbloom::hash_item("s3://bucket/a.pdf");
  if (params.hashes != 7 || h == redbloom::hash_item("s3://bucket/b.pdf")) {
    std::puts("core consumer: wrong answers");
    return 1;
  }
  std::printf("core consumer: ok (%s)\n", redbloom::describe(params).c_str());
  return 0;
}
