#include "redbloom/filter_backend.hpp"

#include "filter/stream_shape_of.hpp"
#include "redbloom/error.hpp"

namespace redbloom {

std::string FilterShape::describe() const {
  return stream ? redbloom::describe(*stream) : redbloom::describe(params);
}

FilterShape shape_of(const StreamShape& shape) {
  FilterShape out;
  out.stream = shape.options();
  for (std::uint32_t link = 0; link < kMaxStreamLinks; ++link) {
    try {
      out.links.push_back(shape.link_params(link));
    } catch (const InvalidArgument&) {
      break;  // no link past this one can exist
    }
  }
  out.params = shape.link_params(0);
  return out;
}

Store::OneItemCall FilterBackend::direct_contains_one() const {
  return {[](const void* backend, std::string_view item) {
            std::uint8_t present = 0;
            static_cast<const FilterBackend*>(backend)->contains({&item, 1}, {&present, 1});
            return present != 0;
          },
          this};
}

Store::OneItemCall FilterBackend::direct_add_one() {
  // The context is const only in the signature: it is this non-const backend.
  return {[](const void* backend, std::string_view item) {
            std::uint8_t newly = 0;
            const_cast<FilterBackend*>(static_cast<const FilterBackend*>(backend))
                ->add({&item, 1}, {&newly, 1});
            return newly != 0;
          },
          this};
}

}  // namespace redbloom
