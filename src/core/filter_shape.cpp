// FilterShape's text, and the shape of a windowed or growing filter (filter_shape.hpp).
#include "core/filter_shape.hpp"

#include "redbloom/error.hpp"

namespace redbloom {

std::string FilterShape::describe() const {
  if (server_filter) {
    return server_filter->kind + ", capacity " + std::to_string(server_filter->capacity);
  }
  if (cuckoo) return redbloom::describe(*cuckoo);
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

}  // namespace redbloom
