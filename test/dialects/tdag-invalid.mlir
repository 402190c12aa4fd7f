// Malformed tdag IR is rejected with a diagnostic at the offending op's line and column.
// RUN: not piper-opt %s --split-input-file 2>&1 | FileCheck %s

func.func @unknown_op() {
  // CHECK: tdag-invalid.mlir:[[@LINE+1]]:8: error: {{.*}}tdag.frobnicate
  %0 = "tdag.frobnicate"() : () -> tensor<2xf32>
  return
}

// -----

func.func @linear_weight_shape(%x: tensor<2x3x4xf32>, %w: tensor<5x6xf32>, %b: tensor<5xf32>) {
  // CHECK: tdag-invalid.mlir:[[@LINE+1]]:8: error: weight must be (N,K) with K = 4 from x tensor<2x3x4xf32>, got tensor<5x6xf32>
  %0 = "tdag.linear"(%x, %w, %b) : (tensor<2x3x4xf32>, tensor<5x6xf32>, tensor<5xf32>) -> tensor<2x3x5xf32>
  return
}

// -----

func.func @linear_result_shape(%x: tensor<2x4xf32>, %w: tensor<5x4xf32>, %b: tensor<5xf32>) {
  // CHECK: tdag-invalid.mlir:[[@LINE+1]]:8: error: result must be x's shape with last dim 5, got tensor<2x6xf32>
  %0 = "tdag.linear"(%x, %w, %b) : (tensor<2x4xf32>, tensor<5x4xf32>, tensor<5xf32>) -> tensor<2x6xf32>
  return
}

// -----

func.func @linear_missing_bias(%x: tensor<2x4xf32>, %w: tensor<5x4xf32>) {
  // CHECK: tdag-invalid.mlir:[[@LINE+1]]:8: error: op expects exactly 3 operands, but got 2
  %0 = "tdag.linear"(%x, %w) : (tensor<2x4xf32>, tensor<5x4xf32>) -> tensor<2x5xf32>
  return
}

// -----

func.func @heads_do_not_divide(%qkv: tensor<1x2x12xf32>) {
  // CHECK: tdag-invalid.mlir:[[@LINE+1]]:14: error: heads = 3 must be positive and divide C = 4
  %out, %p = "tdag.attention"(%qkv) {heads = 3 : i64} : (tensor<1x2x12xf32>) -> (tensor<1x2x4xf32>, tensor<1x3x2x2xf32>)
  return
}

// -----

func.func @bad_init() {
  // CHECK: tdag-invalid.mlir:[[@LINE+1]]:8: error: init must be "normal", "zeros" or "ones", got "uniform"
  %0 = "tdag.param"() {init = "uniform", name = "w"} : () -> tensor<4xf32>
  return
}

// -----

func.func @param_without_name() {
  // CHECK: tdag-invalid.mlir:[[@LINE+1]]:8: error: {{.*}}name
  %0 = "tdag.param"() {init = "zeros"} : () -> tensor<4xf32>
  return
}

// -----

func.func @float_tokens() {
  // CHECK: tdag-invalid.mlir:[[@LINE+1]]:8: error: result #0 must be a statically shaped tensor of i32, got tensor<1x2xf32>
  %0 = "tdag.input"() {name = "tokens"} : () -> tensor<1x2xf32>
  return
}

// -----

func.func @dynamic_shape(%x: tensor<?x4xf32>) {
  // CHECK: tdag-invalid.mlir:[[@LINE+1]]:8: error: operand #0 must be a statically shaped tensor of f32, got tensor<?x4xf32>
  %0 = "tdag.gelu"(%x) : (tensor<?x4xf32>) -> tensor<?x4xf32>
  return
}

// -----

func.func @float_targets(%l: tensor<1x2x8xf32>, %t: tensor<1x2xf32>) {
  // CHECK: tdag-invalid.mlir:[[@LINE+1]]:15: error: operand #1 must be a statically shaped tensor of i32, got tensor<1x2xf32>
  %loss, %p = "tdag.cross_entropy"(%l, %t) : (tensor<1x2x8xf32>, tensor<1x2xf32>) -> (tensor<f32>, tensor<1x2x8xf32>)
  return
}

// -----

func.func @adamw_shapes(%g: tensor<4xf32>, %m: tensor<4xf32>, %v: tensor<5xf32>) {
  %p = "tdag.param"() {init = "zeros", name = "b"} : () -> tensor<4xf32>
  // CHECK: tdag-invalid.mlir:[[@LINE+1]]:3: error: operand #3 tensor<5xf32> must have the parameter's shape tensor<4xf32>
  "tdag.adamw"(%p, %g, %m, %v) {beta1 = 0.9 : f64, beta2 = 0.95 : f64, eps = 1.0e-08 : f64, decay = 0 : i64} : (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<5xf32>) -> ()
  return
}

// -----

// ZeRO: 3 shards of a 10-element parameter are 4 elements each (ceil(10/3)).
func.func @adamw_bad_shards(%g: tensor<10xf32>, %m: tensor<3xf32>, %v: tensor<3xf32>) {
  %p = "tdag.param"() {init = "zeros", name = "b"} : () -> tensor<10xf32>
  // CHECK: tdag-invalid.mlir:[[@LINE+1]]:3: error: with 3 shards of a 10-element parameter the moments must be (4) and the gradient 10 or 4 elements
  "tdag.adamw"(%p, %g, %m, %v) {beta1 = 0.9 : f64, beta2 = 0.95 : f64, eps = 1.0e-08 : f64, decay = 0 : i64, shards = 3 : i64} : (tensor<10xf32>, tensor<10xf32>, tensor<3xf32>, tensor<3xf32>) -> ()
  return
}

// -----

func.func @adamw_not_a_param(%p: tensor<4xf32>, %g: tensor<4xf32>, %m: tensor<4xf32>, %v: tensor<4xf32>) {
  // CHECK: tdag-invalid.mlir:[[@LINE+1]]:3: error: the updated operand must be a tdag.param
  "tdag.adamw"(%p, %g, %m, %v) {beta1 = 0.9 : f64, beta2 = 0.95 : f64, eps = 1.0e-08 : f64, decay = 0 : i64} : (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> ()
  return
}

// -----

func.func @comm_group_not_array(%x: tensor<4xf32>) {
  // CHECK: tdag-invalid.mlir:[[@LINE+1]]:12: error: expected base attribute 'builtin.array' but got 'builtin.integer'
  %s, %t = "comm.all_reduce"(%x) {group = 3 : i64} : (tensor<4xf32>) -> (tensor<4xf32>, !comm.token)
  return
}
