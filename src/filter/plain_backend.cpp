#include "filter/plain_backend.hpp"

#include "redbloom/error.hpp"

namespace redbloom {

PlainBackend::PlainBackend(std::unique_ptr<Store> store) : store_(std::move(store)) {
  if (!store_) throw InvalidArgument("Filter needs a store");
}

FilterShape PlainBackend::shape() const {
  FilterShape shape;
  shape.params = store_->params();
  return shape;
}

std::unique_ptr<FilterBackend> plain_backend(std::unique_ptr<Store> store) {
  return std::make_unique<PlainBackend>(std::move(store));
}

}  // namespace redbloom
