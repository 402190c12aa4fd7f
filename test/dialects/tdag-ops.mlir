// Every tdag op parses, verifies and round-trips (B=1 T=2 C=4 H=2 V=8).
// RUN: piper-opt %s | piper-opt | FileCheck %s

// CHECK-LABEL: func.func @all_ops
func.func @all_ops() {
  // CHECK: "tdag.input"() {name = "tokens"
  %tok = "tdag.input"() {name = "tokens"} : () -> tensor<1x2xi32>
  %tgt = "tdag.input"() {name = "targets"} : () -> tensor<1x2xi32>
  // CHECK: "tdag.param"() {init = "normal", name = "wte.weight", tags = {embed = 0 : i64}}
  %wte = "tdag.param"() {init = "normal", name = "wte.weight", tags = {embed = 0 : i64}} : () -> tensor<8x4xf32>
  %wpe = "tdag.param"() {init = "normal", name = "wpe.weight"} : () -> tensor<2x4xf32>
  %w = "tdag.param"() {init = "ones", name = "ln.weight"} : () -> tensor<4xf32>
  %b = "tdag.param"() {init = "zeros", name = "ln.bias"} : () -> tensor<4xf32>
  %wq = "tdag.param"() {init = "normal", name = "qkv.weight"} : () -> tensor<12x4xf32>
  %bq = "tdag.param"() {init = "zeros", name = "qkv.bias"} : () -> tensor<12xf32>
  // CHECK: "tdag.embedding"
  %x = "tdag.embedding"(%tok, %wte, %wpe) : (tensor<1x2xi32>, tensor<8x4xf32>, tensor<2x4xf32>) -> tensor<1x2x4xf32>
  // CHECK: "tdag.layernorm"{{.*}}eps = 1.000000e-05 : f64
  %h, %mean, %rstd = "tdag.layernorm"(%x, %w, %b) {eps = 1.0e-05 : f64} : (tensor<1x2x4xf32>, tensor<4xf32>, tensor<4xf32>) -> (tensor<1x2x4xf32>, tensor<1x2xf32>, tensor<1x2xf32>)
  // CHECK: "tdag.linear"
  %qkv = "tdag.linear"(%h, %wq, %bq) : (tensor<1x2x4xf32>, tensor<12x4xf32>, tensor<12xf32>) -> tensor<1x2x12xf32>
  // CHECK: "tdag.attention"{{.*}}heads = 2 : i64
  %att, %lse = "tdag.attention"(%qkv) {heads = 2 : i64} : (tensor<1x2x12xf32>) -> (tensor<1x2x4xf32>, tensor<1x2x2xf32>)
  // CHECK: "tdag.gelu"
  %g = "tdag.gelu"(%att) : (tensor<1x2x4xf32>) -> tensor<1x2x4xf32>
  // CHECK: "tdag.add"
  %r = "tdag.add"(%x, %g) : (tensor<1x2x4xf32>, tensor<1x2x4xf32>) -> tensor<1x2x4xf32>
  // CHECK: "tdag.matmul_nt"
  %logits = "tdag.matmul_nt"(%r, %wte) : (tensor<1x2x4xf32>, tensor<8x4xf32>) -> tensor<1x2x8xf32>
  // CHECK: "tdag.cross_entropy"
  %loss, %p = "tdag.cross_entropy"(%logits, %tgt) : (tensor<1x2x8xf32>, tensor<1x2xi32>) -> (tensor<f32>, tensor<1x2x8xf32>)
  // CHECK: "tdag.output"{{.*}}name = "loss"
  "tdag.output"(%loss) {name = "loss"} : (tensor<f32>) -> ()
  // CHECK: "tdag.cross_entropy_grad"
  %dlogits = "tdag.cross_entropy_grad"(%p, %tgt) : (tensor<1x2x8xf32>, tensor<1x2xi32>) -> tensor<1x2x8xf32>
  // CHECK: "tdag.linear_grad_input"
  %dr = "tdag.linear_grad_input"(%dlogits, %wte) : (tensor<1x2x8xf32>, tensor<8x4xf32>) -> tensor<1x2x4xf32>
  // CHECK: "tdag.linear_grad_weight"
  %dwte = "tdag.linear_grad_weight"(%dlogits, %r) : (tensor<1x2x8xf32>, tensor<1x2x4xf32>) -> tensor<8x4xf32>
  // CHECK: "tdag.gelu_grad"
  %datt = "tdag.gelu_grad"(%dr, %att) : (tensor<1x2x4xf32>, tensor<1x2x4xf32>) -> tensor<1x2x4xf32>
  // CHECK: "tdag.attention_grad"
  %dqkv = "tdag.attention_grad"(%datt, %qkv, %att, %lse) {heads = 2 : i64} : (tensor<1x2x4xf32>, tensor<1x2x12xf32>, tensor<1x2x4xf32>, tensor<1x2x2xf32>) -> tensor<1x2x12xf32>
  // CHECK: "tdag.bias_grad"
  %dbq = "tdag.bias_grad"(%dqkv) : (tensor<1x2x12xf32>) -> tensor<12xf32>
  // CHECK: "tdag.layernorm_grad"
  %dx, %dw, %db = "tdag.layernorm_grad"(%dr, %x, %w, %mean, %rstd) : (tensor<1x2x4xf32>, tensor<1x2x4xf32>, tensor<4xf32>, tensor<1x2xf32>, tensor<1x2xf32>) -> (tensor<1x2x4xf32>, tensor<4xf32>, tensor<4xf32>)
  // CHECK: "tdag.embedding_grad"
  %dwte2, %dwpe = "tdag.embedding_grad"(%dx, %tok) : (tensor<1x2x4xf32>, tensor<1x2xi32>) -> (tensor<8x4xf32>, tensor<2x4xf32>)
  // CHECK: "tdag.adam_state"() {param = "wte.weight", slot = "exp_avg"}
  %m = "tdag.adam_state"() {param = "wte.weight", slot = "exp_avg"} : () -> tensor<8x4xf32>
  %v = "tdag.adam_state"() {param = "wte.weight", slot = "exp_avg_sq"} : () -> tensor<8x4xf32>
  // CHECK: "tdag.adamw"{{.*}}decay = 1 : i64
  "tdag.adamw"(%wte, %dwte, %m, %v) {beta1 = 0.9 : f64, beta2 = 0.95 : f64, eps = 1.0e-08 : f64, decay = 1 : i64} : (tensor<8x4xf32>, tensor<8x4xf32>, tensor<8x4xf32>, tensor<8x4xf32>) -> ()
  return
}

// The graph-level node: its ops are outlined into a function; values crossing it are operands
// and results.
func.func private @layer0_F(%a: tensor<2xf32>) -> tensor<2xf32> {
  %1 = "tdag.add"(%a, %a) : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  return %1 : tensor<2xf32>
}
// CHECK-LABEL: func.func @node
func.func @node(%a: tensor<2xf32>) -> tensor<2xf32> {
  // CHECK: "tdag.node"(%{{.*}}) {callee = @layer0_F, kind = "F", tags = {PP = 0 : i64}} : (tensor<2xf32>) -> tensor<2xf32>
  %0 = "tdag.node"(%a) {callee = @layer0_F, kind = "F", tags = {PP = 0 : i64}} : (tensor<2xf32>) -> tensor<2xf32>
  return %0 : tensor<2xf32>
}
