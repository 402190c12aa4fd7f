// A device's moe_experts with counts for El experts, not G*El: the global DAG's form (see
// moe-global-form.mlir), which only extraction turns into a device's.
func.func @counts_short(%rows: tensor<8x4xf32>, %counts: tensor<1xi32>, %g: tensor<3x4xf32>, %d: tensor<4x3xf32>) {
  // expected-error@+1 {{counts must be (groups * local experts) = (2), got tensor<1xi32>}}
  %out, %hid = "tdag.moe_experts"(%rows, %counts, %g, %g, %d) {groups = 2 : i64, operandSegmentSizes = array<i32: 1, 1, 1, 1, 1>} : (tensor<8x4xf32>, tensor<1xi32>, tensor<3x4xf32>, tensor<3x4xf32>, tensor<4x3xf32>) -> (tensor<8x4xf32>, tensor<8x6xf32>)
  return
}

