// --piper-autodiff on tdag.relu, whose op-list entry names the shared gradient rule
// (gradElementwise) and .gradOp = relu_grad: relu(x) gets relu_grad(dy, x) with relu's tags,
// and its result is x's gradient (here fed on to the linear before it). No rule of autodiff.c
// names relu.
// RUN: piper-opt %s --piper-autodiff | FileCheck %s

// CHECK-LABEL: func.func @mlp
func.func @mlp() {
  %tok = "tdag.input"() {name = "tokens"} : () -> tensor<1x2xi32>
  %tgt = "tdag.input"() {name = "targets"} : () -> tensor<1x2xi32>
  %wte = "tdag.param"() {init = "normal", name = "embed"} : () -> tensor<8x4xf32>
  %w1 = "tdag.param"() {init = "normal", name = "fc1", tags = {layer = 0 : i64}} : () -> tensor<4x4xf32>
  %x = "tdag.embed"(%tok, %wte) : (tensor<1x2xi32>, tensor<8x4xf32>) -> tensor<1x2x4xf32>
  %h = "tdag.matmul_nt"(%x, %w1) {tags = {layer = 0 : i64}} : (tensor<1x2x4xf32>, tensor<4x4xf32>) -> tensor<1x2x4xf32>
  %a = "tdag.relu"(%h) {tags = {layer = 0 : i64}} : (tensor<1x2x4xf32>) -> tensor<1x2x4xf32>
  %logits = "tdag.matmul_nt"(%a, %wte) {tags = {head = 0 : i64}} : (tensor<1x2x4xf32>, tensor<8x4xf32>) -> tensor<1x2x8xf32>
  %loss, %p = "tdag.cross_entropy"(%logits, %tgt) : (tensor<1x2x8xf32>, tensor<1x2xi32>) -> (tensor<f32>, tensor<1x2x8xf32>)
  "tdag.output"(%loss) {name = "loss"} : (tensor<f32>) -> ()
  // CHECK: %[[H:.*]] = "tdag.matmul_nt"
  // CHECK: %[[A:.*]] = "tdag.relu"(%[[H]])
  // CHECK: %[[DA:.*]] = "tdag.linear_grad_input"({{.*}}tags = {head = 0 : i64}
  // CHECK-NEXT: "tdag.linear_grad_weight"
  // CHECK-NEXT: %[[DH:.*]] = "tdag.relu_grad"(%[[DA]], %[[H]]) {pass = "B", tags = {layer = 0 : i64}} : (tensor<1x2x4xf32>, tensor<1x2x4xf32>) -> tensor<1x2x4xf32>
  // CHECK-NEXT: "tdag.linear_grad_input"(%[[DH]], %{{.*}}) {pass = "B", tags = {layer = 0 : i64}}
  return
}
