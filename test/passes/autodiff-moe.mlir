// --piper-autodiff on a MoE block: each MoE op gets its gradient ops, with the forward op's
// tags and geometry attributes; the router's top-k gradient reaches the gate weight.
// N=2 tokens, C=4, E=2 experts, K=1, Fe=3 (R = 2 rows).
// RUN: piper-opt %s --piper-autodiff | FileCheck %s

// CHECK-LABEL: func.func @moe
func.func @moe() {
  %tok = "tdag.input"() {name = "tokens"} : () -> tensor<1x2xi32>
  %tgt = "tdag.input"() {name = "targets"} : () -> tensor<1x2xi32>
  %wte = "tdag.param"() {init = "normal", name = "wte"} : () -> tensor<8x4xf32>
  %wpe = "tdag.param"() {init = "normal", name = "wpe"} : () -> tensor<2x4xf32>
  %gate = "tdag.param"() {init = "normal", name = "gate"} : () -> tensor<2x4xf32>
  %g0 = "tdag.param"() {init = "normal", name = "e0.gate"} : () -> tensor<3x4xf32>
  %g1 = "tdag.param"() {init = "normal", name = "e1.gate"} : () -> tensor<3x4xf32>
  %u0 = "tdag.param"() {init = "normal", name = "e0.up"} : () -> tensor<3x4xf32>
  %u1 = "tdag.param"() {init = "normal", name = "e1.up"} : () -> tensor<3x4xf32>
  %d0 = "tdag.param"() {init = "normal", name = "e0.down"} : () -> tensor<4x3xf32>
  %d1 = "tdag.param"() {init = "normal", name = "e1.down"} : () -> tensor<4x3xf32>
  %x = "tdag.embedding"(%tok, %wte, %wpe) : (tensor<1x2xi32>, tensor<8x4xf32>, tensor<2x4xf32>) -> tensor<1x2x4xf32>
  %l = "tdag.matmul_nt"(%x, %gate) {tags = {layer = 0 : i64}} : (tensor<1x2x4xf32>, tensor<2x4xf32>) -> tensor<1x2x2xf32>
  %w, %ex = "tdag.moe_topk"(%l) {top_k = 1 : i64, tags = {layer = 0 : i64}} : (tensor<1x2x2xf32>) -> (tensor<1x2x1xf32>, tensor<1x2x1xi32>)
  %rows, %counts = "tdag.moe_dispatch"(%x, %ex) {num_experts = 2 : i64, tags = {EP = 0 : i64, layer = 0 : i64}} : (tensor<1x2x4xf32>, tensor<1x2x1xi32>) -> (tensor<2x4xf32>, tensor<2xi32>)
  %out, %hid = "tdag.moe_experts"(%rows, %counts, %g0, %g1, %u0, %u1, %d0, %d1) {operandSegmentSizes = array<i32: 1, 1, 2, 2, 2>, tags = {EP = 0 : i64, layer = 0 : i64}} : (tensor<2x4xf32>, tensor<2xi32>, tensor<3x4xf32>, tensor<3x4xf32>, tensor<3x4xf32>, tensor<3x4xf32>, tensor<4x3xf32>, tensor<4x3xf32>) -> (tensor<2x4xf32>, tensor<2x6xf32>)
  %y = "tdag.moe_combine"(%out, %w, %ex) {num_experts = 2 : i64, tags = {layer = 0 : i64}} : (tensor<2x4xf32>, tensor<1x2x1xf32>, tensor<1x2x1xi32>) -> tensor<1x2x4xf32>
  %logits = "tdag.matmul_nt"(%y, %wte) : (tensor<1x2x4xf32>, tensor<8x4xf32>) -> tensor<1x2x8xf32>
  %loss, %p = "tdag.cross_entropy"(%logits, %tgt) : (tensor<1x2x8xf32>, tensor<1x2xi32>) -> (tensor<f32>, tensor<1x2x8xf32>)
  "tdag.output"(%loss) {name = "loss"} : (tensor<f32>) -> ()
  // CHECK: %[[DY:.*]] = "tdag.linear_grad_input"
  // CHECK: %[[CG:.*]]:2 = "tdag.moe_combine_grad"(%[[DY]], %[[OUT:.*]]#0, %[[W:.*]]#0, %[[W]]#1) {num_experts = 2 : i64, pass = "B", tags = {layer = 0 : i64}} : {{.*}} -> (tensor<2x4xf32>, tensor<1x2x1xf32>)
  // CHECK: %[[DR:.*]] = "tdag.moe_experts_grad_input"(%[[CG]]#0, %[[D:.*]]#1, %[[OUT]]#1, {{.*}}) {operandSegmentSizes = array<i32: 1, 1, 1, 2, 2, 2>, pass = "B", tags = {EP = 0 : i64, layer = 0 : i64}}
  // One weight-gradient op per expert, reading its down weight:
  // CHECK: %[[W0:.*]]:3 = "tdag.moe_experts_grad_weight"(%[[CG]]#0, %[[D]]#0, %[[D]]#1, %[[OUT]]#1, %[[D0:[^)]*]]) {expert = 0 : i64, pass = "B", tags = {EP = 0 : i64, layer = 0 : i64}}
  // CHECK: %[[W1:.*]]:3 = "tdag.moe_experts_grad_weight"(%[[CG]]#0, %[[D]]#0, %[[D]]#1, %[[OUT]]#1, %[[D1:[^)]*]]) {expert = 1 : i64
  // CHECK: %[[DX:.*]] = "tdag.moe_dispatch_grad"(%[[DR]], %[[W]]#1) {num_experts = 2 : i64, pass = "B", tags = {EP = 0 : i64, layer = 0 : i64}} : {{.*}} -> tensor<1x2x4xf32>
  // CHECK: %[[DL:.*]] = "tdag.moe_topk_grad"(%[[CG]]#1, %[[W]]#0, %[[W]]#1) {pass = "B", tags = {layer = 0 : i64}} : {{.*}} -> tensor<1x2x2xf32>
  // CHECK: "tdag.linear_grad_weight"(%[[DL]]
  // Expert weights are updated with their own gradients:
  // CHECK: "tdag.adamw"(%{{.*}}, %[[W0]]#0,
  // CHECK: "tdag.adamw"(%{{.*}}, %[[W1]]#0,
  // CHECK: "tdag.adamw"(%{{.*}}, %[[W0]]#1,
  // CHECK: "tdag.adamw"(%{{.*}}, %[[W1]]#1,
  // CHECK: "tdag.adamw"(%[[D0]], %[[W0]]#2,
  // CHECK: "tdag.adamw"(%[[D1]], %[[W1]]#2,
  return
}
