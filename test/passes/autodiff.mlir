// --piper-autodiff appends the backward graph and AdamW updates in the IR.
// RUN: piper-opt %s --split-input-file --piper-autodiff | FileCheck %s
// Idempotent: a second run changes nothing.
// RUN: piper-opt %s --split-input-file --piper-autodiff > %t.once
// RUN: piper-opt %s --split-input-file --piper-autodiff --piper-autodiff > %t.twice
// RUN: diff %t.once %t.twice

// A tied embedding/head: wte gets two gradient contributions that must be summed.
// CHECK-LABEL: func.func @tied
func.func @tied() {
  %tok = "tdag.input"() {name = "tokens"} : () -> tensor<1x2xi32>
  %tgt = "tdag.input"() {name = "targets"} : () -> tensor<1x2xi32>
  %wte = "tdag.param"() {init = "normal", name = "wte", tags = {embed = 0 : i64}} : () -> tensor<8x4xf32>
  %wpe = "tdag.param"() {init = "normal", name = "wpe", tags = {embed = 0 : i64}} : () -> tensor<2x4xf32>
  %w = "tdag.param"() {init = "normal", name = "fc.w", tags = {layer = 0 : i64}} : () -> tensor<4x4xf32>
  %b = "tdag.param"() {init = "zeros", name = "fc.b", tags = {layer = 0 : i64}} : () -> tensor<4xf32>
  %x = "tdag.embedding"(%tok, %wte, %wpe) {tags = {embed = 0 : i64}} : (tensor<1x2xi32>, tensor<8x4xf32>, tensor<2x4xf32>) -> tensor<1x2x4xf32>
  %h = "tdag.linear"(%x, %w, %b) {tags = {layer = 0 : i64}} : (tensor<1x2x4xf32>, tensor<4x4xf32>, tensor<4xf32>) -> tensor<1x2x4xf32>
  %logits = "tdag.matmul_nt"(%h, %wte) {tags = {head = 0 : i64}} : (tensor<1x2x4xf32>, tensor<8x4xf32>) -> tensor<1x2x8xf32>
  %loss, %p = "tdag.cross_entropy"(%logits, %tgt) {tags = {head = 0 : i64}} : (tensor<1x2x8xf32>, tensor<1x2xi32>) -> (tensor<f32>, tensor<1x2x8xf32>)
  "tdag.output"(%loss) {name = "loss"} : (tensor<f32>) -> ()
  // The seed, then the head in reverse, carrying the forward op's tags and pass = "B".
  // CHECK: %[[DLOGITS:.*]] = "tdag.cross_entropy_grad"(%{{.*}}, %{{.*}}) {pass = "B", tags = {head = 0 : i64}}
  // CHECK: %[[DH:.*]] = "tdag.linear_grad_input"(%[[DLOGITS]], %[[WTE:[^)]*]]) {pass = "B", tags = {head = 0 : i64}}
  // CHECK: %[[DWTE_HEAD:.*]] = "tdag.linear_grad_weight"(%[[DLOGITS]], %{{.*}}) {pass = "B", tags = {head = 0 : i64}}
  // The linear: input and weight gradients are separate ops (BI / BW), plus the bias.
  // CHECK: %[[DX:.*]] = "tdag.linear_grad_input"(%[[DH]], {{.*}}) {pass = "B", tags = {layer = 0 : i64}}
  // CHECK: %[[DW:.*]] = "tdag.linear_grad_weight"(%[[DH]], {{.*}}) {pass = "B", tags = {layer = 0 : i64}}
  // CHECK: %[[DB:.*]] = "tdag.bias_grad"(%[[DH]])
  // CHECK: %[[DWTE_EMB:.*]]:2 = "tdag.embedding_grad"(%[[DX]], %{{.*}}) {pass = "B", tags = {embed = 0 : i64}}
  // CHECK: %[[DWTE:.*]] = "tdag.add"(%[[DWTE_HEAD]], %[[DWTE_EMB]]#0) {pass = "B", tags = {embed = 0 : i64}}
  // One AdamW per parameter, in parameter order; decay only on 2-D tensors.
  // CHECK: "tdag.adam_state"() {param = "wte", pass = "UPD", slot = "exp_avg", tags = {embed = 0 : i64}}
  // CHECK: "tdag.adam_state"() {param = "wte", pass = "UPD", slot = "exp_avg_sq"
  // CHECK: "tdag.adamw"(%[[WTE]], %[[DWTE]], {{.*}}) {beta1 = 9.000000e-01 : f64, beta2 = 0.9{{.*}} : f64, decay = 1 : i64, eps = 1.000000e-08 : f64, pass = "UPD", tags = {embed = 0 : i64}}
  // CHECK: "tdag.adamw"({{.*}}, %[[DWTE_EMB]]#1, {{.*}}) {{.*}}decay = 1 : i64
  // CHECK: "tdag.adamw"({{.*}}, %[[DW]], {{.*}}) {{.*}}decay = 1 : i64
  // CHECK: "tdag.adamw"({{.*}}, %[[DB]], {{.*}}) {{.*}}decay = 0 : i64
  // CHECK-NEXT: return
  return
}

// -----

// Must not fire: a function that reports no loss (an inference graph) stays as it is.
// CHECK-LABEL: func.func @inference
// CHECK-NOT: _grad
// CHECK-NOT: tdag.adamw
// CHECK: return
func.func @inference(%x: tensor<2x4xf32>) -> tensor<2x4xf32> {
  %w = "tdag.param"() {init = "normal", name = "w"} : () -> tensor<4x4xf32>
  %b = "tdag.param"() {init = "zeros", name = "b"} : () -> tensor<4xf32>
  %y = "tdag.linear"(%x, %w, %b) : (tensor<2x4xf32>, tensor<4x4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
  return %y : tensor<2x4xf32>
}

// -----

// Must not fire for parameters that do not reach the loss: `unused` gets no update.
// CHECK-LABEL: func.func @unused_param
// CHECK-NOT: param = "unused"
// CHECK: "tdag.adamw"
// CHECK-NOT: "tdag.adamw"
// CHECK: return
func.func @unused_param(%x: tensor<2x4xf32>, %tgt: tensor<2xi32>) {
  %w = "tdag.param"() {init = "normal", name = "w"} : () -> tensor<8x4xf32>
  %u = "tdag.param"() {init = "normal", name = "unused"} : () -> tensor<8x4xf32>
  %logits = "tdag.matmul_nt"(%x, %w) : (tensor<2x4xf32>, tensor<8x4xf32>) -> tensor<2x8xf32>
  %loss, %p = "tdag.cross_entropy"(%logits, %tgt) : (tensor<2x8xf32>, tensor<2xi32>) -> (tensor<f32>, tensor<2x8xf32>)
  "tdag.output"(%loss) {name = "loss"} : (tensor<f32>) -> ()
  return
}
