// Active defragmentation of redbloom's filter chain (FilterChain::relocate): every link's block
// moved as the server's defragmenter moves it (a copy elsewhere, the old block poisoned), in
// slices, with every answer unchanged and the bits still on a cache line.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "core/filter_chain.hpp"

namespace redbloom {
namespace {

// Every block of the test, freed when it ends: the chain's release is a no-op, so that the
// mover's copies (not the allocator's) can be handed to it.
std::vector<void*>& blocks() {
  static std::vector<void*> all;
  return all;
}
void* test_allocate(std::size_t bytes) {
  return blocks().emplace_back(std::aligned_alloc(64, (bytes + 63) / 64 * 64));
}
void test_release(void*) {}
void free_blocks() {
  for (void* block : blocks()) std::free(block);
  blocks().clear();
}

struct PoisoningMover {
  const FilterChain* chain = nullptr;
  std::size_t shift = 0;  // where in a new block the copy starts (0: on a cache line)
  std::vector<void*> poisoned;
  int stop_after = -1;

  static void* move(void* context, void* block) {
    auto& self = *static_cast<PoisoningMover*>(context);
    std::size_t size = 0;
    for (const auto& link : self.chain->links()) {
      if (link.allocation == block) size = link.allocated_bytes;
    }
    if (size == 0) return nullptr;
    // A block off a cache line by `shift`: what an allocator of other size classes may give.
    auto* raw =
        static_cast<char*>(blocks().emplace_back(std::aligned_alloc(64, size + 128))) + self.shift;
    std::memcpy(raw, block, size);
    std::memset(block, 0xff, size);
    self.poisoned.push_back(block);  // kept (poisoned) so a stale pointer reads garbage
    return raw;
  }
  static bool stop(void* context) {
    auto& self = *static_cast<PoisoningMover*>(context);
    return self.stop_after >= 0 && self.stop_after-- == 0;
  }
};

void check_relocation(Layout layout, std::size_t shift) {
  ChainOptions options;
  options.capacity = 200;
  options.error_rate = 0.01;
  options.layout = layout;
  FilterChain chain(options, ChainAllocator{test_allocate, test_release});
  std::vector<std::string> items;
  for (int i = 0; i < 5000; ++i) items.push_back("in:" + std::to_string(i));
  std::vector<std::string_view> views(items.begin(), items.end());
  std::vector<FilterChain::AddResult> added(views.size());
  ASSERT_EQ(chain.add(views, added.data()), views.size());
  ASSERT_GT(chain.links().size(), 3u);
  std::vector<std::string> probes;
  for (int i = 0; i < 20000; ++i)
    probes.push_back((i % 4 == 0 ? "in:" : "x:") + std::to_string(i / 4));
  std::vector<std::string_view> probe_views(probes.begin(), probes.end());
  std::vector<std::uint8_t> before(probes.size()), after(probes.size());
  chain.contains(probe_views, before.data());

  PoisoningMover mover;
  mover.chain = &chain;
  mover.shift = shift;
  mover.stop_after = 0;  // the first slice ends after one link
  std::uint64_t moved = 0;
  std::size_t next = chain.relocate(0, PoisoningMover::move, &mover, PoisoningMover::stop, &moved);
  EXPECT_EQ(next, 1u);
  next = chain.relocate(next, PoisoningMover::move, &mover, nullptr, &moved);
  EXPECT_EQ(next, chain.links().size());
  for (const auto& link : chain.links()) {
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(link.words) % 64, 0u);
  }
  chain.contains(probe_views, after.data());
  EXPECT_EQ(before, after);
  EXPECT_GT(moved, 0u);
}

void check_relocation_and_free(Layout layout, std::size_t shift) {
  check_relocation(layout, shift);
  free_blocks();
}

TEST(ChainRelocation, MovedBlocksKeepEveryAnswer) {
  for (const Layout layout : {Layout::blocked, Layout::classic})
    check_relocation_and_free(layout, 0);
}

TEST(ChainRelocation, ABlockMovedOffACacheLineIsRealigned) {
  for (const Layout layout : {Layout::blocked, Layout::classic})
    check_relocation_and_free(layout, 16);
}

}  // namespace
}  // namespace redbloom
