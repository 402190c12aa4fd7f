// --piper-autodiff on the Qwen3 ops: each forward op gets its gradient op, wired to the right
// operands and saved results, with the forward op's tags and attributes; the tied embedding
// sums its two contributions; norm weights get no weight decay.
// RUN: piper-opt %s --piper-autodiff | FileCheck %s
// Idempotent: a second run changes nothing.
// RUN: piper-opt %s --piper-autodiff > %t.once
// RUN: piper-opt %s --piper-autodiff --piper-autodiff > %t.twice
// RUN: diff %t.once %t.twice

// CHECK-LABEL: func.func @qwen3_block
func.func @qwen3_block() {
  %tok = "tdag.input"() {name = "tokens"} : () -> tensor<1x2xi32>
  %tgt = "tdag.input"() {name = "targets"} : () -> tensor<1x2xi32>
  %wte = "tdag.param"() {init = "normal", name = "embed", tags = {embed = 0 : i64}} : () -> tensor<8x4xf32>
  %wn = "tdag.param"() {init = "ones", name = "norm", tags = {layer = 0 : i64}} : () -> tensor<2xf32>
  %wk = "tdag.param"() {init = "normal", name = "k", tags = {layer = 0 : i64}} : () -> tensor<2x4xf32>
  %wu = "tdag.param"() {init = "normal", name = "up", tags = {layer = 0 : i64}} : () -> tensor<4x4xf32>
  %x = "tdag.embed"(%tok, %wte) {tags = {embed = 0 : i64}} : (tensor<1x2xi32>, tensor<8x4xf32>) -> tensor<1x2x4xf32>
  %xn, %rstd = "tdag.rmsnorm"(%x, %wn) {eps = 1.0e-06 : f64, tags = {layer = 0 : i64}} : (tensor<1x2x4xf32>, tensor<2xf32>) -> (tensor<1x2x4xf32>, tensor<1x2x2xf32>)
  %q = "tdag.rope"(%xn) {head_dim = 2 : i64, theta = 1.0e+04 : f64, tags = {layer = 0 : i64}} : (tensor<1x2x4xf32>) -> tensor<1x2x4xf32>
  %k = "tdag.matmul_nt"(%x, %wk) {tags = {layer = 0 : i64}} : (tensor<1x2x4xf32>, tensor<2x4xf32>) -> tensor<1x2x2xf32>
  %att, %lse = "tdag.gqa_attention"(%q, %k, %k) {heads = 2 : i64, kv_heads = 1 : i64, tags = {layer = 0 : i64}} : (tensor<1x2x4xf32>, tensor<1x2x2xf32>, tensor<1x2x2xf32>) -> (tensor<1x2x4xf32>, tensor<1x2x2xf32>)
  %up = "tdag.matmul_nt"(%att, %wu) {tags = {layer = 0 : i64}} : (tensor<1x2x4xf32>, tensor<4x4xf32>) -> tensor<1x2x4xf32>
  %act = "tdag.swiglu"(%att, %up) {tags = {layer = 0 : i64}} : (tensor<1x2x4xf32>, tensor<1x2x4xf32>) -> tensor<1x2x4xf32>
  %logits = "tdag.matmul_nt"(%act, %wte) {tags = {head = 0 : i64}} : (tensor<1x2x4xf32>, tensor<8x4xf32>) -> tensor<1x2x8xf32>
  %loss, %p = "tdag.cross_entropy"(%logits, %tgt) {tags = {head = 0 : i64}} : (tensor<1x2x8xf32>, tensor<1x2xi32>) -> (tensor<f32>, tensor<1x2x8xf32>)
  "tdag.output"(%loss) {name = "loss"} : (tensor<f32>) -> ()
  // CHECK: %[[X:.*]] = "tdag.embed"
  // CHECK: %[[NORM:.*]]:2 = "tdag.rmsnorm"(%[[X]], %[[WN:[0-9a-z_]+]])
  // CHECK: %[[ATT:.*]]:2 = "tdag.gqa_attention"(%[[Q:[0-9a-z_]+]], %[[K:[0-9a-z_]+]], %[[K]])
  // CHECK: %[[UP:.*]] = "tdag.matmul_nt"(%[[ATT]]#0,
  // CHECK: %[[DACT:.*]] = "tdag.linear_grad_input"({{.*}}tags = {head = 0 : i64}
  // swiglu(gate, up) -> swiglu_grad(dy, gate, up): (dgate, dup)
  // CHECK: %[[DSW:.*]]:2 = "tdag.swiglu_grad"(%[[DACT]], %[[ATT]]#0, %[[UP]]) {pass = "B", tags = {layer = 0 : i64}}
  // CHECK: %[[DATT_UP:.*]] = "tdag.linear_grad_input"(%[[DSW]]#1,
  // The attention output feeds both the swiglu gate and up_proj: the two gradients are summed.
  // CHECK: %[[DATT:.*]] = "tdag.add"(%[[DSW]]#0, %[[DATT_UP]])
  // gqa_attention -> gqa_attention_grad(dy, q, k, v, out, lse) with heads and kv_heads.
  // CHECK: %[[DQKV:.*]]:3 = "tdag.gqa_attention_grad"(%[[DATT]], %[[Q]], %[[K]], %[[K]], %[[ATT]]#0, %[[ATT]]#1) {heads = 2 : i64, kv_heads = 1 : i64, pass = "B", tags = {layer = 0 : i64}}
  // k is both k and v: its gradient sums dk and dv.
  // CHECK: %[[DK:.*]] = "tdag.add"(%[[DQKV]]#1, %[[DQKV]]#2)
  // CHECK: "tdag.linear_grad_input"(%[[DK]],
  // rope -> rope_grad(dy) with the same head_dim and theta.
  // CHECK: %[[DXN:.*]] = "tdag.rope_grad"(%[[DQKV]]#0) {head_dim = 2 : i64, pass = "B", tags = {layer = 0 : i64}, theta = 1.000000e+04 : f64}
  // rmsnorm -> rmsnorm_grad(dy, x, w, rstd): (dx, dw).
  // CHECK: %[[DN:.*]]:2 = "tdag.rmsnorm_grad"(%[[DXN]], %[[X]], %[[WN]], %[[NORM]]#1) {pass = "B", tags = {layer = 0 : i64}} : (tensor<1x2x4xf32>, tensor<1x2x4xf32>, tensor<2xf32>, tensor<1x2x2xf32>) -> (tensor<1x2x4xf32>, tensor<2xf32>)
  // embed -> embed_grad(dy, tokens): dwte, summed with the tied head's weight gradient.
  // CHECK: %[[DEMB:.*]] = "tdag.embed_grad"(%{{.*}}, %{{.*}}) {pass = "B", tags = {embed = 0 : i64}} : (tensor<1x2x4xf32>, tensor<1x2xi32>) -> tensor<8x4xf32>
  // CHECK: %[[DWTE:.*]] = "tdag.add"(%{{.*}}, %[[DEMB]])
  // CHECK: "tdag.adamw"(%{{.*}}, %[[DWTE]], {{.*}}decay = 1 : i64
  // CHECK: "tdag.adamw"(%{{.*}}, %[[DN]]#1, {{.*}}decay = 0 : i64
  return
}
