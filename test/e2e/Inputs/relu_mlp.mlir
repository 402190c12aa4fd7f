// A one-layer relu MLP with a tied embedding (B=4 T=16 C=32 V=128): the model of
// relu_mlp_vs_pytorch.test; test/oracle/relu_mlp_torch.py is the same in PyTorch.
func.func @relu_mlp() {
  %tok = "tdag.input"() {name = "tokens"} : () -> tensor<4x16xi32>
  %tgt = "tdag.input"() {name = "targets"} : () -> tensor<4x16xi32>
  %wte = "tdag.param"() {init = "normal", name = "embed"} : () -> tensor<128x32xf32>
  %w1 = "tdag.param"() {init = "normal", name = "fc1"} : () -> tensor<32x32xf32>
  %x = "tdag.embed"(%tok, %wte) : (tensor<4x16xi32>, tensor<128x32xf32>) -> tensor<4x16x32xf32>
  %h = "tdag.matmul_nt"(%x, %w1) : (tensor<4x16x32xf32>, tensor<32x32xf32>) -> tensor<4x16x32xf32>
  %a = "tdag.relu"(%h) : (tensor<4x16x32xf32>) -> tensor<4x16x32xf32>
  %logits = "tdag.matmul_nt"(%a, %wte) : (tensor<4x16x32xf32>, tensor<128x32xf32>) -> tensor<4x16x128xf32>
  %loss, %p = "tdag.cross_entropy"(%logits, %tgt) : (tensor<4x16x128xf32>, tensor<4x16xi32>) -> (tensor<f32>, tensor<4x16x128xf32>)
  "tdag.output"(%loss) {name = "loss"} : (tensor<f32>) -> ()
  return
}
