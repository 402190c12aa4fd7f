// Attributes of the wrong type on the expert- and tensor-parallel ops and on directives:
// piperGetIntAttr would read a non-integer as its fallback (one group, offset 0), the lowering
// a non-string stream as "compute", so the verifier refuses them.
// Found writing the hostile cases of the 2026-11-23 fuzz campaign (docs/testing.md, "Robustness").
// RUN: piper-opt %s --split-input-file --verify-diagnostics > /dev/null

func.func @groups_string(%h: tensor<2x4xf32>, %ex: tensor<2x2xi32>) {
  // expected-error@+1 {{groups must be an integer}}
  %rows, %counts = "tdag.moe_dispatch"(%h, %ex) {num_experts = 4 : i64, groups = "two"} : (tensor<2x4xf32>, tensor<2x2xi32>) -> (tensor<4x4xf32>, tensor<4xi32>)
  return
}

// -----
// (counts (2): read as one group, the shape rule passes, only the type is wrong)
func.func @groups_float(%rows: tensor<8x4xf32>, %counts: tensor<2xi32>, %g: tensor<3x4xf32>, %d: tensor<4x3xf32>) {
  // expected-error@+1 {{groups must be an integer}}
  %out, %hid = "tdag.moe_experts"(%rows, %counts, %g, %g, %g, %g, %d, %d) {groups = 2.0 : f64, operandSegmentSizes = array<i32: 1, 1, 2, 2, 2>} : (tensor<8x4xf32>, tensor<2xi32>, tensor<3x4xf32>, tensor<3x4xf32>, tensor<3x4xf32>, tensor<3x4xf32>, tensor<4x3xf32>, tensor<4x3xf32>) -> (tensor<8x4xf32>, tensor<8x6xf32>)
  return
}

// -----
func.func @tp_offset_float() {
  // expected-error@+1 {{tp_offset must be an integer}}
  %p = "tdag.param"() {init = "normal", name = "w", tp_full = [4, 8], tp_slice = [16, 16, 1, 16], tp_offset = 1.5 : f64} : () -> tensor<2x8xf32>
  return
}

// -----
// A device's moe_experts with counts for El experts, not G*El: the global DAG's form (see
// moe-global-form.mlir), which only extraction turns into a device's.
func.func @counts_short(%rows: tensor<8x4xf32>, %counts: tensor<1xi32>, %g: tensor<3x4xf32>, %d: tensor<4x3xf32>) {
  // expected-error@+1 {{counts must be (groups * local experts) = (2), got tensor<1xi32>}}
  %out, %hid = "tdag.moe_experts"(%rows, %counts, %g, %g, %d) {groups = 2 : i64, operandSegmentSizes = array<i32: 1, 1, 1, 1, 1>} : (tensor<8x4xf32>, tensor<1xi32>, tensor<3x4xf32>, tensor<3x4xf32>, tensor<4x3xf32>) -> (tensor<8x4xf32>, tensor<8x6xf32>)
  return
}

// -----
// A directive's stream that is not a string: the shard's all-to-alls (and place's ops) would
// carry it, and the lowering read it as "compute" without a word.
// expected-error@+1 {{stream must be a non-empty string}}
"sched.shard"() {devices = [0, 1], filter = {EP = "*", PP = 0 : i64}, stream = 3 : i64} : () -> ()

// -----
// expected-error@+1 {{reduce_stream must be a non-empty string}}
"sched.replicate"() {devices = [0, 1], filter = {PP = 0 : i64}, reduce_stream = ""} : () -> ()
