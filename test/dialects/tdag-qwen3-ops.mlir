// Every Qwen3 tdag op (piper-gen qwen3) parses, verifies and round-trips, forward and backward
// (B=1 T=2 C=4 H=2 KV=1 D=2 F=6 V=8).
// RUN: piper-opt %s | piper-opt | FileCheck %s

// CHECK-LABEL: func.func @qwen3_ops
func.func @qwen3_ops() {
  %tok = "tdag.input"() {name = "tokens"} : () -> tensor<1x2xi32>
  %wte = "tdag.param"() {init = "normal", name = "model.embed_tokens.weight"} : () -> tensor<8x4xf32>
  %wn = "tdag.param"() {init = "ones", name = "model.layers.0.input_layernorm.weight"} : () -> tensor<4xf32>
  %wqn = "tdag.param"() {init = "ones", name = "model.layers.0.self_attn.q_norm.weight"} : () -> tensor<2xf32>
  %wq = "tdag.param"() {init = "normal", name = "model.layers.0.self_attn.q_proj.weight"} : () -> tensor<4x4xf32>
  %wk = "tdag.param"() {init = "normal", name = "model.layers.0.self_attn.k_proj.weight"} : () -> tensor<2x4xf32>
  // CHECK: "tdag.embed"(%{{.*}}, %{{.*}}) : (tensor<1x2xi32>, tensor<8x4xf32>) -> tensor<1x2x4xf32>
  %x = "tdag.embed"(%tok, %wte) : (tensor<1x2xi32>, tensor<8x4xf32>) -> tensor<1x2x4xf32>
  // A plain RMSNorm (D = C): one rstd per row.
  // CHECK: "tdag.rmsnorm"{{.*}}eps = 9.9999999999999995E-7 : f64{{.*}} -> (tensor<1x2x4xf32>, tensor<1x2x1xf32>)
  %h, %hr = "tdag.rmsnorm"(%x, %wn) {eps = 1.0e-06 : f64} : (tensor<1x2x4xf32>, tensor<4xf32>) -> (tensor<1x2x4xf32>, tensor<1x2x1xf32>)
  %q = "tdag.matmul_nt"(%h, %wq) : (tensor<1x2x4xf32>, tensor<4x4xf32>) -> tensor<1x2x4xf32>
  %k = "tdag.matmul_nt"(%h, %wk) : (tensor<1x2x4xf32>, tensor<2x4xf32>) -> tensor<1x2x2xf32>
  // Per head (D = 2 of H*D = 4): one rstd per head.
  // CHECK: "tdag.rmsnorm"{{.*}} -> (tensor<1x2x4xf32>, tensor<1x2x2xf32>)
  %qn, %qr = "tdag.rmsnorm"(%q, %wqn) {eps = 1.0e-06 : f64} : (tensor<1x2x4xf32>, tensor<2xf32>) -> (tensor<1x2x4xf32>, tensor<1x2x2xf32>)
  // CHECK: "tdag.rope"(%{{.*}}) {head_dim = 2 : i64, theta = 1.000000e+06 : f64}
  %qrot = "tdag.rope"(%qn) {head_dim = 2 : i64, theta = 1.0e+06 : f64} : (tensor<1x2x4xf32>) -> tensor<1x2x4xf32>
  // CHECK: "tdag.gqa_attention"(%{{.*}}, %{{.*}}, %{{.*}}) {heads = 2 : i64, kv_heads = 1 : i64} : (tensor<1x2x4xf32>, tensor<1x2x2xf32>, tensor<1x2x2xf32>) -> (tensor<1x2x4xf32>, tensor<1x2x2xf32>)
  %att, %lse = "tdag.gqa_attention"(%qrot, %k, %k) {heads = 2 : i64, kv_heads = 1 : i64} : (tensor<1x2x4xf32>, tensor<1x2x2xf32>, tensor<1x2x2xf32>) -> (tensor<1x2x4xf32>, tensor<1x2x2xf32>)
  %g = "tdag.param"() {init = "normal", name = "g"} : () -> tensor<1x2x6xf32>
  // CHECK: "tdag.swiglu"(%{{.*}}, %{{.*}}) : (tensor<1x2x6xf32>, tensor<1x2x6xf32>) -> tensor<1x2x6xf32>
  %act = "tdag.swiglu"(%g, %g) : (tensor<1x2x6xf32>, tensor<1x2x6xf32>) -> tensor<1x2x6xf32>
  // ---- backward ----
  // CHECK: "tdag.swiglu_grad"{{.*}} -> (tensor<1x2x6xf32>, tensor<1x2x6xf32>)
  %dg, %du = "tdag.swiglu_grad"(%act, %g, %g) : (tensor<1x2x6xf32>, tensor<1x2x6xf32>, tensor<1x2x6xf32>) -> (tensor<1x2x6xf32>, tensor<1x2x6xf32>)
  // CHECK: "tdag.gqa_attention_grad"{{.*}} {heads = 2 : i64, kv_heads = 1 : i64}{{.*}} -> (tensor<1x2x4xf32>, tensor<1x2x2xf32>, tensor<1x2x2xf32>)
  %dq, %dk, %dv = "tdag.gqa_attention_grad"(%att, %qrot, %k, %k, %att, %lse) {heads = 2 : i64, kv_heads = 1 : i64} : (tensor<1x2x4xf32>, tensor<1x2x4xf32>, tensor<1x2x2xf32>, tensor<1x2x2xf32>, tensor<1x2x4xf32>, tensor<1x2x2xf32>) -> (tensor<1x2x4xf32>, tensor<1x2x2xf32>, tensor<1x2x2xf32>)
  // CHECK: "tdag.rope_grad"(%{{.*}}) {head_dim = 2 : i64, theta = 1.000000e+06 : f64}
  %dqn = "tdag.rope_grad"(%dq) {head_dim = 2 : i64, theta = 1.0e+06 : f64} : (tensor<1x2x4xf32>) -> tensor<1x2x4xf32>
  // CHECK: "tdag.rmsnorm_grad"{{.*}} -> (tensor<1x2x4xf32>, tensor<2xf32>)
  %dqx, %dwqn = "tdag.rmsnorm_grad"(%dqn, %q, %wqn, %qr) : (tensor<1x2x4xf32>, tensor<1x2x4xf32>, tensor<2xf32>, tensor<1x2x2xf32>) -> (tensor<1x2x4xf32>, tensor<2xf32>)
  // CHECK: "tdag.embed_grad"{{.*}} : (tensor<1x2x4xf32>, tensor<1x2xi32>) -> tensor<8x4xf32>
  %dwte = "tdag.embed_grad"(%dqx, %tok) : (tensor<1x2x4xf32>, tensor<1x2xi32>) -> tensor<8x4xf32>
  return
}
