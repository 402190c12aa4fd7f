// tdag.relu and tdag.relu_grad, added through the op list alone (include/piper/tdag_ops.def,
// with the shared elementwise rules): they parse, verify and round-trip.
// RUN: piper-opt %s | piper-opt | FileCheck %s

// CHECK-LABEL: func.func @relu_ops
func.func @relu_ops(%x: tensor<2x3xf32>, %dy: tensor<2x3xf32>) {
  // CHECK: %[[Y:.*]] = "tdag.relu"(%arg0) {tags = {layer = 0 : i64}} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %y = "tdag.relu"(%x) {tags = {layer = 0 : i64}} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  // CHECK: "tdag.relu_grad"(%arg1, %arg0) : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  %dx = "tdag.relu_grad"(%dy, %x) : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  return
}
