// --piper-lower-to-llvm refuses what it cannot lower, with a diagnostic at the cause.
// RUN: not piper-opt %s --split-input-file --piper-lower-to-llvm 2>&1 | FileCheck %s

// The error sits on the module: line 1 is where the implicit module of this input opens.
// CHECK: lower-to-llvm-invalid.mlir:1:1: error: piper-lower-to-llvm: no function with tdag ops to lower
func.func @no_tdag() {
  return
}

// -----

func.func private @body(%a: tensor<2xf32>) -> tensor<2xf32>
func.func @graph_level(%a: tensor<2xf32>) {
  // CHECK: lower-to-llvm-invalid.mlir:[[@LINE+1]]:8: error: piper-lower-to-llvm: only tdag compute ops and comm send/recv/all_reduce/reduce_scatter/all_gather can be lowered here
  %0 = "tdag.node"(%a) {callee = @body, kind = "F"} : (tensor<2xf32>) -> tensor<2xf32>
  return
}

// -----

func.func @one() {
  %p = "tdag.param"() {init = "normal", name = "p"} : () -> tensor<4xf32>
  return
}
// CHECK: lower-to-llvm-invalid.mlir:[[@LINE+1]]:1: error: piper-lower-to-llvm: a module lowers one device function; found a second
func.func @two() {
  %p = "tdag.param"() {init = "normal", name = "q"} : () -> tensor<4xf32>
  return
}
