// A linear classifier trained with cross-entropy: the GPU kernels it needs are a subset.
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
