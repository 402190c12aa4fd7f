// --piper-autodiff rejects a loss it cannot differentiate, at the tdag.output that names it.
// RUN: piper-opt %s --piper-autodiff --verify-diagnostics > /dev/null

func.func @loss_not_from_cross_entropy(%x: tensor<f32>) {
  %y = "tdag.gelu"(%x) : (tensor<f32>) -> tensor<f32>
  // expected-error@+1 {{piper-autodiff: the loss must be result #0 of a tdag.cross_entropy}}
  "tdag.output"(%y) {name = "loss"} : (tensor<f32>) -> ()
  return
}
