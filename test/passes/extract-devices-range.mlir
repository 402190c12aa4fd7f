// --piper-extract makes one plan per device of piper.devices: a value outside [1, 1048576] is
// refused at the module instead of running for minutes.
// RUN: not piper-opt %s --piper-extract 2>&1 | FileCheck %s
// CHECK: extract-devices-range.mlir:[[@LINE+1]]:1: error: piper-extract: piper.devices = 1000000000 is outside [1, 1048576]
module attributes {piper.devices = 1000000000 : i64} {
  func.func @train(%g: tensor<4xf32>) {
    %p = "tdag.param"() {init = "normal", name = "p"} : () -> tensor<4xf32>
    %m = "tdag.adam_state"() {param = "p", slot = "exp_avg"} : () -> tensor<4xf32>
    %v = "tdag.adam_state"() {param = "p", slot = "exp_avg_sq"} : () -> tensor<4xf32>
    "tdag.adamw"(%p, %g, %m, %v) {beta1 = 0.9 : f64, beta2 = 0.95 : f64, eps = 1.0e-08 : f64, decay = 0 : i64} : (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> ()
    return
  }
}
