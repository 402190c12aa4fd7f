// --piper-lower-to-llvm: tdag -> llvm dialect calls into libpiper_rt (include/piper/runtime.h).
// RUN: piper-opt %s --split-input-file --piper-autodiff --piper-lower-to-llvm | FileCheck %s

// A linear classifier: every named tensor is declared in piper_setup in program order with its
// kind (0 param, 1 optim, 2 input, 3 output) and init (0 normal, 1 zeros, 2 ones).
// CHECK-LABEL: module attributes {piper.arena_bytes =
// CHECK-DAG: llvm.mlir.global private constant @piper_str0("tokens\00")
// CHECK-DAG: llvm.mlir.global private constant @piper_str1("w\00")
// CHECK-DAG: llvm.mlir.global private constant @piper_str5("loss\00")
// CHECK-DAG: llvm.mlir.global private constant @piper_str6("optim.exp_avg.w\00")
// CHECK-LABEL: llvm.func @piper_setup(%arg0: !llvm.ptr)
// CHECK: llvm.call @prt_declare_tensor(%arg0, {{.*}}) : (!llvm.ptr, i64, !llvm.ptr, i32, i32, i64, i64, i64, i64, i64, i64) -> ()
// CHECK: llvm.call @prt_declare_arena
// CHECK-LABEL: llvm.func @piper_step(%arg0: !llvm.ptr)
// CHECK: llvm.call @prt_arena(%arg0)
// CHECK: llvm.call @prt_linear_fwd
// CHECK: llvm.call @prt_cross_entropy_fwd
// CHECK: llvm.call @prt_copy
// CHECK: llvm.call @prt_cross_entropy_bwd
// CHECK: llvm.call @prt_linear_bwd_input
// CHECK: llvm.call @prt_linear_bwd_weight
// CHECK: llvm.call @prt_bias_bwd
// One observe + update per parameter (w, b and x are all parameters here).
// CHECK-COUNT-3: llvm.call @prt_observe_grad
// CHECK-NOT: llvm.call @prt_observe_grad
// CHECK: llvm.return
// The tdag function is gone: only llvm-dialect ops remain.
// CHECK-NOT: func.func
// CHECK-NOT: tdag.
func.func @classifier() {
  %tok = "tdag.input"() {name = "tokens"} : () -> tensor<2x3xi32>
  %w = "tdag.param"() {init = "normal", name = "w"} : () -> tensor<8x4xf32>
  %b = "tdag.param"() {init = "zeros", name = "b"} : () -> tensor<8xf32>
  %x = "tdag.param"() {init = "ones", name = "x"} : () -> tensor<2x3x4xf32>
  %tgt = "tdag.input"() {name = "targets"} : () -> tensor<2x3xi32>
  %logits = "tdag.linear"(%x, %w, %b) : (tensor<2x3x4xf32>, tensor<8x4xf32>, tensor<8xf32>) -> tensor<2x3x8xf32>
  %loss, %p = "tdag.cross_entropy"(%logits, %tgt) : (tensor<2x3x8xf32>, tensor<2x3xi32>) -> (tensor<f32>, tensor<2x3x8xf32>)
  "tdag.output"(%loss) {name = "loss"} : (tensor<f32>) -> ()
  return
}

// -----

// The memory plan reuses a value's bytes once its last reader ran. Three chained 1 KiB GELUs
// need two live buffers at a time (an op's input and its output never share bytes), so the
// arena is 2048 bytes, not 3072.
// CHECK-LABEL: module attributes {piper.arena_bytes = 2048 : i64}
// The plan also reports what the arena holds: 2048 bytes of activations at peak, no gradients.
// CHECK: llvm.call @prt_declare_arena(
// CHECK-NEXT: %[[ACT:.*]] = llvm.mlir.constant(2048 : i64) : i64
// CHECK-NEXT: %[[GRAD:.*]] = llvm.mlir.constant(0 : i64) : i64
// CHECK-NEXT: llvm.call @prt_declare_arena_use(%arg0, %[[ACT]], %[[GRAD]])
// CHECK: llvm.func @piper_step
// CHECK: %[[ARENA:.*]] = llvm.call @prt_arena
// CHECK: llvm.call @prt_gelu_fwd(%[[ARENA]], %{{.*}}
// CHECK: %[[OFF:.*]] = llvm.mlir.constant(1024 : i64)
// CHECK: %[[SECOND:.*]] = llvm.getelementptr %[[ARENA]][%[[OFF]]]
// CHECK: llvm.call @prt_gelu_fwd(%[[SECOND]], %[[ARENA]]
// CHECK: llvm.call @prt_gelu_fwd(%[[ARENA]], %[[SECOND]]
func.func @chain() {
  %p = "tdag.param"() {init = "normal", name = "p"} : () -> tensor<256xf32>
  %g1 = "tdag.gelu"(%p) : (tensor<256xf32>) -> tensor<256xf32>
  %g2 = "tdag.gelu"(%g1) : (tensor<256xf32>) -> tensor<256xf32>
  %g3 = "tdag.gelu"(%g2) : (tensor<256xf32>) -> tensor<256xf32>
  return
}
