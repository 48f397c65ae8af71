#include "opweave/tensor.h"
#include "testing.h"

using namespace opweave;

OPWEAVE_TEST(empty_tensor_is_contiguous_and_aligned) {
  Tensor t = Tensor::empty(DType::kFloat64, {3, 4});
  OPWEAVE_CHECK(t.is_contiguous());
  OPWEAVE_CHECK_EQ(t.numel(), 12);
  OPWEAVE_CHECK_EQ(reinterpret_cast<std::uintptr_t>(t.raw_data()) % 64, 0u);
  OPWEAVE_CHECK(t.strides() == (Shape{4, 1}));
}

OPWEAVE_TEST(contiguous_copies_a_transposed_view) {
  Tensor t = Tensor::empty(DType::kInt32, {2, 3});
  for (int i = 0; i < 6; ++i) t.data<int32_t>()[i] = i;
  Tensor view = Tensor::wrap(DType::kInt32, {3, 2}, {1, 3}, t.raw_data(), t.owner());
  OPWEAVE_CHECK(!view.is_contiguous());
  Tensor c = view.contiguous();
  const int32_t expected[] = {0, 3, 1, 4, 2, 5};
  for (int i = 0; i < 6; ++i) OPWEAVE_CHECK_EQ(c.data<int32_t>()[i], expected[i]);
}

OPWEAVE_TEST(reshape_with_other_element_count_is_invalid_argument) {
  Tensor t = Tensor::empty(DType::kFloat32, {2, 3});
  bool invalid = false;
  try {
    t.reshaped({4, 2});
  } catch (const OpError& e) {
    invalid = e.code() == ErrorCode::kInvalidArgument;
  }
  OPWEAVE_CHECK(invalid);
}

OPWEAVE_TEST(huge_allocation_is_resource_exhausted) {
  bool exhausted = false;
  try {
    Tensor::empty(DType::kFloat64, {1LL << 40, 1LL << 20});
  } catch (const OpError& e) {
    exhausted = e.code() == ErrorCode::kResourceExhausted;
  }
  OPWEAVE_CHECK(exhausted);
}

OPWEAVE_TEST_MAIN()
