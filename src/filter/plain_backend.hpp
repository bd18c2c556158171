// A plain filter: one Store (one bitmap) behind the FilterBackend interface.
#pragma once

#include <memory>

#include "redbloom/filter_backend.hpp"

namespace redbloom {

class PlainBackend final : public FilterBackend {
 public:
  explicit PlainBackend(std::unique_ptr<Store> store);

  [[nodiscard]] FilterShape shape() const override;
  void add(std::span<const std::string_view> items, std::span<std::uint8_t> newly_added) override {
    store_->add(items, newly_added);
  }
  void load(std::span<const std::string_view> items) override { store_->load(items); }
  void contains(std::span<const std::string_view> items,
                std::span<std::uint8_t> present) const override {
    store_->contains(items, present);
  }
  [[nodiscard]] Store::OneItemCall direct_contains_one() const override {
    return store_->direct_contains_one();
  }
  [[nodiscard]] Store::OneItemCall direct_add_one() override { return store_->direct_add_one(); }
  [[nodiscard]] std::size_t batch_items() const noexcept override { return store_->batch_items(); }
  [[nodiscard]] std::size_t bulk_batch_items() const noexcept override {
    return store_->bulk_batch_items();
  }
  void use_threads(unsigned threads) override { store_->use_threads(threads); }
  [[nodiscard]] std::uint64_t count_set_bits() const override { return store_->count_set_bits(); }
  [[nodiscard]] std::uint64_t created_unix_ns() const override { return store_->created_unix_ns(); }
  [[nodiscard]] std::uint64_t storage_bytes() const override { return store_->storage_bytes(); }
  [[nodiscard]] std::vector<std::string> engines() const override { return store_->engines(); }
  void flush() override { store_->flush(); }
  [[nodiscard]] std::string location() const override { return store_->location(); }
  [[nodiscard]] Store* bitmap() noexcept override { return store_.get(); }
  [[nodiscard]] const Store* bitmap() const noexcept override { return store_.get(); }

 private:
  std::unique_ptr<Store> store_;
};

}  // namespace redbloom
