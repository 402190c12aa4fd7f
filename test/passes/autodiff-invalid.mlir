// --piper-autodiff rejects a loss it cannot differentiate, at the tdag.output that names it.
// RUN: not piper-opt %s --piper-autodiff 2>&1 | FileCheck %s

func.func @loss_not_from_cross_entropy(%x: tensor<f32>) {
  %y = "tdag.gelu"(%x) : (tensor<f32>) -> tensor<f32>
  // CHECK: autodiff-invalid.mlir:[[@LINE+1]]:3: error: piper-autodiff: the loss must be result #0 of a tdag.cross_entropy
  "tdag.output"(%y) {name = "loss"} : (tensor<f32>) -> ()
  return
}
