// --piper-lower-to-llvm on tdag.relu and relu_grad, whose op-list entries name the shared
// lowering rule (lowerElementwise): kernel(results..., operands..., numel), the kernels their
// rows name, prt_relu_fwd(y, x, n) and prt_relu_bwd(dx, dy, x, n) reading the forward's x.
// RUN: piper-opt %s --piper-autodiff --piper-lower-to-llvm | FileCheck %s

// CHECK-LABEL: llvm.func @piper_step
// CHECK: %[[N:[0-9]+]] = llvm.mlir.constant(24 : i64) : i64
// CHECK-NEXT: llvm.call @prt_relu_fwd(%[[Y:[0-9]+]], %[[X:[0-9]+]], %[[N]]) : (!llvm.ptr, !llvm.ptr, i64) -> ()
// CHECK: %[[N2:[0-9]+]] = llvm.mlir.constant(24 : i64) : i64
// CHECK-NEXT: llvm.call @prt_relu_bwd(%{{[0-9]+}}, %{{[0-9]+}}, %[[X]], %[[N2]]) : (!llvm.ptr, !llvm.ptr, !llvm.ptr, i64) -> ()
func.func @mlp() {
  %tok = "tdag.input"() {name = "tokens"} : () -> tensor<2x3xi32>
  %tgt = "tdag.input"() {name = "targets"} : () -> tensor<2x3xi32>
  %wte = "tdag.param"() {init = "normal", name = "embed"} : () -> tensor<16x4xf32>
  %w1 = "tdag.param"() {init = "normal", name = "fc1"} : () -> tensor<4x4xf32>
  %x = "tdag.embed"(%tok, %wte) : (tensor<2x3xi32>, tensor<16x4xf32>) -> tensor<2x3x4xf32>
  %h = "tdag.matmul_nt"(%x, %w1) : (tensor<2x3x4xf32>, tensor<4x4xf32>) -> tensor<2x3x4xf32>
  %a = "tdag.relu"(%h) : (tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  %logits = "tdag.matmul_nt"(%a, %wte) : (tensor<2x3x4xf32>, tensor<16x4xf32>) -> tensor<2x3x16xf32>
  %loss, %p = "tdag.cross_entropy"(%logits, %tgt) : (tensor<2x3x16xf32>, tensor<2x3xi32>) -> (tensor<f32>, tensor<2x3x16xf32>)
  "tdag.output"(%loss) {name = "loss"} : (tensor<f32>) -> ()
  return
}
