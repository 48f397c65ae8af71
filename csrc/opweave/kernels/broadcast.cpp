// NumPy broadcasting of two shapes.
#include "opweave/kernels/kernels.h"

namespace opweave {

Shape broadcast_shapes(const Shape& a, const Shape& b) {
  const std::size_t nd = a.size() > b.size() ? a.size() : b.size();
  Shape out(nd, 1);
  for (std::size_t i = 0; i < nd; ++i) {
    // Align from the right: missing leading dims count as 1.
    const std::int64_t da = i < nd - a.size() ? 1 : a[i - (nd - a.size())];
    const std::int64_t db = i < nd - b.size() ? 1 : b[i - (nd - b.size())];
    if (da != db && da != 1 && db != 1) {
      throw_invalid_argument("Incompatible shapes for broadcasting: " + shape_to_string(a) +
                             " and " + shape_to_string(b));
    }
    out[i] = da == 1 ? db : da;
  }
  return out;
}

}  // namespace opweave
