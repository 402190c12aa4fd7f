// GEMM epilogues (PiperTarget.gemmEpilogues, lowering/lower_compute.c lwPairEpilogues): under
// --target cuda a tdag.linear_grad_weight and the tdag.bias_grad of the same dout are one call,
// prt_cuda_linear_bwd_weight_bias(dw, db, dout, x, M, N, K, mask), made at the later op of
// the pair, in either order. A pair is not made where an op between them reads the earlier
// op's result (it would read it before the fused call writes it): that keeps the two calls.
// The earlier op's operands are read at the later op, and the memory plan keeps them there. The CPU target has no epilogues: its plan keeps prt_linear_bwd_weight and
// prt_bias_bwd.
// RUN: piper-opt %s --piper-lower-to-llvm | FileCheck %s
// RUN: sed 's/, piper.target = "cuda"//' %s | piper-opt --piper-lower-to-llvm | FileCheck %s --check-prefix=CPU

// CHECK-LABEL: llvm.func @piper_step
// bias_grad first: nothing where it stands, one call at the linear_grad_weight
// CHECK-NOT: llvm.call @prt_cuda_bias_bwd
// CHECK: llvm.call @prt_cuda_linear_bwd_weight_bias(%{{[0-9]+}}, %{{[0-9]+}}, %{{[0-9]+}}, %{{[0-9]+}}, %{{[0-9]+}}, %{{[0-9]+}}, %{{[0-9]+}}, %{{[0-9]+}}) : (!llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, i64, i64, i64, i32) -> ()
// CHECK: llvm.call @prt_cuda_add
// linear_grad_weight first: the call at the bias_grad, after the add between them
// CHECK-NOT: llvm.call @prt_cuda_bias_bwd
// CHECK: llvm.call @prt_cuda_add
// CHECK: llvm.call @prt_cuda_linear_bwd_weight_bias(
// refused: the add between reads db, so the two kernels stay
// CHECK: llvm.call @prt_cuda_bias_bwd(
// CHECK: llvm.call @prt_cuda_add
// CHECK: llvm.call @prt_cuda_linear_bwd_weight(
// the linear_grad_weight first, the last reader of its x (an activation): the call at the
// bias_grad reads x there, so the memory plan keeps x's bytes to it: the add between (t4)
// does not write over them
// CHECK: llvm.call @prt_cuda_add(
// CHECK: llvm.call @prt_cuda_add(%[[X4:[0-9]+]],
// CHECK-NOT: llvm.call @prt_cuda_add(%[[X4]],
// CHECK: llvm.call @prt_cuda_linear_bwd_weight_bias(%{{[0-9]+}}, %{{[0-9]+}}, %{{[0-9]+}}, %[[X4]],
// CHECK-NOT: llvm.call @prt_cuda_bias_bwd(
// CHECK-LABEL: llvm.func @piper_eval_step

// CPU-LABEL: llvm.func @piper_step
// CPU-NOT: llvm.call @prt_linear_bwd_weight_bias
// CPU-COUNT-4: llvm.call @prt_bias_bwd(
// CPU-NOT: llvm.call @prt_linear_bwd_weight_bias
// CPU-LABEL: llvm.func @piper_eval_step
module attributes {piper.devices = 1 : i64, piper.global_batch = 1 : i64, piper.target = "cuda"} {
  func.func @device_0() {
    %x = "tdag.param"() {init = "normal", name = "x"} : () -> tensor<6x4xf32>
    %dy = "tdag.param"() {init = "normal", name = "dy"} : () -> tensor<6x3xf32>
    %db = "tdag.bias_grad"(%dy) : (tensor<6x3xf32>) -> tensor<3xf32>
    %dw = "tdag.linear_grad_weight"(%dy, %x) : (tensor<6x3xf32>, tensor<6x4xf32>) -> tensor<3x4xf32>
    %s = "tdag.add"(%db, %db) : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
    %dy2 = "tdag.param"() {init = "normal", name = "dy2"} : () -> tensor<6x3xf32>
    %dw2 = "tdag.linear_grad_weight"(%dy2, %x) : (tensor<6x3xf32>, tensor<6x4xf32>) -> tensor<3x4xf32>
    %s2 = "tdag.add"(%s, %s) : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
    %db2 = "tdag.bias_grad"(%dy2) : (tensor<6x3xf32>) -> tensor<3xf32>
    %w2 = "tdag.add"(%dw2, %dw2) : (tensor<3x4xf32>, tensor<3x4xf32>) -> tensor<3x4xf32>
    %s3 = "tdag.add"(%db2, %s2) : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
    %dy3 = "tdag.param"() {init = "normal", name = "dy3"} : () -> tensor<6x3xf32>
    %db3 = "tdag.bias_grad"(%dy3) : (tensor<6x3xf32>) -> tensor<3xf32>
    %r = "tdag.add"(%db3, %db3) : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
    %dw3 = "tdag.linear_grad_weight"(%dy3, %x) : (tensor<6x3xf32>, tensor<6x4xf32>) -> tensor<3x4xf32>
    %w3 = "tdag.add"(%dw3, %dw3) : (tensor<3x4xf32>, tensor<3x4xf32>) -> tensor<3x4xf32>
    %dy4 = "tdag.param"() {init = "normal", name = "dy4"} : () -> tensor<6x3xf32>
    %x4 = "tdag.add"(%x, %x) : (tensor<6x4xf32>, tensor<6x4xf32>) -> tensor<6x4xf32>
    %dw4 = "tdag.linear_grad_weight"(%dy4, %x4) : (tensor<6x3xf32>, tensor<6x4xf32>) -> tensor<3x4xf32>
    %t4 = "tdag.add"(%x, %x) : (tensor<6x4xf32>, tensor<6x4xf32>) -> tensor<6x4xf32>
    %db4 = "tdag.bias_grad"(%dy4) : (tensor<6x3xf32>) -> tensor<3xf32>
    %y4 = "tdag.add"(%dw4, %dw4) : (tensor<3x4xf32>, tensor<3x4xf32>) -> tensor<3x4xf32>
    %z4 = "tdag.add"(%db4, %db4) : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
    return
  }
}
