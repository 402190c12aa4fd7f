// (counts (2): read as one group, the shape rule passes, only the type is wrong)
func.func @groups_float(%rows: tensor<8x4xf32>, %counts: tensor<2xi32>, %g: tensor<3x4xf32>, %d: tensor<4x3xf32>) {
  // expected-error@+1 {{groups must be an integer}}
  %out, %hid = "tdag.moe_experts"(%rows, %counts, %g, %g, %g, %g, %d, %d) {groups = 2.0 : f64, operandSegmentSizes = array<i32: 1, 1, 2, 2, 2>} : (tensor<8x4xf32>, tensor<2xi32>, tensor<3x4xf32>, tensor<3x4xf32>, tensor<3x4xf32>, tensor<3x4xf32>, tensor<4x3xf32>, tensor<4x3xf32>) -> (tensor<8x4xf32>, tensor<8x6xf32>)
  return
}

