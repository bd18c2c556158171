#include <cstdio>
#include <redbloom/redbloom.hpp>

int main() {
  redbloom::Filter filter =
      redbloom::Filter::in_memory(redbloom::size_filter(1000, 0.01, redbloom::Layout::blocked));
  const bool first = filter.add("s3://bucket/a.pdf");
  const bool second = filter.add("s3://bucket/a.pdf");
  if (!first || second || !filter.contains("s3://bucket/a.pdf")) {
    std::puts("consumer: wrong answers");
    return 1;
  }
  std::puts("consumer: ok");
  return 0;
}
