// A power the GPU's pow kernels lack (x ** 1.7): fake-cuda.test checks --target cuda refuses it.
module {
  func.func @model() {
    %tok = "tdag.input"() {name = "tokens"} : () -> tensor<2x4xi32>
    %wte = "tdag.param"() {init = "normal", name = "wte"} : () -> tensor<16x8xf32>
    %x = "tdag.embed"(%tok, %wte) : (tensor<2x4xi32>, tensor<16x8xf32>) -> tensor<2x4x8xf32>
    %sq = "tdag.mul"(%x, %x) : (tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
    %pos = "tdag.add_scalar"(%sq) {value = 1.0 : f64} : (tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
    %p = "tdag.pow_scalar"(%pos) {exponent = 1.7 : f64} : (tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
    %logits = "tdag.matmul_nt"(%p, %wte) : (tensor<2x4x8xf32>, tensor<16x8xf32>) -> tensor<2x4x16xf32>
    %tgt = "tdag.input"() {name = "targets"} : () -> tensor<2x4xi32>
    %loss, %probs = "tdag.cross_entropy"(%logits, %tgt) : (tensor<2x4x16xf32>, tensor<2x4xi32>) -> (tensor<f32>, tensor<2x4x16xf32>)
    "tdag.output"(%loss) {name = "loss"} : (tensor<f32>) -> ()
    return
  }
}
